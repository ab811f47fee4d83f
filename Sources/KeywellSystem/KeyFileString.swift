/// A string value of a GLib key file — a desktop entry, `/.flatpak-info`, one of gnome-keyring's
/// plain-text keyrings — read the one way GLib reads it (`g_key_file_get_string`): `\s`, `\n`,
/// `\t`, `\r` and `\\` stand for their characters; any other escape, or a backslash that ends
/// the value, makes the value invalid. GLib keeps such an escape as written in the text it
/// reports beside the error, and so does `text` here: each reader then decides what an invalid
/// value means to it (absent, refused, or imported as written so nothing is lost).
public struct KeyFileString: Sendable, Equatable {
    /// The value with its escapes replaced; an unknown escape stays as written.
    public let text: String
    /// False when the value held an escape GLib refuses.
    public let isValid: Bool

    public init(escaped value: some StringProtocol) {
        guard value.contains("\\") else {
            text = String(value)
            isValid = true
            return
        }
        var result = ""
        var valid = true
        var iterator = value.makeIterator()
        while let character = iterator.next() {
            guard character == "\\" else {
                result.append(character)
                continue
            }
            switch iterator.next() {
            case "s": result.append(" ")
            case "n": result.append("\n")
            case "t": result.append("\t")
            case "r": result.append("\r")
            case "\\": result.append("\\")
            case let other?:
                valid = false
                result.append("\\")
                result.append(other)
            case nil:
                valid = false
                result.append("\\")
            }
        }
        text = result
        isValid = valid
    }

    /// The value, or nil when it is invalid (GLib's `g_key_file_get_string` returns none then).
    public static func valid(_ value: some StringProtocol) -> String? {
        let string = KeyFileString(escaped: value)
        return string.isValid ? string.text : nil
    }
}
