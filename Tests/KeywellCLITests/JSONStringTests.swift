import KeywellProtocol
import Testing

/// The two JSON string styles (Sources/KeywellProtocol/JSONString.swift): the CLI's `--json`
/// output, and KWallet map secrets written as Qt's compact JSON writes them.
@Suite struct JSONStringTests {
    let sample = "a\"b\\c\nd\re\tf\u{08}g\u{0C}h\u{01}i\u{7F}j é"

    @Test func theCLIStyleEscapesEveryControlCharacterAndDelete() {
        #expect(JSONString.quoted(sample, style: .output)
            == #""a\"b\\c\nd\re\tf\u0008g\u000ch\u0001i\u007fj é""#)
    }

    @Test func qtsStyleNamesBackspaceAndFormFeedAndLeavesDelete() {
        #expect(JSONString.quoted(sample, style: .qt)
            == "\"a\\\"b\\\\c\\nd\\re\\tf\\bg\\fh\\u0001i\u{7F}j é\"")
    }

    @Test func aKWalletMapIsCompactWithKeysInQStringOrder() {
        #expect(KWalletMapJSON.encode(["b": "\u{08}", "a": "x"]) == Array(#"{"a":"x","b":"\b"}"#.utf8))
    }
}
