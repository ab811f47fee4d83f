import Foundation
import Glibc
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// The calls that work through a handle: folders and entries of the wallet it opened. A handle
/// that is not the caller's application's gets kwalletd's empty answer.
extension KWalletObject {
    /// A handle's wallet as the caller sees it, and the folder and key the call names, checked
    /// against their caps (the key is the pattern of the `read…List` calls).
    struct OpenWallet {
        let handle: KWalletHandles.Handle
        let wallet: KWalletFolder
        let folder: String
        let key: String
        var keychain: String { handle.keychain }

        /// Engine errors as the wallet's.
        func run<T>(_ body: () throws(KeychainError) -> T) throws(DBusError) -> T {
            do {
                return try body()
            } catch {
                throw error.secretServiceError(handle.wallet)
            }
        }
    }

    /// The wallet `number` opened for `appID`, or nil when the handle is not that application's.
    private func open(_ number: Int32, _ appID: String, folder: String? = nil, key: String? = nil,
                      call: CallContext) throws(DBusError) -> OpenWallet? {
        guard let handle = service.handles.handle(number, appID: appID) else { return nil }
        let wallet = KWalletFolder(collection: service.context.directory.unchecked(.keychain(handle.keychain)),
                                   access: service.context.callerAccess(call))
        let folder = try folder.map { name throws(DBusError) in try Self.name(name, "folder") } ?? ""
        let key = try key.map { name throws(DBusError) in try Self.name(name, "key") } ?? ""
        return OpenWallet(handle: handle, wallet: wallet, folder: folder, key: key)
    }

    func folderList(handle: Int32, appid: String, call: CallContext) throws(DBusError) -> [String] {
        guard let open = try open(handle, appid, call: call) else { return [] }
        let folders = try open.run { () throws(KeychainError) in try open.wallet.folders() }
        return folders.union(emptyFolders(open.keychain)).sorted()
    }

    func hasFolder(handle: Int32, folder: String, appid: String, call: CallContext) throws(DBusError) -> Bool {
        guard let open = try open(handle, appid, folder: folder, call: call) else { return false }
        return try open.run { () throws(KeychainError) in try open.wallet.folders().contains(open.folder) }
            || emptyFolders(open.keychain).contains(open.folder)
    }

    func createFolder(handle: Int32, folder: String, appid: String, call: CallContext) throws(DBusError) -> Bool {
        guard let open = try open(handle, appid, folder: folder, call: call) else { return false }
        let existing = try open.run { () throws(KeychainError) in try open.wallet.folders() }
        if !existing.contains(open.folder) {
            let added = service.emptyFolders.withLock { folders -> Bool in
                guard (folders[open.keychain]?.count ?? 0) < KWalletLimits.emptyFolders else { return false }
                return folders[open.keychain, default: []].insert(open.folder).inserted
            }
            if added { service.emit(KWalletProtocol.Member.folderListUpdated, [.string(open.handle.wallet)]) }
        }
        return true
    }

    func removeFolder(handle: Int32, folder: String, appid: String, call: CallContext) throws(DBusError) -> Bool {
        guard let open = try open(handle, appid, folder: folder, call: call) else { return false }
        try open.run { () throws(KeychainError) in try open.wallet.removeFolder(open.folder) }
        _ = service.emptyFolders.withLock { $0[open.keychain]?.remove(open.folder) }
        service.emit(KWalletProtocol.Member.folderListUpdated, [.string(open.handle.wallet)])
        return true
    }

    func entryList(handle: Int32, folder: String, appid: String, call: CallContext) throws(DBusError) -> [String] {
        guard let open = try open(handle, appid, folder: folder, call: call) else { return [] }
        let items = try open.run { () throws(KeychainError) in try open.wallet.items(in: open.folder) }
        return Array(Set(items.compactMap { $0.attributes[KWalletProtocol.keyAttribute] })).sorted()
    }

    func hasEntry(handle: Int32, folder: String, key: String, appid: String, call: CallContext) throws(DBusError) -> Bool {
        guard let open = try open(handle, appid, folder: folder, key: key, call: call) else { return false }
        return try open.run { () throws(KeychainError) in try open.wallet.item(folder: open.folder, key: open.key) } != nil
    }

    func entryType(handle: Int32, folder: String, key: String, appid: String, call: CallContext) throws(DBusError) -> Int32 {
        guard let open = try open(handle, appid, folder: folder, key: key, call: call) else { return 0 }
        let item = try open.run { () throws(KeychainError) in try open.wallet.item(folder: open.folder, key: open.key) }
        return item.map { KWalletEntry.Kind(typeAttribute: $0.attributes[KWalletProtocol.typeAttribute]).rawValue } ?? 0
    }

