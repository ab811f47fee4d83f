import Glibc
import KeywellSystem
import Testing

@testable import KeywellCLI

/// The CLI's parsers of outside input, called in-process through the KeywellCLI library (the
/// command tests run the real executable; these need no daemon and check many inputs cheaply).
@Suite struct ParserTests {
    @Test func atoiAnswersAsGlibcDoes() {
        let inputs = ["0", "42", "  7", "\t-13", "+5", "12abc", "abc", "", "-", "+", " +-3", "2147483647", "2147483648",
                      "-2147483649", "99999999999999999999", "-99999999999999999999", "0x10", "007", "\n\u{0B}8"]
        for input in inputs {
            #expect(KeywellCLI.atoi(input) == input.withCString { Glibc.atoi($0) }, "atoi(\(input.debugDescription))")
        }
    }

    @Test func getoptClustersOptionsAndTakesTheNextWordAsAValue() throws {
        let parser = GetoptParser(optionString: "lut:", longFlags: [])
        let result = try parser.parse(["set-keychain-settings", "-lut", "7200", "work"])
        #expect(result.options.map(\.letter) == ["l", "u", "t"])
        #expect(result.value("t") == "7200")
        #expect(result.operands == ["work"])
        // A value may start with `-`; `--` ends the options.
        let dashed = try parser.parse(["x", "-t", "-u", "--", "-l"])
        #expect(dashed.value("t") == "-u")
        #expect(!dashed.has("l"))
        #expect(dashed.operands == ["-l"])
    }

    @Test func getoptRecordsWhereAValueSitsSoThatItCanBeScrubbed() throws {
        let parser = GetoptParser(optionString: "a:w:", longFlags: [])
        let words = ["add-generic-password", "-a", "alice", "-wsecret"]
        let result = try parser.parse(words, firstWordIndex: 1)
        let password = try #require(result.option("w")?.valueLocation)
        #expect(password.word == 4 && password.offset == 2)
        let account = try #require(result.option("a")?.valueLocation)
        #expect(account.word == 3 && account.offset == 0)
    }

    @Test func getoptRefusesUnknownOptionsAndMissingValues() {
        let parser = GetoptParser(optionString: "a:", longFlags: [])
        #expect(throws: GetoptParser.Failure.unknownOption("-z")) { try parser.parse(["x", "-z"]) }
        #expect(throws: GetoptParser.Failure.missingValue("a")) { try parser.parse(["x", "-a"]) }
    }

    @Test func fourCharacterCodesAreFourBytes() {
        #expect((try? FourCharCode.parse("aapl").get()) == "aapl")
        guard case .failure(let short) = FourCharCode.parse("abc") else { Issue.record("3 bytes accepted"); return }
        #expect(short.lines == ["Error: four-character types must be exactly 4 characters long.", "(Try \"abc \" instead of \"abc\")"])
        // Bytes, not characters: "é" is two of them.
        #expect((try? FourCharCode.parse("éab").get()) == "éab")
        guard case .failure = FourCharCode.parse("ééab") else { Issue.record("6 bytes accepted"); return }
    }

    @Test func credentialHostsSplitOffAPortOnlyWhenThereIsOne() {
        #expect(CredentialRequest.splitHost("example.org:8443") == ("example.org", 8443))
        #expect(CredentialRequest.splitHost("example.org") == ("example.org", nil))
        #expect(CredentialRequest.splitHost("[::1]:22") == ("[::1]", 22))
        #expect(CredentialRequest.splitHost("fe80::1") == ("fe80::1", nil))
        #expect(CredentialRequest.splitHost("example.org:http") == ("example.org:http", nil))
    }

    /// git's request through a real pipe: read in blocks when the helper owns its input (git
    /// started it), byte by byte otherwise, so that what follows the blank line stays for the
    /// next reader (`keywell git-credential get` inside a script).
    @Test(arguments: [true, false]) func credentialRequestsAreReadUpToTheBlankLine(ownsInput: Bool) throws {
        // CRLF endings, a repeated key, a value with '=', and what comes after the blank line.
        let input = try pipe(holding: "protocol=https\r\nhost=git.example.org:8443\nwwwauth[]=Basic\nwwwauth[]=Bearer x=1\n\nafter\n")
        defer { close(input) }
        let request = try #require(CredentialRequest.read(fd: FileDescriptor(rawValue: input), ownsInput: ownsInput))
        #expect(request.values == ["protocol": "https", "host": "git.example.org:8443", "wwwauth[]": "Basic\nBearer x=1"])
        #expect(request.host == "git.example.org" && request.port == 8443)
        var rest = [UInt8](repeating: 0, count: 16)
        let left = read(input, &rest, rest.count)
        #expect(left == (ownsInput ? 0 : 6), "the byte-by-byte reader leaves \"after\\n\" unread")
    }

    @Test func aRequestWithoutItsFinalNewlineStillCounts() throws {
        let input = try pipe(holding: "host=example.org\nusername=alice")
        defer { close(input) }
        #expect(CredentialRequest.read(fd: FileDescriptor(rawValue: input), ownsInput: true)?.values == ["host": "example.org", "username": "alice"])
    }

    /// A request past the cap is refused, not read without end: one a byte under it is taken.
    @Test(arguments: [true, false]) func aRequestOverTheCapIsRefused(ownsInput: Bool) throws {
        let filler = "wwwauth[]=" + String(repeating: "x", count: CredentialRequest.maxBytes)
        let over = try file(holding: "host=example.org\n\(filler)\n\n")
        defer { close(over) }
        #expect(CredentialRequest.read(fd: FileDescriptor(rawValue: over), ownsInput: ownsInput) == nil)
        let fits = "host=example.org\nwwwauth[]=" + String(repeating: "y", count: CredentialRequest.maxBytes - 30) + "\n\n"
        let under = try file(holding: fits)
        defer { close(under) }
        #expect(fits.utf8.count <= CredentialRequest.maxBytes)
        #expect(CredentialRequest.read(fd: FileDescriptor(rawValue: under), ownsInput: ownsInput)?.host == "example.org")
    }

    /// An unlinked file that holds `text`, read from its start: a pipe takes only 64 KiB
    /// before its writer blocks.
    private func file(holding text: String) throws -> Int32 {
        var template = Array("/tmp/keywell-request-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        try #require(fd >= 0)
        unlink(template)
        let bytes = Array(text.utf8)
        #expect(write(fd, bytes, bytes.count) == bytes.count)
        #expect(lseek(fd, 0, SEEK_SET) == 0)
        return fd
    }

    /// The read end of a pipe that holds `text` and then ends.
    private func pipe(holding text: String) throws -> Int32 {
        var fds: [Int32] = [0, 0]
        try #require(Glibc.pipe(&fds) == 0)
        let bytes = Array(text.utf8)
        #expect(write(fds[1], bytes, bytes.count) == bytes.count)
        close(fds[1])
        return fds[0]
    }
}
