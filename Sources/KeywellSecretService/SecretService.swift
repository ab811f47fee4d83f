import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import Logging

/// The freedesktop Secret Service (`org.freedesktop.secrets`) over the keychain engine: what
/// keywelld exports next to its native API, on the same bus connection and the same store.
public final class SecretService: Sendable {
    public struct Configuration: Sendable {
        /// The daemon's environment: it decides which password dialog prompts show (`PrompterChoice`).
        public var environment: [String: String]
        /// Take `org.freedesktop.secrets` from its current owner (`keywelld --replace`).
        public var replaceOwner: Bool
        /// Called after a prompt unlocked or created a keychain with this password.
        public var keychainUnlocked: @Sendable (String, SecretBytes) -> Void
        /// Called for every call and property access (the daemon's idle timers count it as use).
        public var activity: @Sendable () -> Void
        /// Called after work done later than the calls that caused it (a big collection's paced
        /// `Items` signal), on the timer thread: the daemon's memory trim repeats its last step.
        public var deferredWorkDone: @Sendable () -> Void
        /// Access control on items (docs/secret-service.md, "Access control"); nil: none.
        public var access: SecretServiceAccess?
        /// The display the session told keywelld, for prompts when the environment has none.
        public var sessionDisplay: LearnedSessionDisplay

        public init(environment: [String: String] = [:], sessionDisplay: LearnedSessionDisplay = LearnedSessionDisplay(),
                    replaceOwner: Bool = false,
                    keychainUnlocked: @escaping @Sendable (String, SecretBytes) -> Void = { _, _ in },
                    activity: @escaping @Sendable () -> Void = {}, deferredWorkDone: @escaping @Sendable () -> Void = {},
                    access: SecretServiceAccess? = nil) {
            self.environment = environment
            self.sessionDisplay = sessionDisplay
            self.replaceOwner = replaceOwner
            self.keychainUnlocked = keychainUnlocked
            self.activity = activity
            self.deferredWorkDone = deferredWorkDone
            self.access = access
        }
    }

    let context: ServiceContext
    private let tree: SecretServiceTree
    private let portal: SecretPortal
    private let kwallet: KWalletService
    private let configuration: Configuration
    private let logger: Logger
    /// The bus served now, and the watches of its name and of clients leaving (kept alive while it serves).
    private let served = Protected<(connection: DBusConnection?, ownerWatches: [DBusSignalSubscription])>((nil, []))
    /// The bus the prompts ask for the activation environment.
    private let currentConnection: LockedConnection
    /// One unlock dialog for the SSH agent at a time: the signatures behind it find the keychain open.
    private let agentUnlocking = Protected(())

    public init(store: KeychainStore, configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        let directory = CollectionDirectory(store: store)
        let signals = SecretServiceSignals(directory: directory, logger: logger, itemsPacer: ItemsPropertyPacer(
            schedule: { [done = configuration.deferredWorkDone] delay, body in
                _ = TimerThread.shared.schedule(after: delay) {
                    body()
                    done()
                }
            }))
        let connectionNow = LockedConnection()
        // GNOME's dialog for passwords too, where access control can tell who serves it.
        let identities = configuration.access?.identities
        var systemPrompter: (@Sendable () -> PrompterChoice.SystemPrompter)? = nil
        if identities != nil {
            systemPrompter = { .on(connectionNow.get()) }
        }
        let choice = PrompterChoice(environment: configuration.environment,
                                    sessionDisplay: { [display = configuration.sessionDisplay] in display.environment },
                                    activationEnvironment: { connectionNow.get()?.activationEnvironment() ?? [:] },
                                    systemPrompter: systemPrompter)
        let gcr = identities.map { GcrPasswords(connection: { connectionNow.get() }, identities: $0) }
        context = ServiceContext(
            store: store, directory: directory, sessions: SessionManager(),
            prompts: PromptManager(asker: Pinentry(choice: choice, gcr: gcr), signals: signals, logger: logger),
            signals: signals, logger: logger, access: configuration.access,
            keychainUnlocked: configuration.keychainUnlocked)
        tree = SecretServiceTree(context: context, activity: configuration.activity)
        currentConnection = connectionNow
        context.directory.noteCurrentList()
        portal = SecretPortal(context: context)
        kwallet = KWalletService(context: context, activity: configuration.activity)
        // Keychains made or removed through any face, this one included: the one place that
        // sends CollectionCreated and CollectionDeleted, so none is sent twice.
        store.observeKeychains { [signals = context.signals] _ in signals.inOrder { signals.collectionListChanged() } }
        // Items made, changed or deleted through any face: the one place that sends ItemCreated,
        // ItemChanged and ItemDeleted for keychains.
        store.observeItems { [weak self] event in self?.keychainItemsChanged(event) }
    }