    // The three reads of one entry may have to ask (`org.keywell.MayAsk`): their answer may be
    // the question and the rest, for a worker.

    func readEntry(
        handle: Int32, folder: String, key: String, appid: String, call: CallContext
    ) throws(DBusError) -> DBusAnswer<[UInt8], DBusError> {
        guard let open = try open(handle, appid, folder: folder, key: key, call: call) else { return .answered([]) }
        let order = order
        return try read(open).map { entry throws(DBusError) in entry?.rawValue(order: order) ?? [] }
    }

    func readMap(
        handle: Int32, folder: String, key: String, appid: String, call: CallContext
    ) throws(DBusError) -> DBusAnswer<[UInt8], DBusError> {
        guard let open = try open(handle, appid, folder: folder, key: key, call: call) else { return .answered([]) }
        let order = order
        return try read(open).map { entry throws(DBusError) in
            guard let entry, case .map = entry else { return [] }
            return entry.rawValue(order: order)
        }
    }

    func readPassword(
        handle: Int32, folder: String, key: String, appid: String, call: CallContext
    ) throws(DBusError) -> DBusAnswer<SecretBytes, DBusError> {
        guard let open = try open(handle, appid, folder: folder, key: key, call: call) else { return .answered(SecretBytes(transientCount: 0)) }
        return try read(open).map { entry throws(DBusError) in
            guard case .password(let text)? = entry else { return SecretBytes(transientCount: 0) }
            return text
        }
    }

    func entriesList(handle: Int32, folder: String, appid: String, call: CallContext) throws(DBusError) -> DBusValue {
        try list(handle, folder, pattern: nil, appid, .any, call)
    }

    func mapList(handle: Int32, folder: String, appid: String, call: CallContext) throws(DBusError) -> DBusValue {
        try list(handle, folder, pattern: nil, appid, .maps, call)
    }

    func passwordList(handle: Int32, folder: String, appid: String, call: CallContext) throws(DBusError) -> DBusValue {
        try list(handle, folder, pattern: nil, appid, .passwords, call)
    }

    func readEntryList(handle: Int32, folder: String, key: String, appid: String, call: CallContext) throws(DBusError) -> DBusValue {
        try list(handle, folder, pattern: key, appid, .any, call)
    }

    func readMapList(handle: Int32, folder: String, key: String, appid: String, call: CallContext) throws(DBusError) -> DBusValue {
        try list(handle, folder, pattern: key, appid, .maps, call)
    }

    func readPasswordList(handle: Int32, folder: String, key: String, appid: String,
                          call: CallContext) throws(DBusError) -> DBusValue {
        try list(handle, folder, pattern: key, appid, .passwords, call)
    }

    private enum ListedKind { case any, maps, passwords }

    /// The folder's entries of one kind whose keys match `pattern` (every key when nil), by key.
    private func list(_ number: Int32, _ folder: String, pattern: String?, _ appid: String, _ kind: ListedKind,
                      _ call: CallContext) throws(DBusError) -> DBusValue {
        guard let open = try open(number, appid, folder: folder, key: pattern, call: call) else {
            return .stringVariantDict([(String, DBusValue)]())
        }
        let pattern = pattern == nil ? "*" : open.key
        let items = try open.run { () throws(KeychainError) in try open.wallet.items(in: open.folder) }.filter { item in
            fnmatch(pattern, item.attributes[KWalletProtocol.keyAttribute] ?? "", 0) == 0
        }
        let entries = try open.run { () throws(KeychainError) in try open.wallet.entries(items) }
        var values: [(String, DBusValue)] = []
        for (item, entry) in entries {
            let name = item.attributes[KWalletProtocol.keyAttribute] ?? ""
            switch (kind, entry) {
            case (.any, _), (.maps, .map): values.append((name, .bytes(entry.rawValue(order: order))))
            // The password stays in locked memory into the reply (docs/kwallet.md, "Passwords in memory").
            case (.passwords, .password(let text)): values.append((name, .secretString(text)))
            default: break
            }
        }
        return .stringVariantDict(values)
    }

    func writeEntry(handle: Int32, folder: String, key: String, value: [UInt8], entryType: Int32, appid: String,
                    call: CallContext) throws(DBusError) -> Int32 {
        try write(handle, folder, key, appid, call) { () throws(DBusError) in
            try Self.entry(value, kind: KWalletEntry.Kind(rawValue: entryType) ?? .stream)
        }
    }

    func writeEntry(handle: Int32, folder: String, key: String, value: [UInt8], appid: String,
                    call: CallContext) throws(DBusError) -> Int32 {
        try write(handle, folder, key, appid, call) { () throws(DBusError) in try Self.entry(value, kind: .stream) }
    }

