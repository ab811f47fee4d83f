import FoundationEssentials
import KeywellNativeClient
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// Plaintext CSV import (docs/export-import.md, "CSV"), done here through the ordinary item
/// calls (Add, then Update for a replaced item).
enum CSVImport {
    /// Every row is read and checked before the first item is added: a bad file adds nothing.
    static func run(_ context: CommandContext, _ path: String, into typedTarget: String?, policy: String) -> Int32 {
        let file: FileDescriptor
        do { file = try TransferFiles.openForReading(path) } catch {
            context.diagnostics.error("import: \(path): \(error)")
            return CommandStatus.failure
        }
        // The cap and the wiping of outgrown storage: FileDescriptor.readAll.
        var bytes = file.closeAfter { try? file.readAll(limit: ExportLimits.bytesPerFile) }
        defer { bytes?.withUnsafeMutableBytes { SecretMemory.wipe($0) } }
        guard let text = bytes else {
            context.diagnostics.error("import: \(path): unreadable, or larger than \(ExportLimits.bytesPerFile >> 20) MiB")
            return CommandStatus.failure
        }
        var records: [[[UInt8]]]
        do {
            records = try CSVTable.parse(text)
        } catch {
            let why = switch error {
            case .unterminatedQuote(let line): "line \(line): a quoted field is never closed"
            case .strayQuote(let line): "line \(line): a quote inside a field that is not quoted"
            }
            context.diagnostics.error("import: \(path): \(why)")
            return CommandStatus.failure
        }
        defer {
            for record in records.indices {
                for field in records[record].indices { records[record][field].withUnsafeMutableBytes { SecretMemory.wipe($0) } }
            }
        }
        guard let header = records.first,
              let layout = CSVLayout(header: header.map { String(decoding: $0, as: UTF8.self) }) else {
            context.diagnostics.error("import: \(path): the first line is not a header Keywell knows"
                + " (Chromium, Firefox, Bitwarden, KeePassXC: see docs/export-import.md)")
            return CommandStatus.failure
        }
        guard records.count - 1 <= CSVExport.maximumRows else {
            context.diagnostics.error("import: \(path): more than \(CSVExport.maximumRows) rows")
            return CommandStatus.failure
        }
        var items: [(attributes: WireDictionary, changed: Int64?)] = []
        var ignored = 0
        for (index, record) in records.enumerated().dropFirst() {
            func field(_ column: Int?) -> String {
                guard let column, column < record.count else { return "" }
                return String(decoding: record[column], as: UTF8.self)
            }
            if layout.type != nil, field(layout.type) != "login" {
                ignored += 1
                continue
            }
            let entry = CSVMapping.Entry(name: field(layout.name), url: field(layout.url), username: field(layout.username),
                                         note: field(layout.note), realm: field(layout.realm))
            do {
                var attributes = try CSVMapping.attributes(for: entry)
                attributes[WireKey.valueData] = .data(Data(layout.password < record.count ? record[layout.password] : []))
                items.append((attributes, Int64(field(layout.changed))))
            } catch {
                let why = switch error {
                case .noNameOrURL: "it has neither a name nor a URL"
                case .badPort(let port): "its URL has an impossible port \(ShellQuoting.quote(port))"
                }
                context.diagnostics.error("import: \(path): row \(index + 1): \(why); nothing was imported")
                return CommandStatus.failure
            }
        }
        defer { for index in items.indices { CSVSecrets.wipe(&items[index].attributes) } }
        let target: String
        do {
            target = try context.keychainName(typedTarget)
        } catch {
            context.diagnostics.error("import: \(error.explanation)")
            context.diagnostics.hintingAnywhere.hint(for: error, keychain: typedTarget)
            return error.status
        }
        var added = 0, replaced = 0, skipped = 0
        for (attributes, changed) in items {
            var add = attributes
            add[WireKey.useKeychain] = .string(target)
            do {
                do {
                    _ = try context.client.add(add)
                    added += 1
                } catch where error.status == SecStatus.duplicateItem {
                    var query = CSVMapping.keyQuery(attributes)
                    query[WireKey.useKeychain] = .string(target)
                    var keep = policy == "skip"
                    if policy == "newer" { keep = try !isNewer(changed, than: query, context) }
                    if keep {
                        skipped += 1
                        continue
                    }
                    var changes = attributes.filter { [WireKey.valueData, AttributeKey.label, AttributeKey.comment].contains($0.key) }
                    defer { CSVSecrets.wipe(&changes) }
                    try context.client.update(query, attributes: changes)
                    replaced += 1
                }
            } catch {
                context.diagnostics.error("import: \(error.explanation) after \(added) added, \(replaced) replaced")
                context.diagnostics.hintingAnywhere.hint(for: error, keychain: typedTarget)
                return error.status
            }
        }
        let note = ignored > 0 ? ", \(ignored) rows that are not logins ignored" : ""
        context.output.write("imported \(path): \(added) added, \(replaced) replaced, \(skipped) skipped\(note)\n")
        return CommandStatus.success
    }

    /// Whether the row's change time (Firefox's `timePasswordChanged`) is later than the item's
    /// `mdat`; rows without one count as older.
    private static func isNewer(_ changed: Int64?, than query: WireDictionary, _ context: CommandContext) throws(KeychainError) -> Bool {
        guard let changed else { return false }
        var lookup = query
        lookup[WireKey.returnAttributes] = .bool(true)
        let found = try context.client.copyMatching(lookup)
        return found.allSatisfy { changed > ($0[AttributeKey.modificationDate]?.integerValue ?? .max) }
    }
}
