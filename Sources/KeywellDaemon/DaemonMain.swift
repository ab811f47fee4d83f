import Foundation
import KeywellAccess
import KeywellCore
import KeywellDBus
import KeywellIdentity
import KeywellProtocol
import KeywellSecretService
import KeywellSystem
import Logging
import SecretServiceCrypto

/// `keywelld`: wires the engine, the session bus, the control socket and the timers together.
///
/// Threads: the main thread sets up, then waits for SIGTERM/SIGINT. D-Bus calls run on the
/// D-Bus layer's worker pool (one I/O thread per connection hands them over) and go straight
/// into the thread-safe engine; the control socket has an accept thread and a thread per
/// request; the idle timer, the bus watcher and the sleep watcher have one thread each
/// (docs/design.md "Threads").
public enum DaemonMain {
    /// Runs the daemon until SIGTERM/SIGINT (or a fatal failure) and returns the process's exit
    /// status for `main` to exit with: 0 after a clean stop, `--help` or `--version`, and when
    /// another instance serves this activation; 1 when the daemon cannot run; 2 for bad options.
    public static func run(arguments: [String]) -> Int32 {
        // Before any thread exists, so every thread inherits it: SIGTERM and SIGINT are taken
        // with sigwait on the main thread, never by a handler in the middle of a call.
        var terminationSignals = sigset_t()
        sigemptyset(&terminationSignals)
        sigaddset(&terminationSignals, SIGTERM)
        sigaddset(&terminationSignals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &terminationSignals, nil)
        signal(SIGPIPE, SIG_IGN)
        // A write past a file size limit (RLIMIT_FSIZE) then fails with EFBIG, which the caller
        // hears as DiskFull, instead of killing the daemon (docs/storage.md).
        signal(SIGXFSZ, SIG_IGN)

        let options: DaemonOptions
        switch DaemonOptions.parse(Array(arguments.dropFirst())) {
        case .run(let parsed): options = parsed
        case .info(let text):
            print(text, terminator: "")
            return 0
        case .usageError(let text):
            FileHandle.standardError.write(Data(text.utf8))
            return 2
        }

        ProcessHardening.apply()
        MallocTuning.limitArenas()
        let level: Logger.Level = options.verbose ? .debug : .info
        let logDestination = DaemonLogFile(environment: ProcessInfo.processInfo.environment)
        LoggingSystem.bootstrap { label in StderrLogHandler(label: label, level: level, destination: logDestination) }
        let logger = Logger(label: "keywelld")

        let environment = ProcessInfo.processInfo.environment
        let fatal = FatalStop()
        let daemon: Daemon
        do {
            daemon = try Daemon(environment: environment, logger: logger, replaceSecretService: options.replace, fatal: fatal)
        } catch let quiet as QuietExit {
            logger.debug("\(quiet)")
            return 0
        } catch {
            return fail("\(error)")
        }
        daemon.start()

        var received: Int32 = 0
        while sigwait(&terminationSignals, &received) != 0 {}
        // Another process took the bus name: report it and stop at once, as before a clean
        // shutdown could begin (the keychains are not this instance's to lock any more).
        if let reason = fatal.reason { return fail(reason) }
        daemon.shutDown(signal: received)
        return 0
    }

    /// Writes `keywelld: <message>` to stderr; returns the failure exit status.
    static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("keywelld: \(message)\n".utf8))
        return 1
    }
}

/// The running service's parts.
// @unchecked: immutable after init; every part it holds is Sendable or locks itself.
final class Daemon: @unchecked Sendable {
    let store: KeychainStore
    let logger: Logger
    let environment: [String: String]
    let emitter: SignalEmitter
    let autoLock: AutoLock
    let sessions: LoginSessions
    let loginUnlock: LoginUnlock
    let busLink: SessionBusLink
    let sleepWatcher: SleepWatcher
    let screenLockWatcher: ScreenLockWatcher
    let secretService: SecretService
    let trimmer: IdleTrimmer
    /// Callers' application identities, per connection (docs/access-control.md).
    let identities: ApplicationIdentities
    /// Access control's decisions and questions, for both faces (docs/access-control.md).
    let accessGate: AccessGate
    private var instanceLock: InstanceLock?
    private var controlServer: ControlSocketServer?
    /// The runtime folder, once this is the one instance for it (the lock is held).
    private var runtimeFolder: RuntimeFolder?
    private let nativeObject: NativeKeychainObject
    private let callDeadline: Duration
    /// The native API's direct socket (docs/native-api.md, "The direct socket").
    private var directServer: DBusPeerServer?
    /// The OpenSSH agent (docs/ssh.md).
    private var sshAgent: SSHAgentServer?
    /// Sync between machines through folders (docs/sync.md).
    let sync: SyncService

