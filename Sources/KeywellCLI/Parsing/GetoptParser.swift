/// BSD `getopt(3)` as macOS `security` uses it: options cluster (`-lut 7200`), an option's value
/// is the rest of its word or else the next word (even one starting with `-`), parsing stops at
/// `--` or at the first word that is not an option, and nothing is permuted.
///
/// Two additions for Linux users: the long flags a command declares (`--json`, `--help`) are
/// accepted where an option may stand, and also as trailing words after the operands, so
/// `keywell dump-keychain login --json` works. Long options with a value (`--format csv`,
/// `--enforce-access=on`) stand where an option may.
struct GetoptParser {
    /// One option as found, with where its value sits in argv (so a password can be scrubbed).
    struct Option: Equatable {
        let letter: Character
        let value: String?
        /// Index of the word holding the value, and the byte offset of the value in that word.
        let valueLocation: (word: Int, offset: Int)?

        static func == (lhs: Option, rhs: Option) -> Bool {
            lhs.letter == rhs.letter && lhs.value == rhs.value
        }
    }

    struct Result {
        var options: [Option] = []
        var operands: [String] = []
        var longFlags: Set<String> = []
        /// `--name value` or `--name=value` for the long options that take one (`--format csv`).
        var longValues: [String: String] = [:]

        func has(_ letter: Character) -> Bool { options.contains { $0.letter == letter } }
        /// The last value given for `letter` (getopt loops let later options win).
        func value(_ letter: Character) -> String? { options.last { $0.letter == letter }?.value }
        func values(_ letter: Character) -> [String] { options.filter { $0.letter == letter }.compactMap(\.value) }
        func option(_ letter: Character) -> Option? { options.last { $0.letter == letter } }
    }

    enum Failure: Error, Equatable {
        case unknownOption(String)
        case missingValue(Character)

        /// What macOS's getopt(3) prints on stderr before the command's usage; it names the
        /// program by the argv[0] it was given. An unknown `--word` is the option `-`.
        func getoptLine(argv0: String) -> String {
            switch self {
            case .unknownOption(let word):
                let letter = word.hasPrefix("--") ? "-" : String(word.dropFirst().prefix(1))
                return "\(argv0): illegal option -- \(letter)\n"
            case .missingValue(let letter):
                return "\(argv0): option requires an argument -- \(letter)\n"
            }
        }
    }

    /// Letters without a value, and letters followed by `:` in `optionString` take one.
    let optionString: String
    let longFlags: Set<String>
    /// Long options that take a value (Keywell's own commands).
    var longValueOptions: Set<String> = []

    func takesValue(_ letter: Character) -> Bool? {
        guard letter != ":", let index = optionString.firstIndex(of: letter) else { return nil }
        let next = optionString.index(after: index)
        return next < optionString.endIndex && optionString[next] == ":"
    }

    /// `words[0]` is the command name; `firstWordIndex` is where `words` starts in the process's
    /// argv, so value locations point into the real argv.
    /// `trailingLongFlags` false: words after the operands stay operands (the global options,
    /// whose operands are a command line of their own).
    func parse(_ words: [String], firstWordIndex: Int = 0, trailingLongFlags: Bool = true) throws(Failure) -> Result {
        var result = Result()
        var index = 1
        var sawTerminator = false
        while index < words.count {
            let word = words[index]
            if word == "--" { index += 1; sawTerminator = true; break }
            if word.hasPrefix("--") {
                let name = String(word.dropFirst(2))
                if let equals = name.firstIndex(of: "="), longValueOptions.contains(String(name[..<equals])) {
                    result.longValues[String(name[..<equals])] = String(name[name.index(after: equals)...])
                    index += 1
                    continue
                }
                if longValueOptions.contains(name) {
                    guard index + 1 < words.count else { throw .unknownOption(word) }
                    result.longValues[name] = words[index + 1]
                    index += 2
                    continue
                }
                guard longFlags.contains(name) else { throw .unknownOption(word) }
                result.longFlags.insert(name)
                index += 1
                continue
            }
            guard word.hasPrefix("-"), word != "-" else { break }
            let letters = Array(word.dropFirst())
            var position = 0
            while position < letters.count {
                let letter = letters[position]
                guard let needsValue = takesValue(letter) else { throw .unknownOption("-" + String(letter)) }
                if !needsValue {
                    result.options.append(Option(letter: letter, value: nil, valueLocation: nil))
                    position += 1
                    continue
                }
                if position + 1 < letters.count {
                    let value = String(letters[(position + 1)...])
                    let offset = 1 + String(letters[...position]).utf8.count
                    result.options.append(Option(letter: letter, value: value, valueLocation: (firstWordIndex + index, offset)))
                } else {
                    guard index + 1 < words.count else { throw .missingValue(letter) }
                    index += 1
                    result.options.append(Option(letter: letter, value: words[index], valueLocation: (firstWordIndex + index, 0)))
                }
                break
            }
            index += 1
        }
        var operands = Array(words[min(index, words.count)...])
        // Trailing long flags after the operands (not after an explicit `--`).
        if trailingLongFlags && !sawTerminator {
            while let last = operands.last, last.hasPrefix("--"), longFlags.contains(String(last.dropFirst(2))) {
                result.longFlags.insert(String(last.dropFirst(2)))
                operands.removeLast()
            }
        }
        result.operands = operands
        return result
    }
}
