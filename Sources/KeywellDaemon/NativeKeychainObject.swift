import Foundation
import KeywellAPI
import KeywellAccess
import KeywellCore
import KeywellDBus
import KeywellIdentity
import KeywellProtocol
import KeywellSecretService
import Logging

/// `/org/keywell/Keychain`: the native API. Calls go straight to the engine (thread-safe). Reads
/// of a caller already identified run on the D-Bus I/O thread (they never wait for a writer: the
/// engine reads through its own connection), everything else on a worker, so slow calls (a key
/// derivation, a durable commit) never hold up others; a search whose read finds it must ask the
/// person leaves the question and its results to a worker (`ScreenedSearch`). Signals go out
/// from the engine's events during the call, hence before its reply.
final class NativeKeychainObject: DBusObject {
    private let store: KeychainStore
    private let sessions: LoginSessions
    private let autoLock: AutoLock
    private let callers: CallerIdentity
    /// The daemon's callers, shared with the Secret Service's faces (`CallContext`).
    private let directory: CallerDirectory
    private var identities: ApplicationIdentities { directory.identities }
    private let trimmer: IdleTrimmer
    private let logger: Logger
    private let migration: KeyringMigration
    private let gate: AccessGate
    private let session: NativeSessionCalls
    private let sync: SyncService
    private let accessStatus: AccessStatusSource

    init(store: KeychainStore, sessions: LoginSessions, autoLock: AutoLock, callers: CallerIdentity,
         directory: CallerDirectory, trimmer: IdleTrimmer, logger: Logger,
         migration: KeyringMigration, gate: AccessGate, session: NativeSessionCalls, accessStatus: AccessStatusSource,
         sync: SyncService) {
        self.store = store
        self.session = session
        self.accessStatus = accessStatus
        self.sync = sync
        self.gate = gate
        self.directory = directory
        self.migration = migration
        self.sessions = sessions
        self.autoLock = autoLock
        self.callers = callers
        self.trimmer = trimmer
        self.logger = logger
    }

    func interfaces(at path: String) -> [DBusInterface]? {
        path == KeywellNames.objectPath ? Self.interfaces : nil
    }

    /// Made once: an array literal here built a new array on every call.
    private static let interfaces = [NativeInterfaces.keychain]

    func placement(of call: DBusMethodCall) -> DBusCallPlacement {
        // Which methods may run on the I/O thread is declared with each method in the XML
        // (`mayRunOnIOThread`); whether this call does is decided here.
        // On the direct socket the I/O thread is this one caller's alone, and its identity needs
        // no bus: a read runs there, without handing the loop to another thread first.
        if call.connection.peerName != nil { return Self.mayRunOnIOThread(call.member) ? .ioThread : .worker }
        // Every call needs the caller's identity (who may call what, then access lists): a new
        // caller's is worked out on a worker, with the bus already asked for its credentials
        // while the call goes there. A caller seen before is a dictionary lookup.
        if !directory.isKnown(call) { return .worker }
        guard Self.mayRunOnIOThread(call.member) else { return .worker }
        // Naming a new caller in the log asks the bus for its pid, a call the I/O thread cannot wait for.
        if logger.logLevel <= .debug, !callers.isKnown(call.sender) { return .worker }
        return .ioThread
    }

    /// A call whose D-Bus signature is not its method's declared one is Param, not InvalidArgs,
    /// like every other refusal of this API; the layer sends it before `handle` runs.
    func signatureRefusal(_ call: DBusMethodCall, expected: DBusSignature) -> DBusError {
        let error = KeychainError.param("\(call.member) takes (\(expected.rawValue)), got (\(call.signature.rawValue))")
        return DBusError(name: error.dbusErrorName, message: error.wireMessage)
    }

    /// Checks the call's plain arguments against their caps and who may call what, then runs it
    /// through the dispatch generated from dbus/org.keywell.Keychain1.xml, which decodes the
    /// arguments and calls the method's function below. A search that must ask the person
    /// finishes off the I/O thread, with what its read found (`DBusAnswer`).
    func handle(_ call: DBusMethodCall) {
        guard let method = call.method.flatMap({ NativeMethod(name: $0.name) }) else {
            call.reply(error: .unknownMethod("No method \(call.member)"))
            return
        }
        let context = CallContext(call, callers: directory, logger: logger)
        // Calls that change keychains, not items, are logged at info level.
        let level: Logger.Level = method.methodClass == .changesKeychains || method == .setSessionDisplay ? .info : .debug
        // Asked before the reply, while the caller is surely still connected; only when logged.
        let caller = logger.logLevel <= level ? callers.describe(call.sender, on: call.connection) : nil
        do throws(KeychainError) {
            try NativeArgumentCaps.check(call.arguments, of: method)
            // Who may call what, before anything is done (docs/access-control.md, "Sandboxed callers").
            if let refusal = accessCaller(context).refusal(of: method.reach) {
                throw KeychainError(SecStatus.missingEntitlement, detail: refusal)
            }
            switch try dispatchKeychain(call, context: context) {
            case .answered(let values):
                finish(context, caller: caller, level: level) { () throws(KeychainError) in values }
            case .afterQuestion(let question):
                call.finishOffIOThread { [self] in
                    finish(context, caller: caller, level: level) { () throws(KeychainError) in try question.askAndFinish() }
                }
            }
        } catch {
            finish(context, caller: caller, level: level) { () throws(KeychainError) in throw error }
        }
    }

