import Foundation
import GRDB
import KeywellProtocol
import KeywellSystem

/// What to do with an imported item that an item of the target keychain already stands for.
public enum ImportPolicy: String, Sendable, CaseIterable {
    /// Keep the existing item.
    case skip
    /// Put the imported item in its place.
    case replace
    /// Replace only when the imported item was modified later.
    case newer
}

/// What an import did, in item counts.
public struct ImportSummary: Sendable, Equatable {
    public var added = 0
    public var replaced = 0
    public var skipped = 0
}

/// Encrypted export and import (docs/export-import.md): every item with every attribute, its
/// free-form rows and its secret, in the format of `ExportFile` and `ExportRecord`.
extension KeychainStore {
    /// Writes the items of `keychains` (names or paths, each unlocked) to `fd` sealed under
    /// `passphrase`, with the daemon's Argon2id cost. Returns the number of items written and of
    /// ThisDeviceOnly items left out (`Accessibility.isThisDeviceOnly`: they stay on this
    /// machine). Nothing is written when a keychain is locked or missing, or the items exceed the caps.
    ///
    /// `screen`: the caller's access control, as in `copyMatching`. An export hands every secret
    /// to whoever knows the passphrase it chose, so it is a read of each item: items the caller is
    /// not trusted with are asked about in one question before anything is written, hidden ones
    /// (a sandboxed caller's view) stay behind.
    func exportKeychains(
        _ keychains: [String], to fd: Int32, passphrase: SecretBytes, screen: (any ItemAccessScreening)? = nil
    ) throws(KeychainError) -> (items: Int, thisDeviceOnly: Int) {
        guard !keychains.isEmpty, keychains.count <= ServiceLimits.keychainListLength else {
            throw .param("name between 1 and \(ServiceLimits.keychainListLength) keychains to export")
        }
        var files: [KeychainFile] = []
        for name in keychains {
            let file = try file(at: location(name))
            if !files.contains(where: { $0 === file }) { files.append(file) }
        }
        var contents: [(file: KeychainFile, items: [(KeychainItem, [String: String])])] = []
        var total = 0
        var thisDeviceOnly = 0
        // An export has no u_AuthUI: untrusted items are always asked about.
        var round = screen.map { AccessScreeningRound<ItemToAsk>($0) }
        for file in files {
            let (_, integrity) = try file.keys()
            let items = try file.database.snapshot { db in
                let all = try ItemTable.fetch(ItemFilter(itemClass: nil), limit: .all, db)
                let lists = try ItemIntegrity.check(all, keychain: file.uuid, key: integrity, path: file.location.path, db)
                var items = all.filter { !$0.accessibility.isThisDeviceOnly }
                thisDeviceOnly += all.count - items.count
                if let kept = round?.admitted(items, of: file, lists: lists) { items = kept.map { items[$0] } }
                return try items.map { ($0, try FreeformAttributeTable.attributes(itemID: $0.rowID!, db)) }
            }
            total += items.count
            guard total <= ExportLimits.itemsPerFile else {
                throw KeychainError(SecStatus.dataTooLarge, detail: "an export file holds at most \(ExportLimits.itemsPerFile) items")
            }
            contents.append((file, items))
        }
        try round?.askOnce(of: self)
        var writer = try ExportFile.Writer(passphrase: passphrase, kdf: kdf)
        var output = ExportOutput(file: FileDescriptor(rawValue: fd))
        try output.write(writer.header)
        for (file, items) in contents {
            let key = try file.masterKey()
            try output.write(writer.seal(ExportRecord.keychain(file.location.displayName)))
            for (item, freeform) in items {
                let exported = ExportedItem(
                    keychain: file.location.displayName, itemClass: item.itemClass, uuid: item.uuid,
                    attributes: item.attributes, freeform: freeform,
                    secret: try ItemSealing.open(item, keychain: file.uuid, key: key))
                let record = ExportRecord.item(exported)
                defer { SecretWipe.wipe(record) }
                guard record.count <= ExportLimits.bytesPerRecord else {
                    throw KeychainError(SecStatus.dataTooLarge, detail: "an item is larger than \(ExportLimits.bytesPerRecord >> 20) MiB")
                }
                try output.write(writer.seal(record))
            }
            file.markUsed()
        }
        try output.write(writer.seal(ExportRecord.end(itemCount: total), final: true))
        return (total, thisDeviceOnly)
    }

