import Foundation
import Glibc
import KeywellCore
import KeywellDBus
import KeywellProtocol

/// The calls that work through a handle: folders and entries of the wallet it opened. A handle
/// that is not the caller's application's gets kwalletd's empty answer.
struct KWalletEntryCalls {
    let service: KWalletService
    let order: QDataStreamMap.Order

    func answer(_ call: DBusMethodCall) throws(DBusError) -> [DBusValue] {
        let arguments = call.arguments
        let number = try arguments.int32(at: 0)
        // The application id is always the last argument.
        let appID = try arguments.string(at: arguments.count - 1)
        guard let handle = service.handles.handle(number, appID: appID) else { return [Self.notOpen(call.member)] }
        let keychain = handle.keychain
        let wallet = KWalletFolder(collection: service.context.directory.unchecked(.keychain(keychain)),
                                   access: service.context.callerAccess(call), mayAsk: !call.connection.isOnIOThread)
        let folder = arguments.count > 2 ? try Self.name(arguments.string(at: 1), "folder") : ""
        // The key, or the pattern of the `read…List` calls (after the folder, when there is one).
        let key = arguments.count > 3 ? try Self.name(arguments.string(at: 2), "key") : ""
        func run<T>(_ body: () throws(KeychainError) -> T) throws(DBusError) -> T {
            do {
                return try body()
            } catch where error == KWalletFolder.mustAskOffIOThread {
                throw KWalletObject.retryOnWorker
            } catch {
                throw error.secretServiceError(handle.wallet)
            }
        }

        switch (call.member, call.signature.rawValue) {
        case ("folderList", _):
            let folders = try run { () throws(KeychainError) in try wallet.folders() }
            return [.stringArray(folders.union(emptyFolders(keychain)).sorted())]
        case ("hasFolder", _):
            return [.bool(try run { () throws(KeychainError) in try wallet.folders().contains(folder) } || emptyFolders(keychain).contains(folder))]
        case ("createFolder", _):
            let existing = try run { () throws(KeychainError) in try wallet.folders() }
            if !existing.contains(folder) {
                let added = service.emptyFolders.withLock { folders -> Bool in
                    guard (folders[keychain]?.count ?? 0) < KWalletLimits.emptyFolders else { return false }
                    return folders[keychain, default: []].insert(folder).inserted
                }
                if added { service.emit("folderListUpdated", [.string(handle.wallet)]) }
            }
            return [.bool(true)]
        case ("removeFolder", _):
            try run { () throws(KeychainError) in try wallet.removeFolder(folder) }
            _ = service.emptyFolders.withLock { $0[keychain]?.remove(folder) }
            service.emit("folderListUpdated", [.string(handle.wallet)])
            return [.bool(true)]
        case ("entryList", _):
            let items = try run { () throws(KeychainError) in try wallet.items(in: folder) }
            return [.stringArray(Array(Set(items.compactMap { $0.attributes[KWalletProtocol.keyAttribute] })).sorted())]
        case ("hasEntry", _):
            return [.bool(try run { () throws(KeychainError) in try wallet.item(folder: folder, key: key) } != nil)]
        case ("entryType", _):
            let item = try run { () throws(KeychainError) in try wallet.item(folder: folder, key: key) }
            return [.int32(item.map { KWalletEntry.Kind(typeAttribute: $0.attributes[KWalletProtocol.typeAttribute]).rawValue } ?? 0)]
        case ("readEntry", _), ("readMap", _), ("readPassword", _):
            let entry = try read(wallet, folder: folder, key: key)
            switch (call.member, entry) {
            case ("readPassword", .password(let text)?): return [.string(text)]
            case ("readPassword", _): return [.string("")]
            case ("readMap", .map?), ("readEntry", _?): return [.bytes(entry?.rawValue(order: order) ?? [])]
            default: return [.bytes([])]
            }
        case ("entriesList", _), ("mapList", _), ("passwordList", _),
             ("readEntryList", _), ("readMapList", _), ("readPasswordList", _):
            let pattern = call.member.hasPrefix("read") ? key : "*"
            let items = try run { () throws(KeychainError) in try wallet.items(in: folder) }.filter { item in
                fnmatch(pattern, item.attributes[KWalletProtocol.keyAttribute] ?? "", 0) == 0
            }
            let entries = try run { () throws(KeychainError) in try wallet.entries(items) }
            var values: [(String, DBusValue)] = []
            for (item, entry) in entries {
                let name = item.attributes[KWalletProtocol.keyAttribute] ?? ""
                switch (call.member, entry) {
                case ("mapList", .map), ("readMapList", .map), ("entriesList", _), ("readEntryList", _):
                    values.append((name, .bytes(entry.rawValue(order: order))))
                case ("passwordList", .password(let text)), ("readPasswordList", .password(let text)):
                    values.append((name, .string(text)))
                default: break
                }
            }
            return [.stringVariantDict(values)]
        case ("writeEntry", "issayis"), ("writeEntry", "issays"), ("writeMap", _), ("writePassword", _):
            let entry = try Self.entry(call)
            try run { () throws(KeychainError) in try wallet.write(entry, folder: folder, key: key) }
            _ = service.emptyFolders.withLock { $0[keychain]?.remove(folder) }
            return [.int32(0)]
        case ("removeEntry", _):
            let removed = try run { () throws(KeychainError) in try wallet.remove(folder: folder, key: key) }
            if removed {
                service.emit("folderUpdated", [.string(handle.wallet), .string(folder)])
                return [.int32(0)]
            }
            // kwalletd: 0 when the folder is missing too, −3 when only the entry is.
            let folderExists = try run { () throws(KeychainError) in try wallet.folders().contains(folder) } || emptyFolders(keychain).contains(folder)
            return [.int32(folderExists ? -3 : 0)]
        case ("renameEntry", _):
            let newKey = try Self.name(arguments.string(at: 3), "key")
            let result = try run { () throws(KeychainError) in try wallet.rename(folder: folder, from: key, to: newKey) }
            return [.int32(result)]
        default:
            throw .unknownMethod("No method \(call.member) with signature (\(call.signature.rawValue))")
        }
    }

