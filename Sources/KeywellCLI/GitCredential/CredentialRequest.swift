import KeywellSystem
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

    /// The most a request may hold, blank line included (docs/cli.md, "git"). git's own requests
    /// are a few short lines (a URL's parts, a user, a password, some `wwwauth[]`); a bigger one
    /// is refused rather than read without end.
    static let maxBytes = 64 * 1024

    /// Reads from standard input up to the blank line; nil when the request runs past `maxBytes`.
    /// With `ownsInput` (git started the helper: the pipe holds the request and nothing after
    /// it) in blocks; otherwise one byte at a time, so that nothing past the blank line is taken
    /// from whatever reads the input next.
    static func read(
        fd: FileDescriptor = FileDescriptor(rawValue: STDIN_FILENO), ownsInput: Bool = false
    ) -> CredentialRequest? {
        var values: [String: String] = [:]
        var reader = LineReader(fd: fd, blockSize: ownsInput ? 4096 : 1, limit: maxBytes)
        defer { reader.wipe() }
        while let line = reader.next(), !line.isEmpty {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals])
            let value = String(line[line.index(after: equals)...])
            if key.hasSuffix("[]") {
                values[key] = (values[key].map { $0 + "\n" } ?? "") + value
            } else {
                values[key] = value
            }
        }
        guard !reader.overLimit else { return nil }
        return CredentialRequest(values: values)
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

/// Lines of a descriptor, read `blockSize` bytes at a time (1: never past the line's end). What
/// was read is wiped: a request may hold a password.
private struct LineReader {
    let fd: FileDescriptor
    private var buffer: [UInt8] = []
    /// Where each read lands before it joins `buffer`; allocated once.
    private var block: [UInt8]
    private var start = 0
    /// Where the search for the next newline goes on from.
    private var searched = 0
    private var atEnd = false
    /// The most bytes read in all; past it the input ends here and `overLimit` says so.
    private let limit: Int
    private(set) var overLimit = false

    init(fd: FileDescriptor, blockSize: Int, limit: Int) {
        self.fd = fd
        self.limit = limit
        block = [UInt8](repeating: 0, count: max(1, blockSize))
        // Room for the whole request up front: a grown buffer would leave an unwiped copy behind.
        buffer.reserveCapacity(limit + block.count)
    }

    /// The next line without its newline (and a carriage return before it); nil at the end.
    mutating func next() -> String? {
        while true {
            // Only the bytes not looked at yet: a long line read byte by byte stays linear.
            if let newline = buffer[max(start, searched)...].firstIndex(of: UInt8(ascii: "\n")) {
                defer { start = newline + 1 }
                return line(buffer[start..<newline])
            }
            searched = buffer.count
            if atEnd {
                guard start < buffer.count else { return nil }
                defer { start = buffer.count }
                return line(buffer[start...])
            }
            fill()
        }
    }

    private func line(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.last == UInt8(ascii: "\r") ? bytes.dropLast() : bytes, as: UTF8.self)
    }

    /// One read; a failed read ends the input like the end of the file does.
    private mutating func fill() {
        let count = block.withUnsafeMutableBytes { bytes in (try? fd.read(into: bytes)) ?? 0 }
        if count == 0 { atEnd = true; return }
        guard buffer.count + count <= limit else {
            overLimit = true
            atEnd = true
            return
        }
        buffer.append(contentsOf: block[..<count])
    }

    mutating func wipe() {
        buffer.withUnsafeMutableBytes { SecretMemory.wipe($0) }
        block.withUnsafeMutableBytes { SecretMemory.wipe($0) }
    }
}
