import Foundation
import KeywellAPI
import KeywellAccess
import KeywellCore
import KeywellDBus
import KeywellIdentity
import KeywellProtocol
import Logging

/// `/org/keywell/Keychain`: the native API. Calls go straight to the engine (thread-safe). Reads
/// of a caller already identified run on the D-Bus I/O thread (they never wait for a writer: the
/// engine reads through its own connection), everything else on a worker, so slow calls (a key
/// derivation, a durable commit) never hold up others; a read that must ask the person moves to
/// a worker (`NativeAccessScreen`). Signals go out from the engine's events during the call,
/// hence before its reply.
final class NativeKeychainObject: DBusObject {
    private let store: KeychainStore
    private let sessions: LoginSessions
    private let autoLock: AutoLock
    private let callers: CallerIdentity
    private let identities: ApplicationIdentities
    private let trimmer: IdleTrimmer
    private let logger: Logger
    private let throttle: PasswordThrottle
    private let migration: KeyringMigration
    private let gate: AccessGate
    private let session: NativeSessionCalls
    private let sync: SyncService
    private let accessStatus: AccessStatusSource

    init(store: KeychainStore, sessions: LoginSessions, autoLock: AutoLock, callers: CallerIdentity,
         identities: ApplicationIdentities, trimmer: IdleTrimmer, logger: Logger, throttle: PasswordThrottle,
         migration: KeyringMigration, gate: AccessGate, session: NativeSessionCalls, accessStatus: AccessStatusSource,
         sync: SyncService) {
        self.store = store
        self.session = session
        self.accessStatus = accessStatus
        self.sync = sync
        self.gate = gate
        self.identities = identities
        self.migration = migration
        self.throttle = throttle
        self.sessions = sessions
        self.autoLock = autoLock
        self.callers = callers
        self.trimmer = trimmer
        self.logger = logger
    }

    func interfaces(at path: String) -> [DBusInterface]? {
        path == KeywellNames.objectPath ? [NativeInterface.description] : nil
    }

