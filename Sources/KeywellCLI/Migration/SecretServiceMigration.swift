import FoundationEssentials
import Glibc
import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// Copies every collection and item of the Secret Service that owns `org.freedesktop.secrets`
/// into keywelld, as a client of both (docs/migration.md, "From any running Secret Service"):
/// a collection goes to the keychain with the same label (the one the alias `login` names for
/// the source's login collection), made through keywelld's own CreateCollection prompt when
/// missing; the source's `default` alias is honoured. Re-runnable: an item whose attributes
/// match one already there exactly is skipped when identical, replaced when the source's is
/// newer, kept otherwise.
struct SecretServiceMigration {
    let source: SecretServiceClient
    let target: SecretServiceClient
    /// Says what happens as it goes.
    let say: (String) -> Void

    struct Counts {
        var copied = 0
        var updated = 0
        var identical = 0
        var keptNewer = 0
        var failed = 0
    }

    struct Outcome {
        var counts = Counts()
        var collections = 0
        var skippedCollections: [String] = []
    }

    typealias Names = SecretServiceProtocol

    func run() throws(MigrationError) -> Outcome {
        try dbus { () throws(DBusError) in
            try source.openSession()
            try target.openSession()
        }
        var outcome = Outcome()
        let sourceDefault = try? source.readAlias("default")
        let sourceLogin = try? source.readAlias("login")
        let sourceSession = try? source.readAlias("session")
        var targetOfSource: [String: String] = [:]
        for collection in try source.collections() {
            // In memory only, and gone at logout: nothing to keep.
            if collection == sourceSession || collection.hasSuffix("/collection/session") { continue }
            let label = (try? source.label(of: collection)) ?? ""
            let shown = label.isEmpty ? collection : "“\(label)”"
            do throws(MigrationError) {
                guard try unlockSource(collection) else {
                    outcome.skippedCollections.append("\(shown): still locked (its unlock prompt was dismissed)")
                    continue
                }
                let isLogin = collection == sourceLogin || collection.hasSuffix("/collection/login")
                guard let destination = try destination(for: label.isEmpty ? lastSegment(collection) : label, isLogin: isLogin) else {
                    outcome.skippedCollections.append("\(shown): Keywell's keychain for it was not made (its prompt was dismissed)")
                    continue
                }
                targetOfSource[collection] = destination
                let counts = try copyItems(of: collection, into: destination)
                outcome.collections += 1
                outcome.counts.copied += counts.copied
                outcome.counts.updated += counts.updated
                outcome.counts.identical += counts.identical
                outcome.counts.keptNewer += counts.keptNewer
                outcome.counts.failed += counts.failed
                say("\(shown) → \(destination): \(Self.describe(counts))")
            } catch .tooMany(let text) {
                throw .tooMany(text)
            } catch {
                outcome.skippedCollections.append("\(shown): \(error.message)")
            }
        }
        if let sourceDefault, let destination = targetOfSource[sourceDefault],
           (try? target.readAlias("default")) != destination {
            do throws(DBusError) {
                try target.setAlias("default", to: destination)
                say("the default keychain is now \(destination), as the default collection was there")
            } catch {
                outcome.skippedCollections.append("the default alias: \(error.message)")
            }
        }
        return outcome
    }

    static func describe(_ counts: Counts) -> String {
        var parts = ["\(counts.copied) copied", "\(counts.updated) updated", "\(counts.identical) already there (skipped)"]
        if counts.keptNewer > 0 { parts.append("\(counts.keptNewer) kept (Keywell's is newer)") }
        if counts.failed > 0 { parts.append("\(counts.failed) failed") }
        return parts.joined(separator: ", ")
    }

    private func lastSegment(_ path: String) -> String {
        String(path.split(separator: "/").last ?? "")
    }

    private func unlockSource(_ collection: String) throws(MigrationError) -> Bool {
        guard try dbus({ () throws(DBusError) in try source.isLocked(collection) }) else { return true }
        say("\(collection) is locked: \(source.description) asks for its password")
        return try dbus { () throws(DBusError) in try source.unlock(collection) }
    }

    /// Keywell's collection for a source collection: the login keychain for its login
    /// collection, else the keychain whose label is `label`; made (keywelld prompts for its
    /// password) when there is none, unlocked (keywelld prompts) when locked. Nil when dismissed.
    private func destination(for label: String, isLogin: Bool) throws(MigrationError) -> String? {
        let existing: String?
        if isLogin {
            existing = try dbus { () throws(DBusError) in try target.readAlias("login") }
        } else {
            existing = try target.collections().first { (try? target.label(of: $0)) == label }
        }
        guard let existing else {
            say("making Keywell's keychain for “\(label)”: keywelld asks for its new password")
            return try dbus { () throws(DBusError) in try target.createCollection(label: label, alias: isLogin ? "login" : "") }
        }
        guard try dbus({ () throws(DBusError) in try target.isLocked(existing) }) else { return existing }
        say("\(existing) is locked: keywelld asks for its password")
        return try dbus { () throws(DBusError) in try target.unlock(existing) } ? existing : nil
    }

    private func copyItems(of collection: String, into destination: String) throws(MigrationError) -> Counts {
        var counts = Counts()
        let items = try source.items(of: collection)
        var start = 0
        while start < items.count {
            let batch = Array(items[start..<min(items.count, start + ServiceLimits.migrationSecretsPerCall)])
            start += batch.count
            var secrets = try source.secrets(of: batch)
            defer { for key in secrets.keys { wipe(&secrets[key]!.value) } }
            for item in batch {
                guard let secret = secrets[item] else {
                    counts.failed += 1
                    say("\(item): \(source.description) gave no secret for it")
                    continue
                }
                do throws(MigrationError) {
                    try copy(item, secret, into: destination, &counts)
                } catch .tooMany(let text) {
                    throw .tooMany(text)
                } catch {
                    counts.failed += 1
                    say("\(item): \(error.message)")
                }
            }
        }
        return counts
    }

    private func copy(_ item: String, _ secret: SecretServiceClient.Secret, into destination: String,
                      _ counts: inout Counts) throws(MigrationError) {
        let info = try source.itemInfo(item)
        // Same attributes exactly: the same item, copied before (or made here meanwhile).
        let candidates = try target.search(destination, info.attributes)
        var match: (path: String, info: SecretServiceClient.ItemInfo)?
        for candidate in candidates {
            let candidateInfo = try target.itemInfo(candidate)
            if candidateInfo.attributes == info.attributes { match = (candidate, candidateInfo); break }
        }
        guard let match else {
            try dbus { () throws(DBusError) in try target.createItem(in: destination, info, secret, replace: false) }
            counts.copied += 1
            return
        }
        var present = try target.secrets(of: [match.path])
        defer { for key in present.keys { wipe(&present[key]!.value) } }
        if let theirs = present[match.path], theirs.value == secret.value, theirs.contentType == secret.contentType,
           match.info.label == info.label {
            counts.identical += 1
        } else if info.modified > match.info.modified {
            try dbus { () throws(DBusError) in try target.createItem(in: destination, info, secret, replace: true) }
            counts.updated += 1
        } else {
            counts.keptNewer += 1
        }
    }

    private func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { SecretMemory.wipe($0) }
    }
}
