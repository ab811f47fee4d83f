/// Text a dialog shows (docs/access-control.md, "The words"): one line per value the caller
/// chose, and nothing that reads as an identity. Identities, hashes and the identity's strength
/// go to the log line and `dump-keychain -a`, never to the dialog.
enum DialogText {
    /// Characters of a label, program or keychain name shown; longer ones end in "…".
    static let nameLimit = 200
    /// A run of this many hex digits reads as a hash: it is cut to `keptHexDigits` and "…".
    static let hexRunLimit = 16
    static let keptHexDigits = 8
    /// Words that begin an identity's parts; a value holding one shows a look-alike instead.
    static let identityMarkers = ["exe:", "sha256=", "script="]

    /// `text` as one line of the dialog: a label or a path is the caller's to choose, so line
    /// breaks and other control characters become U+FFFD and cannot forge lines of their own.
    static func line(_ text: String, limit: Int = nameLimit) -> String {
        defused(oneLine(text, limit: limit))
    }

    /// `text` with control characters as U+FFFD, cut at `limit`: a label cannot start a log line.
    static func oneLine(_ text: String, limit: Int) -> String {
        var result = String.UnicodeScalarView()
        for (count, scalar) in text.unicodeScalars.enumerated() {
            guard count < limit else {
                result.append("…")
                break
            }
            let category = scalar.properties.generalCategory
            result.append(category == .control || category == .lineSeparator || category == .paragraphSeparator ? "\u{FFFD}" : scalar)
        }
        return String(result)
    }

    /// `text` without a run of `hexRunLimit` hex digits or an identity marker: a label cannot
    /// make the dialog look like it names an identity or a hash.
    static func defused(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        var output = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            if let marker = identityMarkers.first(where: { Self.starts(scalars[index...], with: $0) }) {
                let length = marker.unicodeScalars.count
                output.append(contentsOf: scalars[index..<index + length - 1])
                // ꞉ (U+A789) for ":", ＝ (U+FF1D) for "=": read alike, compare unlike.
                output.append(scalars[index + length - 1] == ":" ? "\u{A789}" : "\u{FF1D}")
                index += length
                continue
            }
            var end = index
            while end < scalars.count, scalars[end].properties.isASCIIHexDigit { end += 1 }
            if end - index >= hexRunLimit {
                output.append(contentsOf: scalars[index..<index + keptHexDigits])
                output.append("…")
                index = end
                continue
            }
            output.append(scalars[index])
            index += 1
        }
        return String(output)
    }

    private static func starts(_ scalars: ArraySlice<Unicode.Scalar>, with marker: String) -> Bool {
        var position = scalars.startIndex
        for expected in marker.unicodeScalars {
            guard position < scalars.endIndex else { return false }
            let actual = scalars[position]
            guard actual == expected || (actual.isASCII && Character(actual).lowercased() == String(expected)) else { return false }
            position += 1
        }
        return true
    }
}
