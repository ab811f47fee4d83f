import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// KWallet's daemon API (`org.kde.KWallet` on `/modules/kwalletd5` and `/modules/kwalletd6`,
/// names `org.kde.kwalletd5` and `org.kde.kwalletd6`) over the same engine and access control as
/// the Secret Service: a wallet is a keychain, an entry a free-form item (docs/kwallet.md).
final class KWalletService: Sendable {
    let context: ServiceContext
    /// Called for every call (the daemon's idle timers count it as use).
    let activity: @Sendable () -> Void
    let handles = KWalletHandles()
    /// Folders `createFolder` made that hold no entry yet, by keychain: kept in memory only, as
    /// KWallet's own Secret Service bridge keeps them.
    let emptyFolders = Protected<[String: Set<String>]>([:])
    private let nextTransaction = Protected<Int32>(0)
    private let connection = Protected<DBusConnection?>(nil)

    init(context: ServiceContext, activity: @escaping @Sendable () -> Void) {
        self.context = context
        self.activity = activity
    }

    /// Serves both objects on `connection` and asks for both names, queued behind an owner (a
    /// running kwalletd keeps them; keywelld gets them when it leaves).
    func attach(to connection: DBusConnection) {
        self.connection.withLock { $0 = connection }
        for (path, name) in zip(KWalletProtocol.objectPaths, KWalletProtocol.busNames) {
            do {
                try connection.register(KWalletObject(service: self, order: path.hasSuffix("5") ? .qt5Descending : .qt6Ascending), at: path)
                switch try connection.requestName(name, flags: [.allowReplacement]) {
                case .primaryOwner, .alreadyOwner: context.logger.info("owning \(name)")
                case .inQueue, .exists: context.logger.notice("\(name) is owned by another program (kwalletd?): queued for it")
                }
            } catch {
                context.logger.error("cannot serve \(name): \(error.message)")
            }
        }
    }

    func transactionID() -> Int32 {
        nextTransaction.withLock { next in
            next = next == Int32.max ? 1 : next + 1
            return next
        }
    }

    // MARK: Wallets and keychains

    /// The keychain a wallet name stands for: `kdewallet` is the default keychain, another name
    /// the keychain of that name; nil when there is none.
    func keychain(forWallet wallet: String) -> String? {
        if wallet == KWalletProtocol.defaultWallet { return try? context.store.registry.defaultKeychain() }
        guard !wallet.isEmpty, !wallet.contains("/"), context.store.registry.keychainExists(wallet) else { return nil }
        return wallet
    }

    /// `kdewallet`, then every other keychain by name.
    func walletNames() -> [String] {
        let defaultName = try? context.store.registry.defaultKeychain()
        let others = ((try? context.store.registry.listKeychains()) ?? []).filter { $0 != defaultName && !$0.contains("/") }
        return [KWalletProtocol.defaultWallet] + others
    }

    /// The names clients know `keychain` by: its wallet name, and any other name a handle used.
    func walletNames(of keychain: String) -> Set<String> {
        var names: Set<String> = [(try? context.store.registry.defaultKeychain()) == keychain ? KWalletProtocol.defaultWallet : keychain]
        for handle in handles.all() where handle.keychain == keychain { names.insert(handle.wallet) }
        return names
    }

    // MARK: Signals

    func emit(_ member: String, _ arguments: [DBusValue]) {
        guard let connection = connection.withLock({ $0 }) else { return }
        for path in KWalletProtocol.objectPaths {
            do {
                try connection.emitSignal(path: path, interface: KWalletProtocol.interface, member: member, arguments: arguments)
            } catch {
                context.logger.debug("cannot send KWallet \(member): \(error.message)")
            }
        }
    }

    func handleClosed(_ number: Int32) {
        emit(KWalletProtocol.Member.walletClosed, [.int32(number)])
        emit(KWalletProtocol.Member.walletClosedId, [.int32(number)])
    }

    /// Engine events: a keychain that locks closes its handles; one that unlocks is opened.
    func keychainEvent(_ event: KeychainEvent) {
        switch event {
        case .locked(let name):
            let names = walletNames(of: name)
            for handle in handles.remove(where: { $0.keychain == name }) { handleClosed(handle.number) }
            for wallet in names.sorted() { emit(KWalletProtocol.Member.walletClosed, [.string(wallet)]) }
            if handles.all().isEmpty { emit(KWalletProtocol.Member.allWalletsClosed, []) }
        case .unlocked(let name):
            for wallet in walletNames(of: name).sorted() { emit(KWalletProtocol.Member.walletOpened, [.string(wallet)]) }
        case .defaultKeychainChanged, .searchListChanged:
            emit(KWalletProtocol.Member.walletListDirty, [])
        case .itemsChanged:
            break
        }
    }

    /// Items made, changed or deleted through any face: `folderUpdated` for the folders of the
    /// entries made or changed; `folderListUpdated` when entries came or went (a deleted item's
    /// folder can no longer be read). Sent while some client holds a handle.
    func itemsChanged(_ event: KeychainItemsEvent) {
        // Entry signals are for clients holding handles; with none open nothing is read.
        guard !handles.all().isEmpty else { return }
        let names = walletNames(of: event.keychain).sorted()
        var folders: Set<String> = []
        for id in event.created + event.changed {
            guard let item = try? context.store.secretServiceItem(id, in: event.keychain),
                  item.attributes[SecretServiceMapping.schemaAttribute] == KWalletProtocol.schema,
                  let folder = item.attributes[KWalletProtocol.folderAttribute] else { continue }
            folders.insert(folder)
        }
        for wallet in names {
            for folder in folders.sorted() { emit(KWalletProtocol.Member.folderUpdated, [.string(wallet), .string(folder)]) }
            if !event.created.isEmpty || !event.deleted.isEmpty { emit(KWalletProtocol.Member.folderListUpdated, [.string(wallet)]) }
        }
    }

    /// A client left the bus: its opens are taken back.
    func connectionLeft(_ name: String) {
        for handle in handles.connectionLeft(name) { handleClosed(handle.number) }
    }
}
