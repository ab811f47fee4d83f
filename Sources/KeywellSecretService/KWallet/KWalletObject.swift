import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol

/// `/modules/kwalletd5` or `/modules/kwalletd6`: `org.kde.KWallet`, answered as kwalletd
/// answers (docs/kwallet.md, "Methods"). Calls on entries name a handle and the application id
/// that opened it; a handle that is not that application's answers as kwalletd does (empty, false,
/// −1), never an error. Input over a cap, a malformed map and a denied access question are
/// errors with a message that says which.
struct KWalletObject: DBusObject, KWalletMethods {
    let service: KWalletService
    /// How maps go out: each bus name's clients are built on one Qt (KF5: Qt 5).
    let order: QDataStreamMap.Order

    func interfaces(at path: String) -> [DBusInterface]? { Self.interfaces }

    /// Made once: an array literal here built a new array on every call.
    private static let interfaces = [KWalletInterfaces.kwallet]

    /// Reads answer on the D-Bus I/O thread, as the Secret Service's do, once the caller's
    /// identity is known; a read that finds it must ask the person leaves the question and the
    /// rest of the call to a worker (`DBusAnswer`, docs/dbus-layer.md "Where a call runs").
    /// The reads are marked in dbus/org.kde.KWallet.xml (`mayRunOnIOThread`, a switch over the
    /// names: no hashing on the I/O thread); writes, opens (a prompt), and what lists keychains
    /// go to a worker.
    func placement(of call: DBusMethodCall) -> DBusCallPlacement {
        guard Self.mayRunOnIOThread(call.member) else { return .worker }
        if let access = service.context.access, !access.isKnown(call) { return .worker }
        return .ioThread
    }

    func handle(_ call: DBusMethodCall) {
        FileChecks.oncePerCall { handleChecked(call) }
    }

    private func handleChecked(_ call: DBusMethodCall) {
        // Noted once the reply is out: the caller does not wait for the idle trimmer's clock.
        defer { service.activity() }
        service.context.access?.learn(call)
        let context = service.context.callContext(call)
        do throws(DBusError) {
            let reach = KWalletProtocol.reach(member: call.member, signature: call.signature.rawValue)
            if case .shared = reach { try service.context.callerAccess(context).check(reach) }
            switch try dispatchKWallet(call, context: context) {
            case .answered(let values): call.reply(values)
            case .afterQuestion(let question): call.finishOffIOThread { call.reply { () throws(DBusError) in try question.askAndFinish() } }
            }
        } catch {
            call.reply(error: error)
        }
    }

    /// The reply at once with the transaction id, then the open, then `walletAsyncOpened`.
    func openAsync(wallet: String, wId: Int64, appid: String, handleSession: Bool, call: CallContext) throws(DBusError) -> Int32 {
        let transaction = service.transactionID()
        call.afterReply { [self] in
            let handle = (try? open(wallet, windowID: wId, appID: appid, call: call)) ?? -1
            service.emit(KWalletProtocol.Member.walletAsyncOpened, [.int32(transaction), .int32(handle)])
        }
        return transaction
    }

    /// Paths are not wallets here: the open fails, told as kwalletd tells it.
    func openPathAsync(path: String, wId: Int64, appid: String, handleSession: Bool, call: CallContext) throws(DBusError) -> Int32 {
        let transaction = service.transactionID()
        call.afterReply { [service] in service.emit(KWalletProtocol.Member.walletAsyncOpened, [.int32(transaction), .int32(-1)]) }
        return transaction
    }

    func open(wallet: String, wId: Int64, appid: String, call: CallContext) throws(DBusError) -> Int32 {
        try open(wallet, windowID: wId, appID: appid, call: call)
    }

    /// A handle, or −1: no such wallet, or locked and no password (no dialog, dismissed, wrong).
    private func open(_ wallet: String, windowID: Int64, appID: String, call: CallContext) throws(DBusError) -> Int32 {
        let context = service.context
        guard let keychain = service.keychain(forWallet: wallet) else {
            context.logger.notice("KWallet open of \"\(wallet)\": no such keychain")
            return -1
        }
        if (try? context.store.locking.isLocked(keychain)) != false {
            if let reason = context.prompts.unavailableReason() {
                context.logger.error("cannot ask for the password to open wallet \"\(wallet)\" (keychain \"\(keychain)\"): \(reason) (docs/prompts.md)")
                return -1
            }
            let prompt = PromptContext(windowID: windowID == 0 ? "" : String(windowID), asker: context.prompts.asker)
            defer { prompt.finish() }
            let requester = ServiceContext.describe(call.sender, on: call.connection).map { appID.isEmpty ? $0 : "\(appID) (\($0))" }
            guard UnlockPrompt(context: context, requester: requester).run([keychain], prompt).contains(keychain) else { return -1 }
        }
        guard let handle = service.handles.open(wallet: wallet, keychain: keychain, appID: appID, connection: call.sender) else {
            context.logger.error("KWallet open of \"\(wallet)\": \(KWalletLimits.openHandles) handles are open already")
            return -1
        }
        service.emit(KWalletProtocol.Member.walletOpened, [.string(wallet)])
        return handle
    }

    func isEnabled(call: CallContext) throws(DBusError) -> Bool { true }
    func openPath(path: String, wId: Int64, appid: String, call: CallContext) throws(DBusError) -> Int32 { -1 }
    func localWallet(call: CallContext) throws(DBusError) -> String { KWalletProtocol.defaultWallet }
    func networkWallet(call: CallContext) throws(DBusError) -> String { KWalletProtocol.defaultWallet }
    func wallets(call: CallContext) throws(DBusError) -> [String] { service.walletNames() }

