import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import Logging

/// The daemon's place on the session bus: connects, exports the native object, owns
/// `org.keywell.Keychain`, and, whenever there is no bus (not yet, or it went away), waits for
/// one and claims the name as soon as it appears. The control socket works all along.
final class SessionBusLink: Sendable {
    enum Attempt {
        case claimed(DBusConnection)
        /// No bus to talk to (yet); the reason, for a debug line.
        case noBus(String)
        /// Someone else owns the name: a message for people.
        case nameTaken(String)
    }

    let address: String
    private let object: any DBusObject
    private let emitter: SignalEmitter
    private let logger: Logger
    /// Serves the rest (the Secret Service, the portal, access questions) on a new connection.
    private let prepare: @Sendable (DBusConnection) -> Void
    private let onNameTaken: @Sendable (String) -> Void
    /// Test hook (KEYWELL_TEST_CLAIM_DELAY_MS): a pause between connecting and claiming the name.
    private let claimDelay: Duration?
    /// How long a handler may work on one call (`ServiceLimits.callDeadline`; a test hook
    /// shortens it).
    private let callDeadline: Duration
    private let link = Protected(Link())

    private struct Link {
        var connection: DBusConnection?
        var closing = false
    }

    init(address: String, object: any DBusObject, emitter: SignalEmitter, logger: Logger, claimDelay: Duration? = nil,
         callDeadline: Duration = ServiceLimits.callDeadline,
         prepare: @escaping @Sendable (DBusConnection) -> Void, onNameTaken: @escaping @Sendable (String) -> Void) {
        self.address = address
        self.claimDelay = claimDelay
        self.callDeadline = callDeadline
        self.object = object
        self.emitter = emitter
        self.logger = logger
        self.prepare = prepare
        self.onNameTaken = onNameTaken
    }

    var currentConnection: DBusConnection? { link.withLock { $0.connection } }

    /// One attempt now (on the caller's thread, so start-up owns the name as early as possible),
    /// then a background thread keeps the link up.
    func start() {
        let first = attempt()
        if case .nameTaken(let message) = first { onNameTaken(message) }
        startDetachedThread(name: "session-bus", stackSize: 256 << 10) { [self] in maintain(after: first) }
    }

    /// Closes the connection (flushing queued signals) and stops reconnecting.
    func close() {
        let current = link.withLock { link -> DBusConnection? in
            link.closing = true
            return link.connection
        }
        current?.close()
    }

    func attempt() -> Attempt {
        let connection: DBusConnection
        do {
            connection = try DBusConnection(address: address)
        } catch {
            return .noBus(error.message)
        }
        connection.applyServiceLimits(callDeadline: callDeadline)
        if let claimDelay {
            logger.debug("test hook: waiting \(claimDelay) before claiming \(KeywellNames.busName)")
            Thread.sleep(forTimeInterval: Double(claimDelay.components.seconds) + Double(claimDelay.components.attoseconds) / 1e18)
        }
        do {
            // Before the object is there: no call can come in before the watch is.
            try connection.watchCallersLeaving()
            try connection.register(object, at: KeywellNames.objectPath)
            // Everything is served before the name is asked for: owning it ends an activation,
            // and the activating client's next call (to the Secret Service object, say) must
            // not find that object missing.
            prepare(connection)
            switch try connection.requestName(KeywellNames.busName, flags: [.doNotQueue]) {
            case .primaryOwner, .alreadyOwner:
                break
            case .exists, .inQueue:
                let message = Self.ownerDescription(on: connection)
                connection.close()
                return .nameTaken(message)
            }
        } catch {
            connection.close()
            return .noBus(error.message)
        }
        link.withLock { $0.connection = connection }
        emitter.use(connection)
        return .claimed(connection)
    }

    private func maintain(after first: Attempt) {
        var outcome = first
        let watcher = BusSocketWatcher(address: address)
        var reportedAbsence = false
        // After the folder changed, the bus may have its socket but not listen yet: retry soon.
        var quickRetries = 0
        while true {
            switch outcome {
            case .claimed(let connection):
                logger.info("owning \(KeywellNames.busName) on \(address)")
                reportedAbsence = false
                connection.run()  // until the bus goes away or close()
                emitter.use(nil)
                link.withLock { $0.connection = nil }
                if link.withLock({ $0.closing }) { return }
                logger.notice("lost the session bus; waiting for a new one")
            case .noBus(let reason):
                if !reportedAbsence {
                    logger.debug("no session bus at \(address) yet (\(reason)); serving the control socket meanwhile")
                    reportedAbsence = true
                }
                if quickRetries > 0 {
                    quickRetries -= 1
                    watcher.wait(timeout: .milliseconds(50))
                } else if watcher.wait(timeout: .seconds(2)) {
                    quickRetries = 20
                }
            case .nameTaken(let message):
                onNameTaken(message)
                return
            }
            if link.withLock({ $0.closing }) { return }
            outcome = attempt()
        }
    }

    /// "pid 123 (/usr/bin/keywelld)" for the connection that owns the name.
    private static func ownerDescription(on connection: DBusConnection) -> String {
        guard let owner = try? connection.nameOwner(KeywellNames.busName) else {
            return "\(KeywellNames.busName) is already owned by another connection"
        }
        guard let pid = try? connection.unixProcessID(of: owner) else {
            return "\(KeywellNames.busName) is already owned by \(owner)"
        }
        let executable = CallerIdentity.executable(of: pid_t(bitPattern: pid)).map { " (\($0))" } ?? ""
        return "\(KeywellNames.busName) is already owned by pid \(pid)\(executable), bus connection \(owner)"
    }
}

extension DBusConnection {
    /// The limits every connection keywelld serves gets, on the bus or the direct socket: how
    /// many values one call may decode, and how long its handler may work (ServiceLimits).
    func applyServiceLimits(callDeadline: Duration) {
        maximumDecodedValuesPerCall = ServiceLimits.decodedValuesPerCall
        self.callDeadline = callDeadline
    }
}
