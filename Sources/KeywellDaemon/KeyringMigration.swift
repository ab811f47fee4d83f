import Foundation
import KeyringImport
import KeywellCore
import KeywellProtocol
import KeywellSecretService
import KeywellSystem
import Logging

/// Brings gnome-keyring's and libsecret's keyrings into keychains (docs/migration.md): at login
/// with the login password, and on `MigrateKeyrings` calls. Source files are only ever read.
/// One migration runs at a time; the state file makes a second run import only what is new or
/// newer, never the same item twice.
final class KeyringMigration: Sendable {
    /// One keyring's outcome, as the log, `MigrateKeyrings` and `keywell migrate` report it.
    struct Report: Sendable {
        typealias Outcome = MigrationOutcome
        var keyring: String
        var path: String
        var keychain: String
        var format: String
        var outcome: Outcome
        var added = 0
        var updated = 0
        var unchanged = 0
        var message = ""
    }

    private let store: KeychainStore
    private let logger: Logger
    let folder: KeyringFolder
    /// KWallet's wallet files (`kwalletd/NAME.kwl`).
    let wallets: KWalletFolder
    let statePath: String
    /// One run at a time.
    private let serial = Protected(())

    init(store: KeychainStore, logger: Logger) {
        self.store = store
        self.logger = logger
        let keywellData = store.paths.keychainsDirectory.deletingLastPathComponent()
        folder = KeyringFolder(dataHome: keywellData.deletingLastPathComponent().path)
        wallets = KWalletFolder(dataHome: keywellData.deletingLastPathComponent().path)
        statePath = keywellData.path + "/migration.json"
    }

    /// The keychain a keyring goes into: `login` for gnome-keyring's `login` and for libsecret's
    /// `default` file (its only collection), else the keyring's own name.
    static func keychain(for source: KeyringFolder.Source, format: KeyringFormat?) -> String {
        if source.name == KeywellNames.loginKeychain { return KeywellNames.loginKeychain }
        if format == .libsecretFile && source.name == "default" { return KeywellNames.loginKeychain }
        return source.name
    }

    // MARK: Entry points

    /// After a login unlocked or created `login`: every keyring that password opens (and the
    /// plaintext ones), off the login's thread, one log line per keyring.
    func migrateAtLogin(password: SecretBytes) {
        startDetachedThread(name: "keyring-migration", stackSize: 1 << 20) { [self] in
            let reports = migrate(keyring: nil, password: password, atLogin: true)
            for report in reports { log(report) }
        }
    }

    /// `keyring` nil: every keyring file. `password` nil or empty: only what needs none
    /// (plaintext keyrings going into keychains that are already unlocked, unchanged files).
    func migrate(keyring: String?, password: SecretBytes?, atLogin: Bool = false) -> [Report] {
        serial.withLock { _ -> [Report] in
            var state = MigrationState.load(from: statePath)
            let password = password.flatMap { $0.count > 0 ? $0 : nil }
            var reports: [Report] = []
            let sources = (folder.sources().map(SourceFile.init(keyring:)) + wallets.sources().map { wallet in
                SourceFile(wallet: wallet, defaultKeychain: { [store] in try? store.registry.defaultKeychain() })
            }).filter { keyring == nil || $0.name == keyring }
            for source in sources {
                let report = migrate(source, password: password, atLogin: atLogin, state: &state)
                reports.append(report)
            }
            // A failed run is saved too: what it did import is recorded, never added again.
            if reports.contains(where: { $0.outcome == .imported || $0.outcome == .failed }) {
                applyDefaultFile(&state)
                do throws(KeychainError) { try state.save(to: statePath) } catch {
                    logger.error("keyring migration: cannot save \(statePath): \(error.wireMessage)")
                }
            }
            return reports
        }
    }

    func state() -> MigrationState {
        serial.withLock { _ in MigrationState.load(from: statePath) }
    }

    func log(_ report: Report) {
        let counts = "\(report.added) added, \(report.updated) updated, \(report.unchanged) unchanged"
        let line = "keyring migration: \(report.path) → \(report.keychain): \(report.outcome.rawValue)"
            + (report.outcome == .imported ? " (\(counts))" : "") + (report.message.isEmpty ? "" : ": \(report.message)")
        switch report.outcome {
        case .failed: logger.warning("\(line)")
        case .imported: logger.notice("\(line)")
        default: logger.info("\(line)")
        }
    }