    func close(wallet: String, force: Bool, call: CallContext) throws(DBusError) -> Int32 {
        try closeWallet(wallet, force: force)
    }

    func close(handle: Int32, force: Bool, appid: String, call: CallContext) throws(DBusError) -> Int32 {
        closeHandle(handle, force: force, appID: appid, caller: call.sender)
    }

    func isOpen(wallet: String, call: CallContext) throws(DBusError) -> Bool {
        guard let keychain = service.keychain(forWallet: wallet) else { return false }
        return (try? service.context.store.locking.isLocked(keychain)) == false
    }

    func isOpen(handle: Int32, call: CallContext) throws(DBusError) -> Bool { service.handles.exists(handle) }

    func users(wallet: String, call: CallContext) throws(DBusError) -> [String] {
        let keychain = service.keychain(forWallet: wallet)
        return Set(service.handles.all().filter { $0.keychain == keychain }.map(\.appID)).sorted()
    }

    func deleteWallet(wallet: String, call: CallContext) throws(DBusError) -> Int32 { try deleteWallet(wallet) }

    func disconnectApplication(wallet: String, application: String, call: CallContext) throws(DBusError) -> Bool {
        let keychain = service.keychain(forWallet: wallet)
        let gone = service.handles.remove { $0.keychain == keychain && $0.appID == application }
        gone.forEach { service.handleClosed($0.number) }
        if !gone.isEmpty { service.emit(KWalletProtocol.Member.applicationDisconnected, [.string(wallet), .string(application)]) }
        return !gone.isEmpty
    }

    func closeAllWallets(call: CallContext) throws(DBusError) {
        service.context.store.locking.lockAll()
    }

    func changePassword(wallet: String, wId: Int64, appid: String, call: CallContext) throws(DBusError) {
        try changePassword(wallet, windowID: wId, appID: appid, call: call)
    }

    // Every write is durable when its call returns; keywelld has no settings of kwalletd's to
    // read; PAM unlocks keychains through pam_keywell (docs/kwallet.md).
    func sync(handle: Int32, appid: String, call: CallContext) throws(DBusError) {}
    func reconfigure(call: CallContext) throws(DBusError) {}
    func pamOpen(wallet: String, passwordHash: [UInt8], sessionTimeout: Int32, call: CallContext) throws(DBusError) {}

    func folderDoesNotExist(wallet: String, folder: String, call: CallContext) throws(DBusError) -> Bool {
        try !exists(wallet: wallet, folder: folder, key: nil, call: call)
    }

    func keyDoesNotExist(wallet: String, folder: String, key: String, call: CallContext) throws(DBusError) -> Bool {
        try !exists(wallet: wallet, folder: folder, key: key, call: call)
    }

    private func closeWallet(_ wallet: String, force: Bool) throws(DBusError) -> Int32 {
        guard let keychain = service.keychain(forWallet: wallet),
              (try? service.context.store.locking.isLocked(keychain)) == false else { return -1 }
        guard force else { return 1 }
        try engine(wallet) { () throws(KeychainError) in try service.context.store.locking.lock(keychain) }
        return 0
    }

    private func closeHandle(_ number: Int32, force: Bool, appID: String, caller: String) -> Int32 {
        switch service.handles.close(number, appID: appID, connection: caller, force: force) {
        case .unknown: return -1
        case .notHolder, .stillOpen: return 1
        case .closed(let handle):
            service.handleClosed(handle.number)
            return 0
        }
    }

    private func deleteWallet(_ wallet: String) throws(DBusError) -> Int32 {
        guard let keychain = service.keychain(forWallet: wallet) else { return -1 }
        try engine(wallet) { () throws(KeychainError) in try service.context.store.registry.deleteKeychain(keychain) }
        for handle in service.handles.remove(where: { $0.keychain == keychain }) { service.handleClosed(handle.number) }
        service.emit(KWalletProtocol.Member.walletDeleted, [.string(wallet)])
        service.emit(KWalletProtocol.Member.walletListDirty, [])
        return 0
    }

    /// Asks for the old and new password through the usual dialog, after the reply (kwalletd
    /// answers at once too).
    private func changePassword(_ wallet: String, windowID: Int64, appID: String, call: CallContext) throws(DBusError) {
        let context = service.context
        guard let keychain = service.keychain(forWallet: wallet) else { return }
        if let reason = context.prompts.unavailableReason() {
            context.logger.error("cannot ask for a new password of wallet \"\(wallet)\": \(reason) (docs/prompts.md)")
            return
        }
        let requester = ServiceContext.describe(call.sender, on: call.connection).map { appID.isEmpty ? $0 : "\(appID) (\($0))" }
        call.afterReply {
            let prompt = PromptContext(windowID: windowID == 0 ? "" : String(windowID), asker: context.prompts.asker)
            defer { prompt.finish() }
            _ = ChangePasswordPrompt(context: context, requester: requester).run(keychain, prompt)
        }
    }

    /// Whether the wallet has the folder (or the folder the key), for the caller; readable
    /// while locked, as kwalletd reads a closed wallet's folder and key names.
    private func exists(wallet: String, folder: String, key: String?, call: CallContext) throws(DBusError) -> Bool {
        guard let keychain = service.keychain(forWallet: wallet) else { return false }
        let entries = KWalletFolder(collection: service.context.directory.unchecked(.keychain(keychain)),
                                    access: service.context.callerAccess(call))
        return try engine(wallet) { () throws(KeychainError) in
            if let key { return try entries.item(folder: folder, key: key) != nil }
            return try entries.folders().contains(folder) || service.emptyFolders.withLock { $0[keychain]?.contains(folder) ?? false }
        }
    }
}
