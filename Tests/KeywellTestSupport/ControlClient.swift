import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A client of keywelld's control socket (docs/control-protocol.md), talking as pam_keywell.so
/// does: one request per connection, the answer read until the daemon closes it.
public enum ControlClient {
    public struct Answer {
        /// The OSStatus the daemon answered.
        public var status: Int32
        public var message: String
    }

    /// Sends request `op` with `fields` on the control socket at `path`; returns the answer.
    public static func send(socket path: String, op: Character, fields: [[UInt8]] = []) throws -> Answer {
        var request = Array("KWC1".utf8) + [UInt8(ascii: op.unicodeScalars.first!), UInt8(fields.count)]
        for field in fields {
            let length = UInt32(field.count)
            request += [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + field
        }
        return try exchange(socket: path, bytes: request)
    }

    /// A connected socket to `path` with a 10 s receive timeout; the caller closes it.
    public static func connect(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8) + [0])
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw TestSupportError("connect \(path): \(String(cString: strerror(errno)))")
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Sends `bytes` as they are (well formed or not) on a new connection to `path`, and reads the answer.
    public static func exchange(socket path: String, bytes: [UInt8]) throws -> Answer {
        let fd = try connect(path)
        defer { close(fd) }
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let got = recv(fd, &buffer, buffer.count, 0)
            if got <= 0 { break }
            answer += buffer[..<got]
        }
        guard answer.count >= 12, Array(answer[0..<4]) == Array("KWC1".utf8) else {
            throw TestSupportError("bad answer \(answer)")
        }
        let word = { (offset: Int) in answer[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        let length = Int(word(8))
        return Answer(status: Int32(bitPattern: word(4)), message: String(decoding: answer[12..<min(answer.count, 12 + length)], as: UTF8.self))
    }
}