    // MARK: One source

    private func migrate(_ source: SourceFile, password: SecretBytes?, atLogin: Bool,
                         state: inout MigrationState) -> Report {
        var report = Report(keyring: source.name, path: source.path, keychain: source.name, format: "", outcome: .failed)
        let bytes: [UInt8]
        let identity: MigrationState.FileIdentity
        do throws(KeyringReadError) {
            bytes = try KeyringFolder.contents(of: source.path, keyring: source.name)
            identity = try Self.identity(of: source.path, bytes: bytes, keyring: source.name)
        } catch {
            report.message = error.description
            return report
        }
        let format = source.format(bytes)
        report.format = format?.rawValue ?? "unknown"
        report.keychain = source.keychain(format)
        if let previous = state.sources[source.path], previous.identity == identity {
            report.outcome = .unchanged
            report.unchanged = previous.items.count
            return report
        }
        let contents: KeyringContents
        do throws(KeyringReadError) {
            // At login no gpg runs: its pinentry would ask before the session is up.
            contents = try source.open(bytes, password, identity.modifiedNanoseconds / 1_000_000_000, !atLogin)
        } catch {
            switch error {
            case .wrongPassword: report.outcome = atLogin || password == nil ? .needsPassword : .wrongPassword
            case .needsPassword: report.outcome = .needsPassword
            default: report.outcome = .failed
            }
            report.message = error.description
            return report
        }
        do throws(KeychainError) {
            try openTarget(report.keychain, password: password, plaintext: contents.format == .gnomeKeyringPlaintext)
        } catch {
            report.outcome = error.status == SecStatus.authFailed || error.status == SecStatus.noSuchKeychain
                || error.status == SecStatus.interactionNotAllowed ? .needsPassword : .failed
            report.message = "keychain \(report.keychain): \(error.message)"
            return report
        }
        var record = state.sources[source.path] ?? MigrationState.Source(
            keyring: source.name, format: contents.format, keychain: report.keychain, identity: identity, firstImported: Date(),
            lastRun: .init(at: Date(), added: 0, updated: 0, unchanged: 0), items: [:])
        report.outcome = .imported
        // Every item is looked at first, then all that go in go in one transaction: a file is
        // imported whole or not at all (docs/migration.md, "The state file and importing again").
        var planned: [PlannedItem] = []
        defer { for plan in planned { SecretWipe.wipe(plan.item.secret.value) } }
        do throws(KeychainError) {
            for item in contents.items {
                if let plan = try plan(item, into: report.keychain, record: &record, report: &report) { planned.append(plan) }
            }
            let made = try store.secretServiceImportItems(planned.map(\.item), in: report.keychain)
            for (plan, id) in zip(planned, made) {
                record.items[plan.identity] = .init(modified: plan.modified, keywellItem: id.uuidString)
                if plan.item.replacing == nil && !plan.isUpdate { report.added += 1 } else { report.updated += 1 }
            }
        } catch {
            report.outcome = .failed
            report.message = "nothing was imported: \(error.message)"
        }
        if report.outcome == .failed {
            // Nothing went in; the file identity is not recorded, so the next run looks at the
            // file again.
            record.identity.sha256 = ""
        } else {
            record.identity = identity
        }
        record.keychain = report.keychain
        record.lastRun = .init(at: Date(), added: report.added, updated: report.updated, unchanged: report.unchanged)
        state.sources[source.path] = record
        return report
    }

    /// The keychain exists and is unlocked (unlocking it with `password`, through the throttle),
    /// or is created with `password`. A plaintext keyring brings no password of its own.
    private func openTarget(_ keychain: String, password: SecretBytes?, plaintext: Bool) throws(KeychainError) {
        if store.registry.keychainExists(keychain) {
            guard try store.locking.isLocked(keychain) else { return }
            guard let password else {
                throw KeychainError(SecStatus.interactionNotAllowed, detail: "keychain \(keychain) is locked")
            }
            try store.locking.unlock(keychain, password: password)
            return
        }
        guard let password else {
            throw KeychainError(SecStatus.noSuchKeychain, detail: "a password is needed to create keychain \(keychain)")
        }
        _ = try store.registry.createKeychain(keychain, password: password)
        logger.info("keyring migration: created keychain \(keychain)")
    }