    func writeMap(handle: Int32, folder: String, key: String, value: [UInt8], appid: String,
                  call: CallContext) throws(DBusError) -> Int32 {
        try write(handle, folder, key, appid, call) { () throws(DBusError) in try Self.entry(value, kind: .map) }
    }

    func writePassword(handle: Int32, folder: String, key: String, value: SecretBytes, appid: String,
                       call: CallContext) throws(DBusError) -> Int32 {
        try write(handle, folder, key, appid, call) { () throws(DBusError) in
            try Self.checkSize(value.count)
            return .password(value)
        }
    }

    /// Writes the entry `make` checks and builds (after the handle and names are checked).
    private func write(_ number: Int32, _ folder: String, _ key: String, _ appid: String, _ call: CallContext,
                       _ make: () throws(DBusError) -> KWalletEntry) throws(DBusError) -> Int32 {
        guard let open = try open(number, appid, folder: folder, key: key, call: call) else { return -1 }
        let entry = try make()
        try open.run { () throws(KeychainError) in try open.wallet.write(entry, folder: open.folder, key: open.key) }
        _ = service.emptyFolders.withLock { $0[open.keychain]?.remove(open.folder) }
        return 0
    }

    func removeEntry(handle: Int32, folder: String, key: String, appid: String, call: CallContext) throws(DBusError) -> Int32 {
        guard let open = try open(handle, appid, folder: folder, key: key, call: call) else { return -1 }
        let removed = try open.run { () throws(KeychainError) in try open.wallet.remove(folder: open.folder, key: open.key) }
        if removed {
            service.emit(KWalletProtocol.Member.folderUpdated, [.string(open.handle.wallet), .string(open.folder)])
            return 0
        }
        // kwalletd: 0 when the folder is missing too, −3 when only the entry is.
        let folderExists = try open.run { () throws(KeychainError) in try open.wallet.folders().contains(open.folder) }
            || emptyFolders(open.keychain).contains(open.folder)
        return folderExists ? -3 : 0
    }

    func renameEntry(handle: Int32, folder: String, oldName: String, newName: String, appid: String,
                     call: CallContext) throws(DBusError) -> Int32 {
        guard let open = try open(handle, appid, folder: folder, key: oldName, call: call) else { return -1 }
        let newKey = try Self.name(newName, "key")
        return try open.run { () throws(KeychainError) in try open.wallet.rename(folder: open.folder, from: open.key, to: newKey) }
    }

    private func emptyFolders(_ keychain: String) -> Set<String> {
        service.emptyFolders.withLock { $0[keychain] ?? [] }
    }

    /// Errors name the folder (as kwalletd's do), not the wallet; so do those of the question.
    private func read(_ open: OpenWallet) throws(DBusError) -> DBusAnswer<KWalletEntry?, DBusError> {
        let folder = open.folder
        let answer: DBusAnswer<KWalletEntry?, KeychainError>
        do {
            answer = try open.wallet.entry(folder: folder, key: open.key)
        } catch {
            throw error.secretServiceError(folder)
        }
        switch answer {
        case .answered(let entry): return .answered(entry)
        case .afterQuestion(let question):
            return .afterQuestion(DBusQuestion { () throws(DBusError) -> KWalletEntry? in
                do throws(KeychainError) {
                    return try question.askAndFinish()
                } catch {
                    throw error.secretServiceError(folder)
                }
            })
        }
    }

    /// The entry a write call carries, checked against the caps.
    private static func entry(_ bytes: [UInt8], kind: KWalletEntry.Kind) throws(DBusError) -> KWalletEntry {
        try checkSize(bytes.count)
        do {
            return try KWalletEntry.fromRaw(bytes, kind: kind)
        } catch {
            throw .invalidArgs("The \(kind == .map ? "map" : "password") is not a valid QDataStream value: \(error)")
        }
    }

    private static func checkSize(_ bytes: Int) throws(DBusError) {
        guard bytes <= KWalletLimits.entryBytes else {
            throw DBusError(name: DBusError.Name.limitsExceeded, message: "The entry is \(bytes) bytes; at most \(KWalletLimits.entryBytes) are kept (docs/kwallet.md, \"Limits\")")
        }
    }

    private static func name(_ name: String, _ what: String) throws(DBusError) -> String {
        guard name.utf8.count <= KWalletLimits.nameBytes else {
            throw DBusError(name: DBusError.Name.limitsExceeded, message: "The \(what) name is \(name.utf8.count) bytes; at most \(KWalletLimits.nameBytes) are allowed")
        }
        return name
    }
}