    /// Asks for a locked keychain's password with the Secret Service's unlock dialog and unlocks it
    /// (a signature with a key of a locked keychain, docs/ssh.md). False at once when no dialog can
    /// be shown, and when the person cancels or the password is wrong five times.
    public func unlockWithDialog(_ keychain: String, requester: String) -> Bool {
        agentUnlocking.withLock { _ -> Bool in
            if (try? context.store.locking.isLocked(keychain)) == false { return true }
            if let reason = context.prompts.unavailableReason() {
                logger.notice("\"\(keychain)\" is locked and no password dialog can be shown (\(reason)); unlock it with `keywell unlock-keychain \(keychain)`")
                return false
            }
            let prompt = PromptContext(windowID: "", asker: context.prompts.asker)
            defer { prompt.finish() }
            return !UnlockPrompt(context: context, requester: requester).run([keychain], prompt).isEmpty
        }
    }

    /// Serves on `connection` (a new one each time the daemon finds a session bus): exports the
    /// objects, asks for `org.freedesktop.secrets`, watches clients leave, and serves the Secret
    /// portal's backend (docs/portal.md). A new bus means a new
    /// login session: sessions, prompts and the in-memory collection of the old one are dropped.
    public func attach(to connection: DBusConnection) {
        let previous = served.withLock { served -> DBusConnection? in
            defer { served.connection = connection }
            return served.connection
        }
        if previous != nil {
            context.prompts.dismissAll()
            context.sessions.closeAll()
            // Nobody on the old bus to tell.
            context.directory.sessionCollection.clear()
        }
        context.signals.use(connection)
        currentConnection.set(connection)
        do {
            try connection.registerSubtree(tree, at: SecretServiceNames.servicePath)
            // Two narrow rules rather than every NameOwnerChanged: the bus then sends nothing when
            // a client connects, only when one leaves (a lookup's process does both, and each
            // signal wakes this daemon while it serves that lookup).
            let nameWatch = try connection.addMatch(.nameOwnerChanged(name: SecretServiceNames.busName)) { [weak self] signal in
                self?.serviceNameChanged(signal, on: connection)
            }
            let departureWatch = try connection.addMatch(.namesLeft()) { [weak self] signal in
                self?.clientLeft(signal)
            }
            served.withLock { $0.ownerWatches = [nameWatch, departureWatch] }
            claimName(on: connection)
        } catch {
            logger.error("cannot serve \(SecretServiceNames.busName): \(error.message)")
        }
        // After the Secret Service's name: a portal call that starts keywelld finds both served.
        portal.attach(to: connection)
        // KDE applications' wallet API, over the same items (docs/kwallet.md).
        kwallet.attach(to: connection)
    }

    /// Engine events as Secret Service signals (the daemon passes every event on).
    public func keychainEvent(_ event: KeychainEvent) {
        // Told item by item, with the new values, by `observeItems`, after the call's reply
        // (gnome-keyring sends no CollectionChanged for a collection's items either).
        if case .itemsChanged = event {
            kwallet.keychainEvent(event)
            return
        }
        // After an earlier change's item signals still waiting for their call's reply.
        context.signals.inOrder { [context, kwallet] in
            kwallet.keychainEvent(event)
            switch event {
            case .locked(let name): context.signals.lockChanged(.keychain(name), locked: true)
            case .unlocked(let name): context.signals.lockChanged(.keychain(name), locked: false)
            case .itemsChanged: break
            // The alias `default` moved, or the order of `Collections` (default first, then the
            // search list) changed; a path-addressed keychain may have joined or left the list.
            case .defaultKeychainChanged, .searchListChanged: context.signals.collectionListChanged()
            }
        }
    }