    private func emptyFolders(_ keychain: String) -> Set<String> {
        service.emptyFolders.withLock { $0[keychain] ?? [] }
    }

    private func read(_ wallet: KWalletFolder, folder: String, key: String) throws(DBusError) -> KWalletEntry? {
        do {
            return try wallet.entry(folder: folder, key: key)
        } catch where error == KWalletFolder.mustAskOffIOThread {
            throw KWalletObject.retryOnWorker
        } catch {
            throw error.secretServiceError(folder)
        }
    }

    /// The entry a write call carries, checked against the caps.
    private static func entry(_ call: DBusMethodCall) throws(DBusError) -> KWalletEntry {
        let arguments = call.arguments
        if call.member == "writePassword" {
            let text = try arguments.string(at: 3)
            try checkSize(text.utf8.count)
            return .password(text)
        }
        let bytes = try arguments.bytes(at: 3)
        try checkSize(bytes.count)
        let kind: KWalletEntry.Kind
        switch call.member {
        case "writeMap": kind = .map
        case _ where call.signature.rawValue == "issayis": kind = KWalletEntry.Kind(rawValue: try arguments.int32(at: 4)) ?? .stream
        default: kind = .stream
        }
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

    /// kwalletd's answer for a handle the caller does not hold.
    private static func notOpen(_ member: String) -> DBusValue {
        switch member {
        case "folderList", "entryList": .stringArray([])
        case "hasFolder", "createFolder", "removeFolder", "hasEntry": .bool(false)
        case "readEntry", "readMap": .bytes([])
        case "readPassword": .string("")
        case "entriesList", "mapList", "passwordList", "readEntryList", "readMapList", "readPasswordList": .stringVariantDict([(String, DBusValue)]())
        case "entryType": .int32(0)
        default: .int32(-1)
        }
    }
}