    /// Replies with what `values` gives, logs the outcome, then wipes what the call passed through.
    private func finish(_ context: CallContext, caller: String?, level: Logger.Level,
                        _ values: () throws(KeychainError) -> [DBusValue]) {
        defer {
            context.finishAfterReply()
            trimmer.noteActivity()
        }
        do throws(KeychainError) {
            context.call.reply(try values())
            log(context, caller: caller, outcome: "ok", level: level)
        } catch {
            context.call.reply(error: DBusError(name: error.dbusErrorName, message: error.wireMessage))
            let errorLevel: Logger.Level = PasswordThrottle.isRefusal(error)
                ? .debug : error.status == SecStatus.authFailed ? .notice : level
            log(context, caller: caller, outcome: error.wireMessage, level: errorLevel)
        }
    }

    /// The call's caller as access control sees it; one whose identity cannot be worked out is
    /// trusted with nothing (only items open to any application, no shared state).
    private func accessCaller(_ call: CallContext) -> AccessCaller {
        call.caller ?? AccessCaller(connection: call.sender, identity: nil)
    }

    /// Access control for the call's caller.
    private func screen(_ call: CallContext) -> NativeAccessScreen {
        NativeAccessScreen(gate: gate, caller: accessCaller(call))
    }

    /// An item call's dictionary, refused before anything is done when it holds a key the caller
    /// may not send (a sandboxed caller naming keychains or access lists).
    private func itemDictionary(_ value: DBusValue, from caller: AccessCaller) throws(KeychainError) -> WireDictionary {
        var dictionary = try wireDictionary(value)
        if let refusal = caller.refusal(ofItemKeys: dictionary.keys) {
            SecretWipe.wipe(&dictionary)
            throw KeychainError(SecStatus.missingEntitlement, detail: refusal)
        }
        return dictionary
    }

    /// An `a{sv}` argument; its byte values (`v_Data` may be a secret) in self-wiping storage.
    private func wireDictionary(_ value: DBusValue) throws(KeychainError) -> WireDictionary {
        try WireCodec.requestDictionary(value, secretData: SecretWipe.wipingData(copying:))
    }

    /// Takes the call's descriptor over: the handler closes it, and the call no longer does when
    /// it ends (closing it twice could close a file another thread opened meanwhile under the
    /// same number).
    private func descriptor(_ file: DBusDescriptorArgument) -> Int32 { file.take() ?? -1 }

    /// Passwords go straight into locked, self-wiping memory; nothing else keeps them.
    private func secret(_ bytes: [UInt8]) -> SecretBytes { SecretBytes(copying: bytes) }

    private func log(_ context: CallContext, caller: String?, outcome: String, level: Logger.Level) {
        guard logger.logLevel <= level else { return }
        let call = context.call
        let microseconds = context.elapsedMicroseconds
        // Arguments are never logged (they may hold secrets), only the keychain a call names.
        var subject = call.member
        if call.member != NativeMethod.setSearchList.name, let keychain = call.arguments.first?.stringValue,
           NativeArgumentCaps.isLoggable(keychain) {
            subject += " \"\(keychain)\""
        }
        var metadata: Logger.Metadata = [
            "caller": "\(caller ?? callers.describe(call.sender, on: call.connection))",
            "us": "\(microseconds)",
        ]
        // The application identity, once a call has worked it out (never worked out for a log line).
        if case .success(let identity)? = identities.cached(call.sender, on: call.connection) { metadata["identity"] = "\(identity.string)" }
        logger.log(level: level, "\(subject): \(outcome)", metadata: metadata)
    }
}

/// The native API's methods, one function each (the protocol is generated from
/// dbus/org.keywell.Keychain1.xml): arguments arrive decoded, of their declared types.
/// Plaintext secrets (`v_Data` in and out) are wiped once converted (see SecretWipe), right after
/// the reply has gone (`call.wipeAfterReply`).
extension NativeKeychainObject: KeychainMethods {
    // MARK: Items