    func placement(of call: DBusMethodCall) -> DBusCallPlacement {
        // A caller seen before is a dictionary lookup; a new one needs the bus and /proc.
        guard let method = call.method.flatMap({ NativeMethod(name: $0.name) }) else { return .worker }
        // On the direct socket the I/O thread is this one caller's alone, and its identity needs
        // no bus: a read runs there, without handing the loop to another thread first.
        if call.connection.peerName != nil { return method.methodClass == .read || method == .whoAmI ? .ioThread : .worker }
        // Every call needs the caller's identity (who may call what, then access lists): a new
        // caller's is worked out on a worker, with the bus already asked for its credentials
        // while the call goes there.
        if identities.cached(call.sender, on: call.connection) == nil {
            identities.prefetch(call.sender, on: call.connection)
            return .worker
        }
        guard method.methodClass == .read || method == .whoAmI else { return .worker }
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

    func handle(_ call: DBusMethodCall) {
        guard let method = call.method.flatMap({ NativeMethod(name: $0.name) }) else {
            call.reply(error: .unknownMethod("No method \(call.member)"))
            return
        }
        let start = ContinuousClock.now
        // Calls that change keychains, not items, are logged at info level.
        let level: Logger.Level = method.methodClass == .changesKeychains || method == .setSessionDisplay ? .info : .debug
        // Asked before the reply, while the caller is surely still connected; only when logged.
        let caller = logger.logLevel <= level ? callers.describe(call.sender, on: call.connection) : nil
        var afterReply = AfterReply()
        defer {
            afterReply.finish()
            trimmer.noteActivity()
        }
        let movedOff = MoveOffIOThread()
        do throws(KeychainError) {
            try NativeArgumentCaps.check(call.arguments, of: method)
            let values = try perform(method, call.arguments, call, &afterReply, movedOff)
            call.reply(values)
            log(call, caller: caller, outcome: "ok", level: level, since: start)
        } catch {
            if movedOff.isSet {
                // It must ask the person: again from the start on a worker (a read changed nothing).
                call.continueOffIOThread { [self] in handle(call) }
                return
            }
            call.reply(error: DBusError(name: error.dbusErrorName, message: error.wireMessage))
            let errorLevel: Logger.Level = PasswordThrottle.isRefusal(error)
                ? .debug : error.status == SecStatus.authFailed ? .notice : level
            log(call, caller: caller, outcome: error.wireMessage, level: errorLevel, since: start)
        }
    }

    private func perform(
        _ method: NativeMethod, _ arguments: [DBusValue], _ call: DBusMethodCall, _ afterReply: inout AfterReply,
        _ movedOff: MoveOffIOThread
    ) throws(KeychainError) -> [DBusValue] {
        // Who may call what, before anything is done (docs/access-control.md, "Sandboxed callers").
        let caller = accessCaller(call)
        if let refusal = caller.refusal(of: method.reach) { throw KeychainError(SecStatus.missingEntitlement, detail: refusal) }
        // Exhaustive: a method added to the contract does not compile until it is handled here.
        switch method {
        // Plaintext secrets (`v_Data` in and out) are wiped once converted (see SecretWipe), right
        // after the reply has gone.
        case .add:
            var attributes = try itemDictionary(arguments[0], from: caller)
            afterReply.wipe(attributes)
            // The creator is trusted (docs/access-control.md); one that cannot be named, nobody.
            // A sandboxed app's item trusts that app alone, whatever the keychain enforces: an
            // item open to any application would be hidden from the app that made it.
            if caller.isSandboxed, let creator = caller.identityString {
                attributes[WireKey.access] = AccessList.applications([creator]).wireValue
            }
            let result = try store.items.add(attributes, creator: caller.identityString, creatorUnidentified: caller.identity == nil)
            afterReply.wipe(result)
            return [WireCodec.dbusDictionary(result)]
        case .copyMatching:
            let query = try itemDictionary(arguments[0], from: caller)
            afterReply.wipe(query)
            let results = try store.items.copyMatching(query, screen: screen(caller, call, movedOff))
            afterReply.wipe(results)
            return [WireCodec.dbusDictionaryArray(results)]
        case .update:
            let query = try itemDictionary(arguments[0], from: caller)
            let changes = try itemDictionary(arguments[1], from: caller)
            afterReply.wipe(changes)
            try store.items.update(query, changes, screen: screen(caller, call, movedOff))
            return []
        case .delete:
            try store.items.delete(itemDictionary(arguments[0], from: caller), screen: screen(caller, call, movedOff))
            return []
        case .createKeychain:
            let path = try store.registry.createKeychain(string(arguments[0]), password: secret(arguments[1]))
            autoLock.rearm()
            return [.string(path)]
        case .deleteKeychain:
            try store.registry.deleteKeychain(string(arguments[0]))
            return []
        case .listKeychains:
            return [.stringArray(try store.registry.listKeychains())]
        case .getSearchList:
            return [.stringArray(try store.registry.searchList())]
        case .setSearchList:
            try store.registry.setSearchList(WireCodec.requestKeychainList(arguments[0]))
            return []
        case .getDefaultKeychain:
            return [.string(try store.registry.defaultKeychain())]
        case .setDefaultKeychain:
            try store.registry.setDefaultKeychain(string(arguments[0]))
            return []
        case .getLoginKeychain:
            return [.string(try store.registry.loginKeychain())]
        case .unlock:
            let keychain = string(arguments[0])
            let password = secret(arguments[1])
            try throttle.unlock(keychain, password: password, in: store)
            autoLock.rearm()
            sessions.keychainUnlocked(keychain, with: password)
            return []
        case .lock:
            try store.locking.lock(string(arguments[0]))
            return []
        case .lockAll:
            store.locking.lockAll()
            return []
        case .changePassword:
            let keychain = string(arguments[0])
            try throttle.changePassword(keychain, old: secret(arguments[1]), new: secret(arguments[2]), in: store)
            return []
        case .getInfo:
            return [WireCodec.dbusDictionary(try store.locking.info(string(arguments[0])))]
        case .setSettings:
            try store.locking.setSettings(string(arguments[0]), wireDictionary(arguments[1]))
            autoLock.rearm()
            return []
        case .backupKeychain:
            try store.registry.backupKeychain(string(arguments[0]), to: string(arguments[1]), replacing: bool(arguments[2]))
            return []
        case .restoreKeychain:
            let path = try store.registry.restoreKeychain(from: string(arguments[0]), as: string(arguments[1]), replacing: bool(arguments[2]))
            return [.string(path)]
        case .migrateKeyrings:
            // An empty name is every keyring; an empty password tries only what needs none.
            let name = string(arguments[0])
            let reports = migration.migrate(keyring: name.isEmpty ? nil : name, password: secret(arguments[1]))
            for report in reports where report.outcome != .unchanged { migration.log(report) }
            autoLock.rearm()
            return [.stringVariantDictArray(reports.map(MigrationWire.report))]
        case .getMigrationStatus:
            return [.stringVariantDictArray(MigrationWire.status(migration.state()))]
        case .exportGnomeKeyring:
            let written = try GnomeKeyringExport.export(string(arguments[0]), from: store, to: string(arguments[1]),
                                                        password: secret(arguments[2]), replace: bool(arguments[3]),
                                                        screen: screen(caller, call, movedOff))
            return [.uint32(UInt32(clamping: written.items)), .uint32(UInt32(clamping: written.thisDeviceOnly))]
        // The file travels as a descriptor the caller opened (libdbus hands over a duplicate,
        // closed here): the daemon never opens a path a caller names for these.
        case .exportKeychains:
            let fd = descriptor(call, 1)
            defer { close(fd) }
            let names = try WireCodec.requestKeychainList(arguments[0])
            let written = try store.transfer.exportKeychains(names, to: fd, passphrase: secret(arguments[2]), screen: screen(caller, call, movedOff))
            return [.uint32(UInt32(clamping: written.items)), .uint32(UInt32(clamping: written.thisDeviceOnly))]
        case .inspectExport:
            let fd = descriptor(call, 0)
            defer { close(fd) }
            let (keychains, count) = try store.transfer.inspectExport(from: fd, passphrase: secret(arguments[1]))
            return [.stringArray(keychains), .uint32(UInt32(clamping: count))]
        case .importExport:
            let fd = descriptor(call, 0)
            defer { close(fd) }
            guard let policy = ImportPolicy(rawValue: string(arguments[3])) else {
                throw .param("the import policy is one of skip, replace, newer")
            }
            let keychain = string(arguments[2])
            let summary = try store.transfer.importExport(
                from: fd, passphrase: secret(arguments[1]), into: keychain.isEmpty ? nil : keychain, policy: policy)
            return [WireCodec.dbusDictionary([
                ImportSummaryKey.added: .integer(Int64(summary.added)),
                ImportSummaryKey.replaced: .integer(Int64(summary.replaced)),
                ImportSummaryKey.skipped: .integer(Int64(summary.skipped)),
            ])]
        case .whoAmI:
            return try whoAmI(call)
        case .setSessionDisplay:
            try session.setSessionDisplay(arguments[0])
            return []
        case .getAccessStatus:
            return accessStatus.reply(store: store)
        case .syncEnable:
            try sync.enable(string(arguments[0]), folder: string(arguments[1]), password: secret(arguments[2]), join: bool(arguments[3]))
            return []
        case .syncStatus:
            return [WireCodec.dbusDictionary(try sync.status(string(arguments[0])))]
        case .syncConflicts:
            return [WireCodec.dbusDictionaryArray(try sync.conflicts(string(arguments[0])))]
        case .syncConflictSecret:
            let secret = try sync.conflictSecret(string(arguments[0]), version: arguments[1].int64Value ?? -1)
            defer { SecretWipe.wipe(secret) }
            return [.bytes(Array(secret))]
        case .syncDisable:
            try sync.disable(string(arguments[0]))
            return []
        case .syncRekey:
            try sync.rekey(string(arguments[0]), password: secret(arguments[1]))
            return []
        }
    }

    /// The call's caller as access control sees it; one whose identity cannot be worked out is
    /// trusted with nothing (only items open to any application, no shared state).
    private func accessCaller(_ call: DBusMethodCall) -> AccessCaller {
        AccessCaller(connection: call.sender, identity: try? identities.identity(of: call.sender, on: call.connection))
    }

    /// Access control for the call's caller.
    private func screen(_ caller: AccessCaller, _ call: DBusMethodCall, _ movedOff: MoveOffIOThread) -> NativeAccessScreen {
        NativeAccessScreen(gate: gate, caller: caller, onIOThread: call.connection.isOnIOThread, movedOff: movedOff)
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

    private func whoAmI(_ call: DBusMethodCall) throws(KeychainError) -> [DBusValue] {
        let identity: ApplicationIdentity
        do {
            identity = try identities.identity(of: call.sender, on: call.connection)
        } catch {
            throw KeychainError(SecStatus.missingEntitlement, detail: "\(error)")
        }
        let reason = [identity.strengthReason, identity.note].compactMap { $0 }.joined(separator: " ")
        return [.string(identity.string), .string(identity.strength.rawValue), .string(reason)]
    }

    /// An `a{sv}` argument; its byte values (`v_Data` may be a secret) in self-wiping storage.
    private func wireDictionary(_ value: DBusValue) throws(KeychainError) -> WireDictionary {
        try WireCodec.requestDictionary(value, secretData: SecretWipe.wipingData(copying:))
    }

    /// The signature was checked, so the argument has the declared type.
    private func string(_ value: DBusValue) -> String { value.stringValue ?? "" }

    private func bool(_ value: DBusValue) -> Bool { value.boolValue ?? false }

    /// Takes the call's descriptor over: the handler closes it, and the call no longer does when
    /// it ends (closing it twice could close a file another thread opened meanwhile under the
    /// same number).
    private func descriptor(_ call: DBusMethodCall, _ index: Int) -> Int32 { call.takeFileDescriptor(argument: index) ?? -1 }

    /// Passwords go straight into locked, self-wiping memory; nothing else keeps them.
    private func secret(_ value: DBusValue) -> SecretBytes {
        if case .bytes(let bytes) = value { return SecretBytes(copying: bytes) }
        return SecretBytes(copying: value.bytesValue ?? [])
    }

    private func log(_ call: DBusMethodCall, caller: String?, outcome: String, level: Logger.Level,
                     since start: ContinuousClock.Instant) {
        guard logger.logLevel <= level else { return }
        let elapsed = ContinuousClock.now - start
        let microseconds = elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
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

/// What a call's plaintext passed through, wiped (and freed) once its reply has gone: the caller
/// waits for the reply, not for the clean-up.
private struct AfterReply {
    private var dictionaries: [WireDictionary] = []

    mutating func wipe(_ dictionary: WireDictionary) { dictionaries.append(dictionary) }
    mutating func wipe(_ list: [WireDictionary]) { dictionaries += list }

    mutating func finish() {
        for index in dictionaries.indices { SecretWipe.wipe(&dictionaries[index]) }
        dictionaries = []
    }
}

