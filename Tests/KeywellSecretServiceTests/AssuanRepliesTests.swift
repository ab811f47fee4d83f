import Foundation
import KeywellProtocol
import KeywellSystem
import Testing

@testable import KeywellCore
@testable import KeywellSecretService

/// Reading a pinentry's replies (AssuanReplies, docs/prompts.md) from a real file descriptor: a
/// hostile or broken prompter cannot make keywelld buffer without end, and the PIN is exactly what
/// its `D` lines spell.
@Suite struct AssuanRepliesTests {
    /// The bytes in an unlinked temporary file, read from its start (any length: a pipe would need a writer).
    private func withReplies<Result>(_ bytes: [UInt8], _ body: (inout AssuanReplies) -> Result) throws -> Result {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("keywell-assuan-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        unlink(String(cString: template))
        defer { close(fd) }
        #expect(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count)
        lseek(fd, 0, SEEK_SET)
        var replies = AssuanReplies(fd: FileDescriptor(rawValue: fd))
        return body(&replies)
    }

    private func pin(_ text: String, inquiries: inout Int) throws -> String? {
        let outcome = try withReplies(Array(text.utf8)) { $0.pin(cancelInquiry: { inquiries += 1; return true }) }
        switch outcome {
        case .entered(let pin): return pin.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        case .cancelled(let code): return "<cancelled \(code.map(String.init) ?? "-")>"
        case .ended: return nil
        }
    }

    @Test func thePINIsWhatItsDataLinesSpell() throws {
        var inquiries = 0
        #expect(try pin("S PASSWORD_FROM_CACHE\n# note\nINQUIRE QUALITY\nD pass%25wo\nD rd%0A\nOK\n", inquiries: &inquiries) == "pass%word\n")
        #expect(inquiries == 1)
        #expect(try pin("ERR 83886179 Operation cancelled\n", inquiries: &inquiries) == "<cancelled 83886179>")
        #expect(try pin("ERR 83886142 Timeout\n", inquiries: &inquiries) == "<cancelled 83886142>")
        #expect(try pin("ERR\n", inquiries: &inquiries) == "<cancelled ->")
        #expect(try pin("D unfinished\n", inquiries: &inquiries) == nil)
    }

    /// Before the cap, a prompter writing without a newline grew keywelld's buffer for as long as
    /// it wrote; now the conversation ends at Assuan's line length.
    @Test func anOverlongLineEndsTheConversation() throws {
        var inquiries = 0
        let longest = String(repeating: "x", count: AssuanReplies.maximumLineLength - 2)
        #expect(try pin("D \(longest)\nOK\n", inquiries: &inquiries) == longest)
        #expect(try pin("D \(longest)x\nOK\n", inquiries: &inquiries) == nil)
        #expect(try pin("D " + String(repeating: "y", count: 1 << 20), inquiries: &inquiries) == nil)
        let line = try withReplies(Array(String(repeating: "z", count: 100_000).utf8) + [0x0A]) { $0.readLine() }
        #expect(line == nil)
    }

    /// Data lines add up only to the longest secret an item holds.
    @Test func aPINOverTheSecretCapEndsTheConversation() throws {
        var inquiries = 0
        let piece = String(repeating: "p", count: 1000)
        let lines = AssuanReplies.maximumPIN / 1000 + 1
        #expect(try pin(String(repeating: "D \(piece)\n", count: lines) + "OK\n", inquiries: &inquiries) == nil)
        #expect(try pin(String(repeating: "D \(piece)\n", count: lines - 2) + "OK\n", inquiries: &inquiries)?.utf8.count == (lines - 2) * 1000)
    }

    @Test func confirmationsReadOKAndErrorCodes() throws {
        #expect(try withReplies(Array("S x\nOK\n".utf8)) { $0.confirmation(cancelInquiry: { true }) } == .confirmed)
        #expect(try withReplies(Array("ERR 83886194 Not confirmed <Pinentry>\n".utf8)) { $0.confirmation(cancelInquiry: { true }) }
            == .refused(code: 83_886_194, line: "ERR 83886194 Not confirmed <Pinentry>"))
        #expect(try withReplies(Array("INQUIRE X\n".utf8)) { $0.confirmation(cancelInquiry: { false }) } == nil)
    }
}
