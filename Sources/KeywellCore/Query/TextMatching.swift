import Foundation

/// The forms text is compared in: values are stored as given, matched and kept unique after NFC
/// normalisation, and matched case-insensitively after full Unicode case folding (é matches É).
enum TextMatching {
    static func normalized(_ text: String) -> String {
        if isASCII(text) { return text }
        return text.precomposedStringWithCanonicalMapping
    }

    static func folded(_ text: String) -> String {
        if isASCII(text) { return text.lowercased() }
        // Folding works per character, so normalise its output again (É decomposed folds to e + ◌́).
        return text.folding(options: [.caseInsensitive], locale: nil).precomposedStringWithCanonicalMapping
    }

    private static func isASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 < 0x80 }
    }
}