    /// The keychains an export file names (in file order) and its number of items: what the CLI
    /// needs to create missing keychains before importing.
    func inspectExport(from fd: Int32, passphrase: SecretBytes) throws(KeychainError) -> (keychains: [String], itemCount: Int) {
        let contents = try Self.readExport(fd, passphrase: passphrase)
        return (contents.keychains, contents.items.count)
    }

    /// Imports every item of the export file at `fd` in one transaction per keychain, all
    /// committed together or none: into `keychain` when given, else each into the keychain of
    /// its name (which must exist). Conflicts follow `policy` (docs/export-import.md, "Merging").
    func importExport(
        from fd: Int32, passphrase: SecretBytes, into keychain: String?, policy: ImportPolicy
    ) throws(KeychainError) -> ImportSummary {
        let contents = try Self.readExport(fd, passphrase: passphrase)
        var targets: [String] = []
        var targetIndex: [String: Int] = [:]
        var files: [KeychainFile] = []
        var groups: [[Int]] = []
        for (index, item) in contents.items.enumerated() {
            let name = keychain ?? item.keychain
            if targetIndex[name] == nil {
                let file = try file(at: location(name))
                if let known = files.firstIndex(where: { $0 === file }) {
                    targetIndex[name] = known
                } else {
                    targetIndex[name] = files.count
                    targets.append(name)
                    files.append(file)
                    groups.append([])
                }
            }
            groups[targetIndex[name]!].append(index)
        }
        var keys: [(master: SecretBytes, integrity: IntegrityKey)] = []
        for file in files { keys.append(try file.keys()) }
        guard !files.isEmpty else { return ImportSummary() }
        let now = AttributeValue.integer(millisecondsSince1970(Date()))
        let summary = try KeychainDatabase.writeTogether(files.map(\.database)) { dbs in
            var summary = ImportSummary()
            for (index, db) in dbs.enumerated() {
                var merge = ImportMerge(keychain: files[index].uuid, key: keys[index].master, integrity: keys[index].integrity,
                                        policy: policy, now: now, db: db)
                for itemIndex in groups[index] { try merge.add(contents.items[itemIndex], into: &summary) }
            }
            return summary
        }
        files.forEach { $0.markUsed() }
        // Imported AfterFirstUnlock items, and replaced ones that had copies, get theirs anew.
        for (index, file) in files.enumerated() where summary.added + summary.replaced > 0 {
            let survivors = groups[index].contains { contents.items[$0].accessibility.survivesAutomaticLock }
            if survivors || !file.sessionSecrets.isEmpty { file.keepSessionCopies(logger: logger) }
        }
        if summary.added + summary.replaced > 0 { emit(files.map { .itemsChanged($0.location.displayName) }) }
        return summary
    }

    private struct ExportContents {
        var keychains: [String] = []
        var items: [ExportedItem] = []
    }

    /// The whole file decrypted and decoded, or an error and nothing.
    private static func readExport(_ fd: Int32, passphrase: SecretBytes) throws(KeychainError) -> ExportContents {
        let records = try ExportFile.open(try ExportInput.readAll(fd), passphrase: passphrase)
        var contents = ExportContents()
        var current: String?
        for (index, record) in records.enumerated() {
            switch try ExportRecord.decode(record, keychain: current) {
            case .keychain(let name):
                current = name
                if !contents.keychains.contains(name) { contents.keychains.append(name) }
            case .item(let item):
                guard contents.items.count < ExportLimits.itemsPerFile else {
                    throw KeychainError(SecStatus.dataTooLarge, detail: "an export file holds at most \(ExportLimits.itemsPerFile) items")
                }
                contents.items.append(item)
            case .end(let count):
                guard index == records.count - 1 else { throw ExportRecord.malformed("an end record before the last") }
                guard count == contents.items.count else { throw ExportRecord.malformed("the item count disagrees") }
            }
        }
        guard let last = records.last, case .end = try ExportRecord.decode(last, keychain: current) else {
            throw ExportRecord.malformed("the last record is not the end")
        }
        return contents
    }
}