    /// An item that goes in: new, or newer in the source than what an earlier import made.
    private struct PlannedItem {
        let identity: String
        let modified: Int64
        let item: FreeformImportItem
        let isUpdate: Bool
    }

    /// What to do with one item of the source; nil when it stays as it is (counted unchanged).
    private func plan(_ item: KeyringItem, into keychain: String, record: inout MigrationState.Source,
                      report: inout Report) throws(KeychainError) -> PlannedItem? {
        let secret = item.secret.withUnsafeBytes { SecretServiceSecret(value: Data($0), contentType: item.contentType) }
        let dates = SecretServiceItemTimes(created: Date(timeIntervalSince1970: Double(item.created)),
                                           modified: Date(timeIntervalSince1970: Double(item.modified)))
        func planned(replacing: UUID?, isUpdate: Bool) -> PlannedItem {
            PlannedItem(identity: item.identity, modified: item.modified,
                        item: FreeformImportItem(label: item.label, attributes: item.attributes, type: item.schema, secret: secret,
                                                 times: dates, replacing: replacing),
                        isUpdate: isUpdate)
        }
        if let previous = record.items[item.identity] {
            guard item.modified > previous.modified else {
                SecretWipe.wipe(secret.value)
                report.unchanged += 1
                return nil
            }
            // Newer in the source: it replaces what the earlier import made (if still there),
            // unless that was changed in Keywell later still.
            if let old = UUID(uuidString: previous.keywellItem), try store.secretServiceContains(old, in: keychain) {
                if try store.secretServiceItem(old, in: keychain).modified > dates.modified {
                    SecretWipe.wipe(secret.value)
                    record.items[item.identity]?.modified = item.modified
                    report.unchanged += 1
                    return nil
                }
                return planned(replacing: old, isUpdate: true)
            }
            return planned(replacing: nil, isUpdate: true)
        }
        // Already there (the same item through another file, or a lost state file): recorded, not added.
        if let existing = try sameItem(as: item, secret: secret, in: keychain) {
            SecretWipe.wipe(secret.value)
            record.items[item.identity] = .init(modified: item.modified, keywellItem: existing.uuidString)
            report.unchanged += 1
            return nil
        }
        return planned(replacing: nil, isUpdate: false)
    }

    /// An item with exactly these attributes, this label and this secret.
    private func sameItem(as item: KeyringItem, secret: SecretServiceSecret, in keychain: String) throws(KeychainError) -> UUID? {
        let candidates = try store.secretServiceSearch(item.attributes, in: keychain)
        guard !candidates.isEmpty else { return nil }
        let secrets = try store.secretServiceSecrets(candidates, in: keychain)
        defer { for value in secrets.values { SecretWipe.wipe(value.value) } }
        for id in candidates {
            let existing = try store.secretServiceItem(id, in: keychain)
            if existing.attributes == item.attributes, existing.label == item.label, secrets[id]?.value == secret.value { return id }
        }
        return nil
    }

    /// The keyring `default` names becomes the default keychain, once, if it was imported.
    private func applyDefaultFile(_ state: inout MigrationState) {
        guard !state.defaultApplied, let name = folder.defaultKeyring() else { return }
        guard let source = state.sources.values.first(where: { $0.keyring == name && $0.format != .libsecretFile }) else { return }
        do throws(KeychainError) {
            try store.registry.setDefaultKeychain(source.keychain)
            state.defaultApplied = true
            logger.info("keyring migration: \(source.keychain) is the default keychain, as gnome-keyring's default file says")
        } catch {
            logger.warning("keyring migration: cannot make \(source.keychain) the default: \(error.wireMessage)")
        }
    }

    private static func identity(of path: String, bytes: [UInt8], keyring: String) throws(KeyringReadError) -> MigrationState.FileIdentity {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw .corrupt(keyring: keyring, reason: "cannot stat \(path)") }
        return MigrationState.FileIdentity(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino),
            modifiedNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
            size: Int64(info.st_size), sha256: KeyringDigest.sha256Hex(bytes))
    }
}
