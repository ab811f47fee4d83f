import Foundation
import KeywellDBus
import KeywellProtocol

/// The `a{sv}` dictionaries `MigrateKeyrings` and `GetMigrationStatus` answer with (keys in
/// docs/migration.md, "The native API").
enum MigrationWire {
    static func report(_ report: KeyringMigration.Report) -> [String: DBusValue] {
        [
            MigrationKey.keyring: .string(report.keyring), MigrationKey.path: .string(report.path), MigrationKey.keychain: .string(report.keychain),
            MigrationKey.format: .string(report.format), MigrationKey.outcome: .string(report.outcome.rawValue),
            MigrationKey.added: .uint32(UInt32(clamping: report.added)), MigrationKey.updated: .uint32(UInt32(clamping: report.updated)),
            MigrationKey.unchanged: .uint32(UInt32(clamping: report.unchanged)), MigrationKey.message: .string(report.message),
        ]
    }

    static func status(_ state: MigrationState) -> [[String: DBusValue]] {
        state.sources.keys.sorted().map { path in
            let source = state.sources[path]!
            return [
                MigrationKey.path: .string(path), MigrationKey.keyring: .string(source.keyring), MigrationKey.keychain: .string(source.keychain),
                MigrationKey.format: .string(source.format.rawValue), MigrationKey.items: .uint32(UInt32(clamping: source.items.count)),
                MigrationKey.firstImported: .int64(Int64(source.firstImported.timeIntervalSince1970)),
                MigrationKey.lastRun: .int64(Int64(source.lastRun.at.timeIntervalSince1970)),
                MigrationKey.added: .uint32(UInt32(clamping: source.lastRun.added)), MigrationKey.updated: .uint32(UInt32(clamping: source.lastRun.updated)),
                MigrationKey.unchanged: .uint32(UInt32(clamping: source.lastRun.unchanged)),
            ]
        }
    }
}
