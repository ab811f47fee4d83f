#if canImport(Glibc)
import Glibc
#endif

/// What git sends a credential helper: `key=value` lines up to a blank line or the end of
/// input (gitcredentials(7), "CUSTOM HELPERS"). Keys ending in `[]` may repeat; other keys keep
/// their last value.
struct CredentialRequest {
    var values: [String: String] = [:]

    var protocolName: String? { values["protocol"] }
    var username: String? { values["username"] }
    var password: String? { values["password"] }
    var path: String? { values["path"] }

    /// The host without a port; IPv6 literals keep their brackets, as git writes them.
    var host: String? { values["host"].map { Self.splitHost($0).host } }
    var port: UInt16? { values["host"].flatMap { Self.splitHost($0).port } }

    init(values: [String: String]) { self.values = values }

    /// Reads from standard input, one byte at a time so nothing past the blank line is taken.
    static func read(fd: Int32 = 0) -> CredentialRequest {
        var values: [String: String] = [:]
        while let line = readLine(fd: fd), !line.isEmpty {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals])
            let value = String(line[line.index(after: equals)...])
            if key.hasSuffix("[]") {
                values[key] = (values[key].map { $0 + "\n" } ?? "") + value
            } else {
                values[key] = value
            }
        }
        return CredentialRequest(values: values)
    }

    private static func readLine(fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        var sawAnything = false
        while true {
            let count = Glibc.read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            sawAnything = true
            if byte == UInt8(ascii: "\n") { break }
            bytes.append(byte)
        }
        guard sawAnything else { return nil }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        defer { bytes.withUnsafeMutableBytes { Memory.wipe($0) } }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func splitHost(_ text: String) -> (host: String, port: UInt16?) {
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let host = String(text[...close])
            let rest = text[text.index(after: close)...]
            if rest.hasPrefix(":"), let port = UInt16(rest.dropFirst()) { return (host, port) }
            return (host, nil)
        }
        if let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon,
           let port = UInt16(text[text.index(after: colon)...]) {
            return (String(text[..<colon]), port)
        }
        return (text, nil)
    }
}