/// Adds imported items to one keychain inside its write transaction.
private struct ImportMerge {
    let keychain: UUID
    let key: SecretBytes
    let integrity: IntegrityKey
    let policy: ImportPolicy
    let now: AttributeValue
    let db: Database
    /// Rows this import inserted.
    var added: Set<Int64> = []

    mutating func add(_ exported: ExportedItem, into summary: inout ImportSummary) throws {
        var attributes = exported.attributes
        attributes[.accessGroup] = attributes[.accessGroup] ?? .text(KeychainItem.defaultAccessGroup)
        attributes[.accessibility] = attributes[.accessibility] ?? .text(KeychainItem.defaultAccessibility)
        attributes[.creationDate] = attributes[.creationDate] ?? now
        attributes[.modificationDate] = attributes[.modificationDate] ?? now
        var item = KeychainItem(rowID: nil, uuid: exported.uuid, itemClass: exported.itemClass, attributes: attributes,
                                sealedSecret: Data())
        let groupText: String? = if case .text(let group)? = attributes[.accessGroup] { group } else { nil }
        let isSecretService = FreeformItem.isFreeform(accessGroup: groupText)
        let sameID = try rowID(uuid: item.uuid)
        let existing: Int64?
        if isSecretService {
            let visible = exported.freeform.filter { !FreeformItem.hiddenRows.contains($0.key) }
            // Items the file holds twice with the same attributes (the Secret Service allows it)
            // do not collide with each other: only with what the keychain had before.
            existing = try sameID ?? KeychainStore.itemWithExactly(visible, excluding: added, db)
        } else {
            existing = try rowID(primaryKeyOf: item)
        }
        if let existing {
            let keep: Bool
            switch policy {
            case .skip: keep = true
            case .replace: keep = false
            case .newer: keep = exported.modified <= (try modified(rowID: existing))
            }
            if keep {
                summary.skipped += 1
                return
            }
            try FreeformAttributeTable.deleteAll(itemID: existing, db)
            try ItemTable.delete(rowID: existing, db)
            summary.replaced += 1
        } else {
            summary.added += 1
        }
        // Another item holds this id (made here, or an earlier import under other attributes): a new id.
        if try rowID(uuid: item.uuid) != nil {
            item = KeychainItem(rowID: nil, uuid: UUID.timeOrdered(at: Date()), itemClass: item.itemClass,
                                attributes: item.attributes, sealedSecret: Data())
            if isSecretService { item.attributes[.accessGroup] = .text(FreeformItem.accessGroup(for: item.uuid)) }
        }
        item.sealedSecret = ItemSealing.seal(exported.secret, for: item, keychain: keychain, key: key)
        // An export carries no access lists: imported items trust any application, as migrated
        // ones do (docs/access-control.md, "What a new item gets").
        let access = AccessList.anyApplication
        let mac = ItemIntegrity.mac(for: item, freeform: exported.freeform, access: access, keychain: keychain, key: integrity)
        let rowID = try ItemTable.insert(item, access: access, mac: mac, db)
        try FreeformAttributeTable.insert(exported.freeform, itemID: rowID, db)
        added.insert(rowID)
    }

    private func rowID(uuid: UUID) throws -> Int64? {
        let rows = try RawStatement(db, sql: "SELECT id FROM item WHERE uuid = ?", values: [uuid.data.databaseValue])
        defer { rows.finish() }
        return try rows.step() ? rows.integer(0) : nil
    }

