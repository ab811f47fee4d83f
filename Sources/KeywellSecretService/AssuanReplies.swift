import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSystem

/// The reply side of the Assuan conversation with a pinentry (docs/prompts.md), read from its
/// stdout: lines, and what the replies to GETPIN and CONFIRM come to. Whatever program is named
/// as the prompter writes these bytes, so every line and the PIN have a cap. Apart from the
/// process, and needing only KeywellCore, so that a fuzz target reads replies from a pipe.
struct AssuanReplies {
    /// Assuan's longest line (libassuan's ASSUAN_LINELENGTH), the newline not counted: a pinentry
    /// sending more without one is not speaking Assuan, and must not make us buffer without end.
    static let maximumLineLength = 1002
    /// The longest password a dialog may hand back: the longest secret an item holds.
    static let maximumPIN = ServiceLimits.bytesPerSecret

    let fd: FileDescriptor
    private var buffered: [UInt8] = []

    init(fd: FileDescriptor) { self.fd = fd }

    enum PIN {
        case entered(SecretBytes)
        /// ERR with its code (nil when there is none): the person cancelled, or the dialog timed out.
        case cancelled(code: Int?)
        /// End of file, a read error, an overlong line or PIN: the conversation is over.
        case ended
    }

    enum Confirmation: Equatable {
        case confirmed
        /// ERR with its code (nil when there is none) and the whole line.
        case refused(code: Int?, line: String)
    }

    /// The next line without its newline, or nil when the pipe ends or the line is over the cap.
    /// The caller wipes it (it may hold the password).
    mutating func nextLine() -> [UInt8]? {
        var searched = 0
        while true {
            if let newline = buffered[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                guard newline <= Self.maximumLineLength else { return nil }
                let line = Array(buffered[..<newline])
                buffered.withUnsafeMutableBytes { wipe(UnsafeMutableRawBufferPointer(rebasing: $0[...newline])) }
                buffered.removeSubrange(...newline)
                return line
            }
            searched = buffered.count
            guard buffered.count <= Self.maximumLineLength else { return nil }
            var chunk = [UInt8](repeating: 0, count: 1024)
            defer { chunk.withUnsafeMutableBytes { wipe($0) } }
            // A read error ends the conversation as the end of the pipe does.
            guard let count = chunk.withUnsafeMutableBytes({ try? fd.read(into: $0) }), count > 0 else { return nil }
            buffered += chunk[..<count]
        }
    }

    mutating func readLine() -> String? {
        guard var line = nextLine() else { return nil }
        defer { line.withUnsafeMutableBytes { wipe($0) } }
        return String(decoding: line, as: UTF8.self)
    }

    /// The replies to GETPIN: `D` lines (the PIN, %-escaped) until OK; ERR is a cancel; an
    /// INQUIRE is answered by `cancelInquiry` (false: the pipe is gone). "S" status and "#"
    /// comment lines carry nothing needed.
    mutating func pin(cancelInquiry: () -> Bool) -> PIN {
        var pin: [UInt8] = []
        defer { pin.withUnsafeMutableBytes { wipe($0) } }
        while var line = nextLine() {
            defer { line.withUnsafeMutableBytes { wipe($0) } }
            if line.starts(with: Array("D ".utf8)) {
                var piece = Self.unescape(line.dropFirst(2))
                defer { piece.withUnsafeMutableBytes { wipe($0) } }
                guard pin.count + piece.count <= Self.maximumPIN else { return .ended }
                pin += piece
            } else if Self.isOK(line) {
                return .entered(SecretBytes(copying: pin))
            } else if line.starts(with: Array("ERR".utf8)) {
                return .cancelled(code: Self.errorCode(line))
            } else if line.starts(with: Array("INQUIRE".utf8)) {
                guard cancelInquiry() else { return .ended }
            }
        }
        return .ended
    }

    /// The number after `ERR` (nil when there is none).
    static func errorCode(_ line: [UInt8]) -> Int? {
        String(decoding: line, as: UTF8.self).split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    /// The replies to CONFIRM up to its OK or ERR; nil when the conversation ended first.
    mutating func confirmation(cancelInquiry: () -> Bool) -> Confirmation? {
        while let line = nextLine() {
            if Self.isOK(line) { return .confirmed }
            if line.starts(with: Array("ERR".utf8)) {
                return .refused(code: Self.errorCode(line), line: String(decoding: line, as: UTF8.self))
            }
            if line.starts(with: Array("INQUIRE".utf8)) { guard cancelInquiry() else { return nil } }
        }
        return nil
    }

    private static func isOK(_ line: [UInt8]) -> Bool { line == Array("OK".utf8) || line.starts(with: Array("OK ".utf8)) }

    /// Assuan lines may not hold %, CR or LF: they travel as %XX.
    static func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "%": escaped += "%25"
            case "\n": escaped += "%0A"
            case "\r": escaped += "%0D"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    static func unescape(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var result: [UInt8] = []
        var iterator = Array(bytes)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), iterator.count >= 2,
               let value = UInt8(String(decoding: iterator.prefix(2), as: UTF8.self), radix: 16) {
                result.append(value)
                iterator = iterator.dropFirst(2)
            } else {
                result.append(byte)
            }
        }
        return result
    }
}

/// Clears bytes that held (part of) a password before they are freed.
private func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
    SecretMemory.wipe(bytes)
}
