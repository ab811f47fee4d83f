import FoundationEssentials
import KeywellSSHWire
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// One connection to keywelld's agent socket: a request frame out, its reply frame in.
struct AgentSocketClient: ~Copyable {
    private let descriptor: FileDescriptor

    init(path: String) throws(SSHAddError) {
        do {
            descriptor = try FileDescriptor.connectUnixSocket(path)
        } catch {
            switch error {
            case .pathTooLong: throw SSHAddError("the agent socket's path is too long")
            case .noSocket(let reason): throw SSHAddError("socket: \(reason)")
            case .notConnected(_, let reason):
                throw SSHAddError("cannot reach keywelld's agent at \(path): \(reason) (is keywelld running?)")
            }
        }
        try? descriptor.setTimeouts(receiveSeconds: 330, sendSeconds: nil)
    }

    deinit { try? descriptor.close() }

    /// Sends `body` as one frame and returns the reply's body.
    func request(_ body: [UInt8]) throws(SSHAddError) -> [UInt8] {
        var frame = SSHWireWriter()
        frame.string(body)
        // The frame holds a private key: wiped once sent.
        var bytes = frame.bytes
        frame = SSHWireWriter()
        defer { bytes.withUnsafeMutableBytes { SecretMemory.wipe($0) } }
        do { try descriptor.sendAll(bytes) } catch { throw SSHAddError("keywelld's agent closed the connection") }
        let header = try receive(4)
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard length <= AgentLimits.maximumFrame else { throw SSHAddError("keywelld's agent sent an oversized reply") }
        return try receive(length)
    }

    private func receive(_ count: Int) throws(SSHAddError) -> [UInt8] {
        guard let bytes = try? descriptor.read(exactly: count) else { throw SSHAddError("keywelld's agent closed the connection") }
        return bytes
    }
}

/// Why `keywell ssh-add` could not import a file.
struct SSHAddError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