    /// The user's last login session closed (PAM told the daemon): the in-memory `session`
    /// collection is that session's, so its items go now, with ItemDeleted for each.
    public func loginSessionsEnded() {
        let count = context.clearSessionCollection()
        if count > 0 { logger.info("the last login session closed: forgot \(count) item(s) of the session collection") }
    }

    /// A call's item signals go right after its reply, whichever face it came through: each
    /// message sent before a reply delays the reply by the bus's turn for it, and no client
    /// needs them first (docs/secret-service.md, "Signals"). `signals.ordered` keeps their order.
    private func keychainItemsChanged(_ event: KeychainItemsEvent) {
        let itemSignals = context.signals.ordered
        itemSignals.enqueue { [context, kwallet] in
            context.signals.itemsChanged(in: .keychain(event.keychain), created: event.created,
                                         changed: event.changed, deleted: event.deleted)
            kwallet.itemsChanged(event)
        }
        if let call = DBusMethodCall.current {
            call.afterReply { [itemSignals] in itemSignals.flush() }
        } else {
            itemSignals.flush()
        }
    }

    // MARK: The bus name

    /// Asks for the name allowing others to replace us, queued behind a current owner (so we get
    /// it when that owner leaves); `--replace` takes it from an owner that allows replacement.
    private func claimName(on connection: DBusConnection) {
        var flags: DBusConnection.RequestNameFlags = [.allowReplacement]
        if configuration.replaceOwner { flags.insert(.replaceExisting) }
        let owner = (try? connection.nameOwner(SecretServiceNames.busName)).flatMap { $0 }
        do {
            switch try connection.requestName(SecretServiceNames.busName, flags: flags) {
            case .primaryOwner, .alreadyOwner:
                if let owner, owner != connection.uniqueName {
                    logger.notice("took over \(SecretServiceNames.busName) from \(describe(owner, on: connection))")
                } else {
                    logger.info("owning \(SecretServiceNames.busName)")
                }
            case .inQueue, .exists:
                let holder = owner.map { describe($0, on: connection) } ?? "another connection"
                let hint = configuration.replaceOwner
                    ? "it does not allow replacement; stop it to let Keywell serve"
                    : "run `keywelld --replace` to take it over"
                logger.warning("\(SecretServiceNames.busName) is owned by \(holder): Keywell serves its native API only and waits for the name (\(hint))")
            }
        } catch {
            logger.error("cannot ask for \(SecretServiceNames.busName): \(error.message)")
        }
    }

    private func serviceNameChanged(_ signal: DBusSignal, on connection: DBusConnection) {
        guard signal.arguments.count == 3, signal.arguments[0].stringValue == SecretServiceNames.busName,
              let oldOwner = signal.arguments[1].stringValue, let newOwner = signal.arguments[2].stringValue,
              let ours = connection.uniqueName else { return }
        // Taking a free name is logged by claimName; this is the queue moving on.
        if newOwner == ours, !oldOwner.isEmpty {
            logger.notice("now owning \(SecretServiceNames.busName) (\(oldOwner) left or gave it up)")
        } else if oldOwner == ours {
            logger.warning("\(SecretServiceNames.busName) was taken over by \(newOwner.isEmpty ? "nobody" : describe(newOwner, on: connection)); serving the native API only")
        }
    }

    /// A client left: its sessions and prompts go with it.
    private func clientLeft(_ signal: DBusSignal) {
        guard signal.arguments.count == 3, let name = signal.arguments[0].stringValue, name.hasPrefix(":"),
              signal.arguments[2].stringValue == "" else { return }
        let closed = context.sessions.closeAll(ownedBy: name)
        if closed > 0 { logger.debug("closed \(closed) Secret Service session(s) of \(name), which left the bus") }
        context.prompts.dismissAll(ownedBy: name)
        kwallet.connectionLeft(name)
    }

    private func describe(_ owner: String, on connection: DBusConnection) -> String {
        ServiceContext.describe(owner, on: connection).map { "\($0), bus connection \(owner)" } ?? "bus connection \(owner)"
    }
}
