import Foundation
import KeywellDBus

/// The `a{sv}` dictionaries `MigrateKeyrings` and `GetMigrationStatus` answer with (keys in
/// docs/migration.md, "The native API").
enum MigrationWire {
    static func report(_ report: KeyringMigration.Report) -> [String: DBusValue] {
        [
            "keyring": .string(report.keyring), "path": .string(report.path), "keychain": .string(report.keychain),
            "format": .string(report.format), "outcome": .string(report.outcome.rawValue),
            "added": .uint32(UInt32(clamping: report.added)), "updated": .uint32(UInt32(clamping: report.updated)),
            "unchanged": .uint32(UInt32(clamping: report.unchanged)), "message": .string(report.message),
        ]
    }

    static func status(_ state: MigrationState) -> [[String: DBusValue]] {
        state.sources.keys.sorted().map { path in
            let source = state.sources[path]!
            return [
                "path": .string(path), "keyring": .string(source.keyring), "keychain": .string(source.keychain),
                "format": .string(source.format.rawValue), "items": .uint32(UInt32(clamping: source.items.count)),
                "first_imported": .int64(Int64(source.firstImported.timeIntervalSince1970)),
                "last_run": .int64(Int64(source.lastRun.at.timeIntervalSince1970)),
                "added": .uint32(UInt32(clamping: source.lastRun.added)), "updated": .uint32(UInt32(clamping: source.lastRun.updated)),
                "unchanged": .uint32(UInt32(clamping: source.lastRun.unchanged)),
            ]
        }
    }
}
