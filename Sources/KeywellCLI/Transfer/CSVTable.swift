/// RFC 4180 CSV: fields separated by commas, quoted with `"` when they hold a comma, a quote
/// or a line break (a quote inside is doubled), records ended by CRLF or LF. Fields stay bytes
/// so that passwords can be wiped once used.
enum CSVTable {
    enum Failure: Error, Equatable {
        /// A quoted field is still open at the end of the file.
        case unterminatedQuote(line: Int)
        /// A quote in the middle of an unquoted field, or text after a closing quote.
        case strayQuote(line: Int)
    }

    /// Every record of `text`; a UTF-8 byte-order mark is skipped, blank lines are dropped.
    static func parse(_ text: [UInt8]) throws(Failure) -> [[[UInt8]]] {
        let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")
        var records: [[[UInt8]]] = []
        var record: [[UInt8]] = []
        var field: [UInt8] = []
        var index = text.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var line = 1
        var inQuotes = false
        var wasQuoted = false
        func endRecord() {
            record.append(field)
            field = []
            if !(record.count == 1 && record[0].isEmpty && !wasQuoted) { records.append(record) }
            record = []
            wasQuoted = false
        }
        while index < text.count {
            let byte = text[index]
            if inQuotes {
                if byte == quote {
                    if index + 1 < text.count, text[index + 1] == quote {
                        field.append(quote)
                        index += 1
                    } else {
                        inQuotes = false
                        let next = index + 1 < text.count ? text[index + 1] : lf
                        guard next == comma || next == cr || next == lf else { throw .strayQuote(line: line) }
                    }
                } else {
                    if byte == lf { line += 1 }
                    field.append(byte)
                }
                index += 1
                continue
            }
            switch byte {
            case quote:
                guard field.isEmpty else { throw .strayQuote(line: line) }
                inQuotes = true
                wasQuoted = true
            case comma:
                record.append(field)
                field = []
            case cr where index + 1 < text.count && text[index + 1] == lf:
                break
            case lf, cr:
                endRecord()
                line += 1
            default:
                field.append(byte)
            }
            index += 1
        }
        guard !inQuotes else { throw .unterminatedQuote(line: line) }
        if !field.isEmpty || !record.isEmpty || wasQuoted { endRecord() }
        return records
    }

    /// One record, ended by CRLF as RFC 4180 has it.
    static func line(_ fields: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, field) in fields.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            let needsQuotes = field.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0D || $0 == 0x0A }
            guard needsQuotes else {
                out += field
                continue
            }
            out.append(UInt8(ascii: "\""))
            for byte in field {
                if byte == UInt8(ascii: "\"") { out.append(byte) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
        }
        return out + [0x0D, 0x0A]
    }
}
