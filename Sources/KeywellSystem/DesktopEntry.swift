/// The few keys of a desktop entry's `[Desktop Entry]` group that name a program
/// (docs/access-control.md, "The words"): its name in a locale, and what it runs.
struct DesktopEntry {
    /// `Name[<locale>]=` for the best of the locale's forms, else `Name=`.
    let name: String?
    /// `TryExec=`, else the first word of `Exec=` (quotes removed); not yet looked up in `PATH`.
    let program: String?

    /// Nil for what is not a shown application: another `Type`, or `Hidden=true` (the entry is
    /// deleted, and hides others of its id).
    init?(parsing text: String, locale: DesktopLocale) {
        var inMain = false
        var values: [Substring: Substring] = [:]
        var localized: [Substring: Substring] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("[") {
                // Only the first group matters; a later one ends it.
                if inMain { break }
                inMain = line == "[Desktop Entry]"
                continue
            }
            guard inMain, !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingSuffix(" ")
            let value = line[line.index(after: equals)...].trimmingPrefix(" ")
            if key.hasPrefix("Name["), key.hasSuffix("]") {
                localized[key.dropFirst("Name[".count).dropLast()] = value
            } else if values[key] == nil {
                values[key] = value
            }
        }
        guard values["Type"] == "Application", values["Hidden"] != "true" else { return nil }
        let shown = locale.candidates.lazy.compactMap { localized[Substring($0)] }.first ?? values["Name"]
        name = shown.flatMap(KeyFileString.valid).flatMap { $0.isEmpty ? nil : $0 }
        if let tryExec = values["TryExec"], !tryExec.isEmpty {
            program = KeyFileString.valid(tryExec)
        } else {
            program = values["Exec"].flatMap { Self.firstWord(of: String($0)) }
        }
    }

    /// The first argument of an `Exec=` line: a bare word, or a double-quoted one whose `\"`,
    /// `` \` ``, `\$` and `\\` stand for the character.
    static func firstWord(of exec: String) -> String? {
        guard let line = KeyFileString.valid(exec)?.drop(while: { $0 == " " }) else { return nil }
        guard line.first == "\"" else {
            let word = line.prefix { $0 != " " }
            return word.isEmpty ? nil : String(word)
        }
        var word = ""
        var escaping = false
        for character in line.dropFirst() {
            if escaping {
                word.append(character)
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else if character == "\"" {
                return word.isEmpty ? nil : word
            } else {
                word.append(character)
            }
        }
        return nil
    }
}

/// The forms of keywelld's locale a `Name[…]=` key is looked up by, best first (the desktop
/// entry rule): `lang_COUNTRY@MODIFIER`, `lang_COUNTRY`, `lang@MODIFIER`, `lang`.
struct DesktopLocale {
    let candidates: [String]

    /// From `LC_ALL`, else `LC_MESSAGES`, else `LANG`; `C` and `POSIX` have no translations.
    init(environment: [String: String]) {
        let value = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty } ?? ""
        var rest = Substring(value)
        var modifier: Substring?
        if let at = rest.firstIndex(of: "@") {
            modifier = rest[rest.index(after: at)...]
            rest = rest[..<at]
        }
        if let dot = rest.firstIndex(of: ".") { rest = rest[..<dot] }
        let parts = rest.split(separator: "_", maxSplits: 1)
        guard let language = parts.first, language != "C", language != "POSIX" else {
            candidates = []
            return
        }
        let country = parts.count > 1 ? parts[1] : nil
        var forms: [String] = []
        if let country, let modifier { forms.append("\(language)_\(country)@\(modifier)") }
        if let country { forms.append("\(language)_\(country)") }
        if let modifier { forms.append("\(language)@\(modifier)") }
        forms.append(String(language))
        candidates = forms
    }
}

extension Substring {
    fileprivate func trimmingSuffix(_ character: Character) -> Substring {
        var result = self
        while result.last == character { result = result.dropLast() }
        return result
    }

    fileprivate func trimmingPrefix(_ character: Character) -> Substring {
        drop { $0 == character }
    }
}
