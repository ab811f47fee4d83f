/// Four-character codes (`-c`, `-C`, `-r`, `-t`): exactly four bytes, as `security` insists.
enum FourCharCode {
    /// The code, or the two lines `security` prints on stderr for a wrong length (exit 1).
    static func parse(_ text: String) -> Result<String, FourCharCodeError> {
        let length = text.utf8.count
        guard length == 4 else { return .failure(FourCharCodeError(text: text, length: length)) }
        return .success(text)
    }

    /// Big-endian bytes of a code given as a number (what `crtr`/`type` may arrive as).
    static func bytes(_ number: UInt32) -> [UInt8] {
        [UInt8(number >> 24), UInt8((number >> 16) & 0xFF), UInt8((number >> 8) & 0xFF), UInt8(number & 0xFF)]
    }
}

struct FourCharCodeError: Error {
    let text: String
    let length: Int

    var lines: [String] {
        var lines = ["Error: four-character types must be exactly 4 characters long."]
        if length == 3 { lines.append("(Try \"\(text) \" instead of \"\(text)\")") }
        return lines
    }
}