    func add(attributes: DBusValue, call: CallContext) throws(KeychainError) -> DBusValue {
        let caller = accessCaller(call)
        var attributes = try itemDictionary(attributes, from: caller)
        call.wipeAfterReply(attributes)
        // The creator is trusted (docs/access-control.md); one that cannot be named, nobody.
        // A sandboxed app's item trusts that app alone, whatever the keychain enforces: an
        // item open to any application would be hidden from the app that made it.
        if caller.isSandboxed, let creator = caller.identityString {
            attributes[WireKey.access] = AccessList.applications([creator]).wireValue
        }
        let result = try store.items.add(attributes, creator: caller.identityString, creatorUnidentified: caller.identity == nil)
        call.wipeAfterReply(result)
        return WireCodec.dbusDictionary(result)
    }

    /// The search is read and judged here; the question about untrusted matches, if one is
    /// left, and the results (whose secrets are opened after the answer) are the rest.
    func copyMatching(query: DBusValue, call: CallContext) throws(KeychainError) -> DBusAnswer<DBusValue, KeychainError> {
        let query = try itemDictionary(query, from: accessCaller(call))
        call.wipeAfterReply(query)
        let search = try store.items.screenedSearch(query, screen: screen(call))
        let results = { () throws(KeychainError) -> DBusValue in
            let results = try search.finish()
            call.wipeAfterReply(results)
            return WireCodec.dbusDictionaryArray(results)
        }
        return search.asks ? .afterQuestion(DBusQuestion(results)) : .answered(try results())
    }

    func update(query: DBusValue, attributes: DBusValue, call: CallContext) throws(KeychainError) {
        let query = try itemDictionary(query, from: accessCaller(call))
        let changes = try itemDictionary(attributes, from: accessCaller(call))
        call.wipeAfterReply(changes)
        try store.items.update(query, changes, screen: screen(call))
    }

    func delete(query: DBusValue, call: CallContext) throws(KeychainError) {
        try store.items.delete(itemDictionary(query, from: accessCaller(call)), screen: screen(call))
    }

    // MARK: Keychains

    func createKeychain(name: String, password: [UInt8], call: CallContext) throws(KeychainError) -> String {
        let path = try store.registry.createKeychain(name, password: secret(password))
        autoLock.rearm()
        return path
    }

    func deleteKeychain(keychain: String, call: CallContext) throws(KeychainError) {
        try store.registry.deleteKeychain(keychain)
    }

    func listKeychains(call: CallContext) throws(KeychainError) -> [String] {
        try store.registry.listKeychains()
    }

    func getSearchList(call: CallContext) throws(KeychainError) -> [String] {
        try store.registry.searchList()
    }

    func setSearchList(keychains: DBusValue, call: CallContext) throws(KeychainError) {
        try store.registry.setSearchList(WireCodec.requestKeychainList(keychains))
    }

    func getDefaultKeychain(call: CallContext) throws(KeychainError) -> String {
        try store.registry.defaultKeychain()
    }

    func setDefaultKeychain(keychain: String, call: CallContext) throws(KeychainError) {
        try store.registry.setDefaultKeychain(keychain)
    }

    func getLoginKeychain(call: CallContext) throws(KeychainError) -> String {
        try store.registry.loginKeychain()
    }

    func unlock(keychain: String, password: [UInt8], call: CallContext) throws(KeychainError) {
        let password = secret(password)
        try store.locking.unlock(keychain, password: password)
        autoLock.rearm()
        sessions.keychainUnlocked(keychain, with: password)
    }

    func lock(keychain: String, call: CallContext) throws(KeychainError) {
        try store.locking.lock(keychain)
    }

    func lockAll(call: CallContext) throws(KeychainError) {
        store.locking.lockAll()
    }

    func changePassword(keychain: String, oldPassword: [UInt8], newPassword: [UInt8], call: CallContext) throws(KeychainError) {
        try store.locking.changePassword(keychain, old: secret(oldPassword), new: secret(newPassword))
    }

    func getInfo(keychain: String, call: CallContext) throws(KeychainError) -> DBusValue {
        WireCodec.dbusDictionary(try store.locking.info(keychain))
    }

    func setSettings(keychain: String, settings: DBusValue, call: CallContext) throws(KeychainError) {
        try store.locking.setSettings(keychain, wireDictionary(settings))
        autoLock.rearm()
    }

    // MARK: Backups, keyring files, export files

    func backupKeychain(keychain: String, path: String, replace: Bool, call: CallContext) throws(KeychainError) {
        try store.registry.backupKeychain(keychain, to: path, replacing: replace)
    }

    func restoreKeychain(path: String, keychain: String, replace: Bool, call: CallContext) throws(KeychainError) -> String {
        try store.registry.restoreKeychain(from: path, as: keychain, replacing: replace)
    }

