import FoundationEssentials
import KeywellSSHWire
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// One connection to keywelld's agent socket: a request frame out, its reply frame in.
struct AgentSocketClient: ~Copyable {
    private let descriptor: Int32

    init(path: String) throws(SSHAddError) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SSHAddError("socket: \(Errno.current.description)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw SSHAddError("the agent socket's path is too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let reason = Errno.current.description
            close(fd)
            throw SSHAddError("cannot reach keywelld's agent at \(path): \(reason) (is keywelld running?)")
        }
        var timeout = timeval(tv_sec: 330, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Sends `body` as one frame and returns the reply's body.
    func request(_ body: [UInt8]) throws(SSHAddError) -> [UInt8] {
        var frame = SSHWireWriter()
        frame.string(body)
        // The frame holds a private key: wiped once sent.
        var bytes = frame.bytes
        frame = SSHWireWriter()
        defer { bytes.withUnsafeMutableBytes { SecretMemory.wipe($0) } }
        var sent = 0
        while sent < bytes.count {
            let count = retryingOnInterrupt { bytes.withUnsafeBytes { send(descriptor, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) } }
            guard count > 0 else { throw SSHAddError("keywelld's agent closed the connection") }
            sent += count
        }
        let header = try receive(4)
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard length <= AgentLimits.maximumFrame else { throw SSHAddError("keywelld's agent sent an oversized reply") }
        return try receive(length)
    }

    private func receive(_ count: Int) throws(SSHAddError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = retryingOnInterrupt { bytes.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress! + done, count - done, 0) } }
            guard got > 0 else { throw SSHAddError("keywelld's agent closed the connection") }
            done += got
        }
        return bytes
    }
}

/// Why `keywell ssh-add` could not import a file.
struct SSHAddError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