    /// `fatal` ends the daemon from another thread (see FatalStop).
    init(environment: [String: String], logger: Logger, replaceSecretService: Bool = false, fatal: FatalStop) throws {
        self.environment = environment
        self.logger = logger
        let paths = try KeywellPaths.fromEnvironment(environment)
        // The store's one guessing throttle covers every way a password is checked: native calls,
        // PAM, prompts (docs/decisions.md, "The engine's calls grouped by capability").
        store = try KeychainStore(paths: paths, kdf: TestSwitches.kdfParameters(environment),
                                  throttleUnit: TestSwitches.throttleUnit(environment) ?? PasswordThrottle.defaultUnit,
                                  logger: Logger(label: "keywell.core"))
        trimmer = IdleTrimmer(logger: logger, releaseCaches: { [store] in store.releasePageCaches() },
                              releaseIdleState: { CipherLibrary.releaseIfUnused() })
        emitter = SignalEmitter(logger: logger)
        autoLock = AutoLock(store: store, logger: logger)
        sessions = LoginSessions(store: store, autoLock: autoLock, logger: logger)
        loginUnlock = LoginUnlock(store: store, environment: environment, logger: logger)
        let migration = KeyringMigration(store: store, logger: logger)
        sessions.onLoginPassword { password in migration.migrateAtLogin(password: password) }
        // Access control, one for both faces (docs/access-control.md).
        identities = ApplicationIdentities(resolver: IdentityResolver(runtimeDirectory: paths.runtimeDirectory.deletingLastPathComponent().path))
        // The display the desktop's autostart entry tells a keywelld started before it; every
        // dialog uses it until the last login session closes (docs/prompts.md).
        let sessionDisplay = LearnedSessionDisplay()
        sessions.onLastSessionClosed {
            if sessionDisplay.forget() { logger.info("the last login session closed: forgot the session's display") }
        }
        let accessQuestions = PinentryAccessQuestions(environment: environment, sessionDisplay: sessionDisplay, logger: logger,
                                                      identities: identities)
        // Always Allow: the identity joins each item's list in its keychain file, and the grant
        // is recorded for `keywell doctor` (a record that cannot be written loses no grant).
        let grants = AlwaysAllowRecord(environment: environment)
        accessGate = AccessGate(asker: accessQuestions, persist: { [store, logger] identity, items in
            try store.items.trust(identity, items: items.map(\.reference))
            do {
                try grants.record(identity: identity, items: items)
            } catch {
                logger.warning("Always Allow for \(identity) was written but not recorded for keywell doctor: \(error)")
            }
        }, log: logger, naming: DesktopProgramNaming(DesktopEntryNames(environment: environment)),
        // One answer covers the program for the asked items' same-list neighbours (docs/access-control.md).
        sameList: { [store] items in store.itemsSharingList(with: items, limit: AccessGate.maxCompanions) })
        sessions.onLastSessionClosed { [accessGate] in accessGate.sessionEnded() }
        // One directory of callers for every interface: each call's context finds its caller there.
        let callerDirectory = CallerDirectory(identities: identities)
        secretService = Self.makeSecretService(store: store, environment: environment, sessionDisplay: sessionDisplay,
                                               replaceOwner: replaceSecretService,
                                               autoLock: autoLock, sessions: sessions, trimmer: trimmer,
                                               access: SecretServiceAccess(gate: accessGate, callers: callerDirectory), logger: logger)
        let sync = SyncService(store: store, kdf: TestSwitches.kdfParameters(environment), logger: logger)
        self.sync = sync
        store.onEvent = { [emitter, secretService, trimmer, store, accessGate] event in
            sync.keychainEvent(event)
            if case .locked(let keychain) = event {
                trimmer.trimSoon()
                // Allow lasts until the keychain locks (docs/access-control.md, "The question").
                if let path = store.registry.keychainFilePath(forOutputName: keychain) { accessGate.keychainLocked(path: path) }
            }
            let nativeSignal: @Sendable () -> Void = { emitter.emit(event) }
            let secretServiceSignals: @Sendable () -> Void = { secretService.keychainEvent(event) }
            // The native face's clients get its "items changed" before the reply to a native call
            // that caused it, and after the reply to a Secret Service call, off that caller's round
            // trip (the Secret Service sends its own item signals after the reply, in order:
            // `SecretService.keychainItemsChanged`); state changes (lock, default keychain) keep
            // their order with everything else.
            if case .itemsChanged = event, let call = DBusMethodCall.current {
                if SecretServiceNames.isServiceObject(call.path) {
                    secretServiceSignals()
                    call.afterReply(nativeSignal)
                    return
                }
                if call.path == KeywellNames.objectPath {
                    nativeSignal()
                    call.afterReply(secretServiceSignals)
                    return
                }
            }
            nativeSignal()
            secretServiceSignals()
        }
        let object = NativeKeychainObject(store: store, sessions: sessions, autoLock: autoLock,
                                          callers: CallerIdentity(), directory: callerDirectory, trimmer: trimmer, logger: logger,
                                          migration: migration, gate: accessGate,
                                          session: NativeSessionCalls(display: sessionDisplay, logger: logger),
                                          accessStatus: AccessStatusSource(questions: accessQuestions, grants: grants),
                                          sync: sync)
        nativeObject = object
        let deadline = TestSwitches.callDeadline(environment) ?? ServiceLimits.callDeadline
        callDeadline = deadline
        screenLockWatcher = ScreenLockWatcher(store: store, logger: logger)
        sleepWatcher = SleepWatcher(store: store, screenLock: screenLockWatcher, logger: logger)
        let runtimeDirectory = paths.runtimeDirectory.deletingLastPathComponent().path
        let busAddress = DBusConnection.sessionBusAddress(environment: ["XDG_RUNTIME_DIR": runtimeDirectory].merging(environment) { $1 })
        busLink = SessionBusLink(address: busAddress ?? "unix:path=\(runtimeDirectory)/bus", object: object, emitter: emitter,
                                 logger: logger, claimDelay: TestSwitches.claimDelay(environment),
                                 callDeadline: deadline, prepare: { [secretService, screenLockWatcher, accessGate, logger] connection in
            accessQuestions.use(connection)
            do throws(DBusError) {
                try accessGate.watch(connection)
            } catch {
                logger.error("cannot follow callers leaving the bus (Allow answers would outlive them): \(error.message)")
            }
            secretService.attach(to: connection)
            screenLockWatcher.watchScreenSavers(on: connection)
        }, onNameTaken: { message in
            fatal.stop("\(message); exiting")
        })
        try openControlSocket(in: paths.runtimeDirectory.path)
    }

