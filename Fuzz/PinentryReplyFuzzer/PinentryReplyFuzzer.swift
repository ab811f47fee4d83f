import Glibc
import KeywellCore
import KeywellSystem

/// What a pinentry writes back (docs/prompts.md): any program named as the prompter speaks to
/// keywelld over a pipe. The first byte picks: 0 the replies to GETPIN, 1 the replies to CONFIRM,
/// 2 Assuan's %-escaping. The rest goes through a real pipe to `AssuanReplies`, read as keywelld
/// reads a pinentry's stdout. AssuanReplies.swift here is a link to keywelld's own source file
/// (Sources/KeywellSecretService), compiled into this target so that it needs only KeywellCore.
///
/// GETPIN's replies give the PIN the `D` lines before the first OK spell (within the line and PIN
/// caps), a cancel for an ERR first, the end for anything else; every INQUIRE before that is
/// answered with CAN. CONFIRM's give a confirmation for OK, a refusal for ERR. Escaping then
/// unescaping gives the text back, and an escaped line holds no line break.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    // A pipe holds 64 KiB: all of it is written before anything is read.
    guard size >= 1, size <= 60_000 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 3 {
    case 0:
        var inquiries = 0
        let outcome = withReplies(input) { $0.pin(cancelInquiry: { inquiries += 1; return true }) }
        let expected = model(input)
        switch (outcome, expected.outcome) {
        case (.entered(let pin), .entered(let bytes)):
            guard pin.withUnsafeBytes({ Array($0) }) == bytes else { fatalError("the PIN differs from its D lines") }
            guard pin.count <= AssuanReplies.maximumPIN else { fatalError("a PIN over the cap") }
        case (.cancelled, .cancelled), (.ended, .ended): break
        default: fatalError("GETPIN's replies read as \(outcome), not \(expected.outcome)")
        }
        guard inquiries == expected.inquiries else { fatalError("\(inquiries) inquiries answered, \(expected.inquiries) made") }
    case 1:
        let reply = withReplies(input) { $0.confirmation(cancelInquiry: { true }) }
        let terminal = model(input).terminal
        switch (reply, terminal) {
        case (nil, nil), (.confirmed?, "OK"?), (.refused?, "ERR"?): break
        default: fatalError("CONFIRM's replies read as \(String(describing: reply)) after \(String(describing: terminal))")
        }
    default:
        let text = String(decoding: input, as: UTF8.self)
        let escaped = AssuanReplies.escape(text)
        guard !escaped.contains("\n"), !escaped.contains("\r") else { fatalError("an escaped line holds a line break") }
        guard AssuanReplies.unescape(Array(escaped.utf8)) == Array(text.utf8) else { fatalError("escaping does not round-trip") }
    }
    return 0
}

/// `input` through a pipe, read by `body`.
func withReplies<Result>(_ input: [UInt8], _ body: (inout AssuanReplies) -> Result) -> Result {
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { fatalError("pipe: \(errno)") }
    let written = input.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }
    guard written == input.count else { fatalError("short write to the pipe") }
    close(ends[1])
    var replies = AssuanReplies(fd: FileDescriptor(rawValue: ends[0]))
    defer { close(ends[0]) }
    return body(&replies)
}

enum Expected: CustomStringConvertible {
    case entered([UInt8])
    case cancelled
    case ended

    var description: String {
        switch self {
        case .entered(let pin): "entered \(pin.count) bytes"
        case .cancelled: "cancelled"
        case .ended: "ended"
        }
    }
}

/// The reference: the whole input split into lines at once (no reading in chunks).
func model(_ input: [UInt8]) -> (outcome: Expected, inquiries: Int, terminal: String?) {
    var lines = input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    lines.removeLast()  // after the last newline: a line never finished
    var pin: [UInt8] = []
    var inquiries = 0
    for line in lines {
        guard line.count <= AssuanReplies.maximumLineLength else { return (.ended, inquiries, nil) }
        if line.starts(with: Array("D ".utf8)) {
            pin += AssuanReplies.unescape(line.dropFirst(2))
            if pin.count > AssuanReplies.maximumPIN { return (.ended, inquiries, nil) }
        } else if Array(line) == Array("OK".utf8) || line.starts(with: Array("OK ".utf8)) {
            return (.entered(pin), inquiries, "OK")
        } else if line.starts(with: Array("ERR".utf8)) {
            return (.cancelled, inquiries, "ERR")
        } else if line.starts(with: Array("INQUIRE".utf8)) {
            inquiries += 1
        }
    }
    return (.ended, inquiries, nil)
}