    func migrateKeyrings(keyring: String, password: [UInt8], call: CallContext) throws(KeychainError) -> DBusValue {
        // An empty name is every keyring; an empty password tries only what needs none.
        let reports = migration.migrate(keyring: keyring.isEmpty ? nil : keyring, password: secret(password))
        for report in reports where report.outcome != .unchanged { migration.log(report) }
        autoLock.rearm()
        return .stringVariantDictArray(reports.map(MigrationWire.report))
    }

    func getMigrationStatus(call: CallContext) throws(KeychainError) -> DBusValue {
        .stringVariantDictArray(MigrationWire.status(migration.state()))
    }

    func exportGnomeKeyring(
        keychain: String, path: String, password: [UInt8], replace: Bool, call: CallContext
    ) throws(KeychainError) -> (items: UInt32, thisDeviceOnly: UInt32) {
        let written = try GnomeKeyringExport.export(keychain, from: store, to: path, password: secret(password), replace: replace,
                                                    screen: screen(call))
        return (UInt32(clamping: written.items), UInt32(clamping: written.thisDeviceOnly))
    }

    // The file travels as a descriptor the caller opened (libdbus hands over a duplicate,
    // closed here): the daemon never opens a path a caller names for these.
    func exportKeychains(
        keychains: DBusValue, file: DBusDescriptorArgument, passphrase: [UInt8], call: CallContext
    ) throws(KeychainError) -> (items: UInt32, thisDeviceOnly: UInt32) {
        let fd = descriptor(file)
        defer { close(fd) }
        let names = try WireCodec.requestKeychainList(keychains)
        let written = try store.transfer.exportKeychains(names, to: fd, passphrase: secret(passphrase), screen: screen(call))
        return (UInt32(clamping: written.items), UInt32(clamping: written.thisDeviceOnly))
    }

    func inspectExport(
        file: DBusDescriptorArgument, passphrase: [UInt8], call: CallContext
    ) throws(KeychainError) -> (keychains: [String], items: UInt32) {
        let fd = descriptor(file)
        defer { close(fd) }
        let (keychains, count) = try store.transfer.inspectExport(from: fd, passphrase: secret(passphrase))
        return (keychains, UInt32(clamping: count))
    }

    func importExport(
        file: DBusDescriptorArgument, passphrase: [UInt8], keychain: String, policy: String, call: CallContext
    ) throws(KeychainError) -> DBusValue {
        let fd = descriptor(file)
        defer { close(fd) }
        guard let policy = ImportPolicy(rawValue: policy) else {
            throw .param("the import policy is one of skip, replace, newer")
        }
        let summary = try store.transfer.importExport(
            from: fd, passphrase: secret(passphrase), into: keychain.isEmpty ? nil : keychain, policy: policy)
        return WireCodec.dbusDictionary([
            ImportSummaryKey.added: .integer(Int64(summary.added)),
            ImportSummaryKey.replaced: .integer(Int64(summary.replaced)),
            ImportSummaryKey.skipped: .integer(Int64(summary.skipped)),
        ])
    }

    // MARK: The caller, the session, dialogs

    func whoAmI(call: CallContext) throws(KeychainError) -> (identity: String, strength: String, reason: String) {
        let identity: ApplicationIdentity
        do {
            identity = try identities.identity(of: call.sender, on: call.connection)
        } catch {
            throw KeychainError(SecStatus.missingEntitlement, detail: "\(error)")
        }
        let reason = [identity.strengthReason, identity.note].compactMap { $0 }.joined(separator: " ")
        return (identity.string, identity.strength.rawValue, reason)
    }

    func setSessionDisplay(environment: DBusValue, call: CallContext) throws(KeychainError) {
        try session.setSessionDisplay(environment)
    }

    func getAccessStatus(call: CallContext) throws(KeychainError) -> (status: DBusValue, grants: DBusValue) {
        accessStatus.reply(store: store)
    }

    // MARK: Sync

    func syncEnable(keychain: String, folder: String, password: [UInt8], join: Bool, call: CallContext) throws(KeychainError) {
        try sync.enable(keychain, folder: folder, password: secret(password), join: join)
    }

    func syncStatus(keychain: String, call: CallContext) throws(KeychainError) -> DBusValue {
        WireCodec.dbusDictionary(try sync.status(keychain))
    }

    func syncConflicts(keychain: String, call: CallContext) throws(KeychainError) -> DBusValue {
        WireCodec.dbusDictionaryArray(try sync.conflicts(keychain))
    }

    func syncConflictSecret(keychain: String, version: Int64, call: CallContext) throws(KeychainError) -> [UInt8] {
        let secret = try sync.conflictSecret(keychain, version: version)
        defer { SecretWipe.wipe(secret) }
        return Array(secret)
    }

    func syncDisable(keychain: String, call: CallContext) throws(KeychainError) {
        try sync.disable(keychain)
    }

    func syncRekey(keychain: String, password: [UInt8], call: CallContext) throws(KeychainError) {
        try sync.rekey(keychain, password: secret(password))
    }
}
