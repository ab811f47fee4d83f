/// `security -i` / `-p prompt`: one command per line of standard input until end of input or
/// `quit`/`exit`. Words split at blanks; single and double quotes group, backslash escapes.
enum InteractiveMode {
    static func run(prompt: String, context: CommandContext, verbose: Bool) -> Int32 {
        var status = CommandStatus.success
        while true {
            StandardStreams.output.write(prompt)
            StandardStreams.output.flush()
            guard let line = readLine(strippingNewline: true) else { break }
            let words = split(line)
            if words.first == "quit" || words.first == "exit" { break }
            if words.isEmpty { continue }
            status = Program.execute(words, argvIndex: nil, context: context, verbose: verbose)
            StandardStreams.output.flush()
        }
        return status
    }

    static func split(_ line: String) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
                continue
            }
            if character == "\\" && quote != "'" {
                escaped = true
                inWord = true
                continue
            }
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
                continue
            }
            if character == "\"" || character == "'" {
                quote = character
                inWord = true
            } else if character == " " || character == "\t" {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(character)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }
}