    /// The item of the same class with the same primary key, through the class's unique index.
    private func rowID(primaryKeyOf item: KeychainItem) throws -> Int64? {
        let columns = item.itemClass.primaryKey.map {
            MatchColumn(attribute: $0, form: $0.kind == .integer ? .number : .normalized)
        }
        let sql = "SELECT id FROM item WHERE class = '\(item.itemClass.rawValue)' AND "
            + columns.map { "\($0.name) = ?" }.joined(separator: " AND ")
        let rows = try RawStatement(db, sql: sql, values: columns.map { $0.value(for: item) })
        defer { rows.finish() }
        return try rows.step() ? rows.integer(0) : nil
    }

    private func modified(rowID: Int64) throws -> Int64 {
        let rows = try RawStatement(db, sql: "SELECT mdat FROM item WHERE id = ?", values: [rowID.databaseValue])
        defer { rows.finish() }
        return try rows.step() && !rows.isNull(0) ? rows.integer(0) : 0
    }
}

/// Writes the file through the descriptor the caller passed (the daemon never opens the path).
private struct ExportOutput {
    let file: FileDescriptor
    var written = 0

    mutating func write(_ bytes: [UInt8]) throws(KeychainError) {
        written += bytes.count
        guard written <= ExportLimits.bytesPerFile else {
            throw KeychainError(SecStatus.dataTooLarge, detail: "an export file holds at most \(ExportLimits.bytesPerFile >> 20) MiB")
        }
        do { try file.writeAll(bytes) } catch {
            throw KeychainError(error == .noSpace ? SecStatus.diskFull : SecStatus.io, detail: "writing the export file: \(error)")
        }
    }
}

/// Reads the file from the descriptor the caller passed: a regular file only (a pipe or FIFO
/// could keep a worker waiting), at most the file cap.
enum ExportInput {
    static func readAll(_ fd: Int32) throws(KeychainError) -> [UInt8] {
        let file = FileDescriptor(rawValue: fd)
        let tooLarge = KeychainError(SecStatus.dataTooLarge, detail: "export files hold at most \(ExportLimits.bytesPerFile >> 20) MiB")
        guard let info = try? file.status(), (info.st_mode & S_IFMT) == S_IFREG else {
            throw .param("the export file must be a regular file")
        }
        guard Int(info.st_size) <= ExportLimits.bytesPerFile else { throw tooLarge }
        // From offset 0 whatever the descriptor's own offset, which stays as the caller left it.
        let bytes: [UInt8]?
        do { bytes = try file.readAll(limit: ExportLimits.bytesPerFile, fromAbsoluteOffset: 0) } catch {
            throw KeychainError(SecStatus.io, detail: "reading the export file: \(error)")
        }
        // A file that grew past the cap since fstat.
        guard let bytes else { throw tooLarge }
        return bytes
    }
}

extension KeychainStore {
    /// The items of `keychain` that may leave this machine, in Secret Service order, and how
    /// many ThisDeviceOnly items stay behind (`Accessibility.isThisDeviceOnly`): what an export
    /// to another keyring takes. Works while locked.
    func portableItemIDs(in keychain: String) throws(KeychainError) -> (ids: [UUID], thisDeviceOnly: Int) {
        let all = try itemIDs(in: keychain)
        let file = try file(at: location(keychain))
        var staying = Set<UUID>()
        try file.database.read { db in
            for itemClass in ItemClass.allCases {
                for accessibility in Accessibility.allCases where accessibility.isThisDeviceOnly {
                    let filter = ItemFilter(itemClass: itemClass, attributes: [.accessibility: .text(accessibility.rawValue)])
                    for item in try ItemTable.fetch(filter, limit: .all, columns: .keyAndSecret, db) { staying.insert(item.uuid) }
                }
            }
        }
        return (all.filter { !staying.contains($0) }, staying.count)
    }
}
