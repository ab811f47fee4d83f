import FoundationEssentials
import KeywellNativeClient
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// Plaintext CSV export (docs/export-import.md, "CSV"), done here through the ordinary item
/// calls: the secrets are in the clear in the file anyway.
enum CSVExport {
    /// Rows in one CSV file, as for an encrypted export.
    static let maximumRows = ExportLimits.itemsPerFile

    static func run(_ context: CommandContext, _ keychains: [String], to path: String) -> Int32 {
        var lines: [[UInt8]] = [CSVTable.line(CSVLayout.exportHeader.map { Array($0.utf8) })]
        defer { for index in lines.indices { lines[index].withUnsafeMutableBytes { SecretMemory.wipe($0) } } }
        let search = ItemSearch(context: context)
        var thisDeviceOnly = 0
        for keychain in keychains {
            for itemClass in [ItemClass.genericPassword, .internetPassword] {
                var results: [WireDictionary]
                do {
                    results = try context.client.copyMatching(search.query(itemClass, [:], in: keychain, secret: true, all: true))
                } catch where error.status == SecStatus.itemNotFound {
                    continue
                } catch {
                    context.diagnostics.error("export \(context.naming.displayName(for: keychain)): \(error.explanation)")
                    context.diagnostics.hintingAnywhere.hint(for: error, keychain: context.naming.displayName(for: keychain))
                    return error.status
                }
                for index in results.indices {
                    guard !ThisDeviceOnlyReport.staysHere(results[index]) else {
                        thisDeviceOnly += 1
                        CSVSecrets.wipe(&results[index])
                        continue
                    }
                    var secret = [UInt8](results[index][WireKey.valueData]?.dataValue ?? Data())
                    var row = CSVMapping.row(results[index], secret: secret)
                    lines.append(CSVTable.line(row))
                    secret.withUnsafeMutableBytes { SecretMemory.wipe($0) }
                    for field in row.indices { row[field].withUnsafeMutableBytes { SecretMemory.wipe($0) } }
                    CSVSecrets.wipe(&results[index])
                }
            }
        }
        let file: FileDescriptor
        do { file = try TransferFiles.create(path) } catch {
            context.diagnostics.error("export: \(path): \(error)")
            return CommandStatus.failure
        }
        defer { try? file.close() }
        for line in lines {
            do { try file.writeAll(line) } catch {
                context.diagnostics.error("export: \(path): \(error)")
                unlink(path)
                return CommandStatus.failure
            }
        }
        context.output.write("exported \(lines.count - 1) item\(lines.count == 2 ? "" : "s") to \(path)\n")
        ThisDeviceOnlyReport.write(context, leftOut: thisDeviceOnly)
        return CommandStatus.success
    }
}

/// What the CSV commands share.
enum CSVSecrets {
    /// Drops the secret from a dictionary and overwrites it (then its only holder).
    static func wipe(_ dictionary: inout WireDictionary) {
        if var data = dictionary.removeValue(forKey: WireKey.valueData)?.dataValue { data.wipe() }
    }
}