    /// The single-instance lock, then the PAM module's socket: both before the bus, which may not
    /// exist yet. Without a usable runtime folder the daemon still serves D-Bus.
    private func openControlSocket(in folderPath: String) throws {
        let folder: RuntimeFolder
        do {
            folder = try RuntimeFolder.prepare(folderPath)
        } catch {
            logger.warning("no control socket for PAM: \(error)")
            return
        }
        switch try InstanceLock.acquire(at: folder.lockFilePath) {
        case .heldBy(let pid):
            let who = pid.map { "pid \($0)\(CallerIdentity.executable(of: $0).map { " (\($0))" } ?? "")" } ?? "another process"
            let refusal = "already running for this user: \(who) holds \(folder.lockFilePath)"
            guard let starter = ActivationHandOff.starter(environment: environment) else { throw DaemonError("\(refusal); exiting") }
            instanceLock = try handOff(started: starter, refusal: refusal, lockPath: folder.lockFilePath)
        case .acquired(let lock):
            instanceLock = lock
        }
        runtimeFolder = folder
        do {
            let sessions = self.sessions
            let loginUnlock = self.loginUnlock
            let trimmer = self.trimmer
            let server = try ControlSocketServer(path: folder.controlSocketPath, logger: logger) { request, sender in
                trimmer.noteActivity()
                return Daemon.serve(request, from: sender, sessions: sessions, loginUnlock: loginUnlock)
            }
            server.start()
            controlServer = server
        } catch {
            logger.warning("no control socket for PAM: \(error)")
        }
    }

    /// Started by a bus while another instance holds the lock: wait for that instance to own the
    /// name there (exit 0), or for the lock (carry on as the one instance). See ActivationHandOff.
    private func handOff(started starter: ActivationHandOff.Starter, refusal: String, lockPath: String) throws -> InstanceLock {
        let address: String
        if case .dbusActivation(let starterAddress) = starter { address = starterAddress } else { address = busLink.address }
        logger.debug("started by \(starter) while \(refusal); waiting for \(KeywellNames.busName) on \(address)")
        switch try ActivationHandOff.wait(lockPath: lockPath, busAddress: address) {
        case .served(let owner):
            throw QuietExit(description: "\(refusal); \(KeywellNames.busName) is owned by \(owner) on \(address), "
                                + "which serves this activation; exiting")
        case .busGone:
            throw QuietExit(description: "\(refusal); the bus that started this one (\(address)) went away; exiting")
        case .acquired(let lock):
            logger.info("the other instance went away before claiming \(KeywellNames.busName); carrying on as the one instance")
            return lock
        case .timedOut:
            throw DaemonError("\(refusal), and nobody claimed \(KeywellNames.busName) on \(address) within "
                              + "\(ActivationHandOff.patience) (is it on another bus?); exiting")
        }
    }

    private static func serve(_ request: ControlProtocol.Request, from sender: LoginSessions.Sender,
                              sessions: LoginSessions, loginUnlock: LoginUnlock) -> LoginSessions.Outcome {
        if request.operation.rootOnly, sender != .root {
            return LoginSessions.Outcome(status: SecStatus.wrPerm, message: "only root may send this request")
        }
        return switch request.operation {
        case .openSession: sessions.openSession(password: request.fields.first, from: sender)
        case .closeSession: sessions.closeSession()
        case .changePassword: sessions.changePassword(old: request.fields[0], new: request.fields[1], from: sender)
        case .ping: .ok("keywelld \(DaemonOptions.version)")
        case .openSessionWithTPM: sessions.openSession(tpmAuthorization: request.fields[0], unlocking: loginUnlock)
        case .enableLoginUnlock:
            loginUnlock.enable(password: request.fields[0], authValue: request.fields[1],
                               tcti: String(decoding: request.fields[2].withUnsafeBytes { Data($0) }, as: UTF8.self),
                               pcrs: request.fields.count > 3
                                   ? String(decoding: request.fields[3].withUnsafeBytes { Data($0) }, as: UTF8.self) : "")
        case .disableLoginUnlock: loginUnlock.disable()
        }
    }

    func start() {
        busLink.start()
        openDirectSocket()
        openSSHAgent()
        autoLock.start()
        sleepWatcher.start(environment: environment)
        trimmer.start()
        sync.start()
    }

    /// SIGTERM/SIGINT: lock every keychain (the signals go out), move every -wal into its keychain
    /// file (docs/cli.md, "Backing up"), flush the bus, remove the socket.
    func shutDown(signal: Int32) {
        logger.info("\(signal == SIGINT ? "SIGINT" : "SIGTERM"): locking every keychain and exiting")
        store.locking.lockAll()
        store.checkpointAll()
        directServer?.stop()
        busLink.close()
        controlServer?.removeSocketFile()
        sshAgent?.removeSocketFile()
    }

    /// Serves the OpenSSH agent at `$XDG_RUNTIME_DIR/keywell/ssh-agent` (docs/ssh.md).
    private func openSSHAgent() {
        guard let folder = runtimeFolder else { return }
        let secretService = secretService
        let keys = KeychainKeyStore(store: store, gate: accessGate, resolver: identities.resolver, logger: logger,
                                    unlock: { keychain, requester in secretService.unlockWithDialog(keychain, requester: requester) })
        do {
            let server = try SSHAgentServer(path: folder.sshAgentSocketPath, store: keys, logger: logger)
            server.start()
            sshAgent = server
        } catch {
            logger.warning("no SSH agent: \(error)")
        }
    }

    /// Serves the native object at `$XDG_RUNTIME_DIR/keywell/native` too, for clients that want
    /// no bus hop. Only where the kernel pins a socket's peer with a pidfd (Linux 6.5): the caller's
    /// identity must be as sure as on the bus (docs/access-control.md). Connections get the bus
    /// connection's limits, and their ending is their caller leaving.
    private func openDirectSocket() {
        guard let folder = runtimeFolder else { return }
        guard PeerCredentials.kernelPinsPeers else {
            logger.info("no direct socket: this kernel does not give a socket's peer as a pidfd (Linux 6.5); clients use the bus")
            return
        }
        let object = nativeObject
        let deadline = callDeadline
        let identities = identities
        let gate = accessGate
        let logger = logger
        do {
            directServer = try DBusPeerServer(path: folder.directSocketPath, prepare: { connection in
                connection.applyServiceLimits(callDeadline: deadline)
                // Only here: on the bus connection a lower cap would let any client drop keywelld off the bus.
                connection.maximumMessageSize = ServiceLimits.bytesPerMessage
                do throws(DBusError) {
                    try connection.register(object, at: KeywellNames.objectPath)
                } catch {
                    logger.error("direct socket: cannot serve a connection: \(error.message)")
                    connection.close()
                }
            }, ended: { connection in
                guard let name = connection.peerName else { return }
                identities.forgetPeer(name)
                gate.connectionLeft(name)
            })
        } catch {
            logger.warning("no direct socket at \(folder.directSocketPath): \(error.message); clients use the bus")
        }
    }
}
