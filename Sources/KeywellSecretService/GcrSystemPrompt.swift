import Foundation
import KeywellCore
import KeywellDBus
import KeywellIdentity
import KeywellSystem
import Logging
import SecretServiceCrypto

/// One conversation with gcr's system prompter, the dialog gnome-keyring shows (docs/prompts.md,
/// "GNOME's dialog"), as gnome-keyring holds it: keywelld exports a callback object on its own
/// bus connection, calls `BeginPrompting` with its path, waits for the prompter's first
/// `PromptReady`, sends `PerformPrompt` with the dialog's properties and reads the answer from
/// the next `PromptReady`; `StopPrompting` closes the dialog. Blocks the calling thread, never
/// the connection's I/O thread (the callback is answered there, at once).
///
/// Only the process that owned the prompter's name when the prompt began is listened to, and
/// only when it is a program only root can replace and no interpreter (its identity
/// `exe:<path>` alone, docs/access-control.md): a program or script of the user that took the
/// name could otherwise answer its own question.
// @unchecked: every mutable field is guarded by `lock`.
final class GcrSystemPrompt: @unchecked Sendable {
    /// What the prompter said, or why it says nothing more.
    enum Event: Equatable {
        /// `PromptReady`: the reply, the dialog's properties that changed (only the choice is
        /// kept) and the prompter's half of the secret exchange (a password, encrypted).
        case ready(reply: String, choiceChosen: Bool?, exchange: String)
        /// `PromptDone`: the prompter stopped prompting for us (closed, or another took over).
        case done
        /// The prompter's process left the bus.
        case gone
        /// `withdraw()` was called.
        case withdrawn
        case timedOut
    }

    /// `PromptReady`s kept while nobody waits; the prompter sends one and waits for a
    /// `PerformPrompt`, so more means a misbehaving peer: the excess is dropped.
    static let queuedEventsCap = 8

    private let connection: DBusConnection
    let path: String
    /// The prompter's unique name, fixed when the prompt began.
    private let owner: String
    private let deadline: UInt64
    private let lock = ConditionLock()
    private var events: [Event] = []
    private var withdrawn = false
    private var ownerGone = false
    private var stopped = false
    private var subscription: DBusSignalSubscription?
    private let exchange: DHKeyExchange

    private static let counter = Protected(UInt64(0))

    /// Starts the prompter if needed (D-Bus activation) and begins prompting. Throws a reason in
    /// words when no dialog can be shown this way (the caller then tries pinentry).
    init(on connection: DBusConnection, deadline: UInt64, identities: ApplicationIdentities) throws(GcrPromptError) {
        self.connection = connection
        self.deadline = deadline
        let number = Self.counter.withLock { value -> UInt64 in
            value += 1
            return value
        }
        path = GcrPrompterNames.callbackPathPrefix + String(number)
        do {
            exchange = try DHKeyExchange(group: .ike1536)
        } catch {
            throw GcrPromptError("cannot make gcr's secret exchange key: \(error)")
        }
        owner = try Self.startPrompter(on: connection, deadline: deadline)
        try Self.checkRootOnly(owner, on: connection, identities: identities)
        do throws(DBusError) {
            subscription = try connection.addMatch(.nameOwnerChanged(name: owner)) { [weak self] signal in
                guard signal.arguments.count == 3, signal.arguments[2].stringValue == "" else { return }
                self?.note { $0.ownerGone = true }
            }
            try connection.register(GcrPromptCallback(prompt: self), at: path)
            _ = try connection.call(destination: owner, path: GcrPrompterNames.objectPath, interface: GcrPrompterNames.interface,
                                    member: GcrPrompterNames.beginPrompting, arguments: [.objectPath(path)],
                                    timeout: Self.remaining(until: deadline), autoStart: false)
        } catch {
            finish()
            throw GcrPromptError("gcr's prompter refused to begin: \(error.message)")
        }
    }

    deinit { finish() }

    /// The prompter's unique name: activates it when the name has no owner (StartServiceByName
    /// returns once it owns the name, or fails when it could not start, e.g. without a display).
    private static func startPrompter(on connection: DBusConnection, deadline: UInt64) throws(GcrPromptError) -> String {
        do throws(DBusError) {
            if let owner = try connection.nameOwner(GcrPrompterNames.busName) { return owner }
            try connection.startService(GcrPrompterNames.busName, timeout: remaining(until: deadline))
            if let owner = try connection.nameOwner(GcrPrompterNames.busName) { return owner }
            throw DBusError.failed("it started but does not own \(GcrPrompterNames.busName)")
        } catch {
            throw GcrPromptError("gcr's prompter (\(GcrPrompterNames.busName)) could not be started: \(error.message)")
        }
    }

    /// The name's owner must run a program only root can replace, not an interpreter (which
    /// would run whatever script the user gave it): `/usr/libexec/gcr-prompter`, or
    /// `/usr/bin/gnome-shell`, which serves the name itself in a GNOME Shell session.
    private static func checkRootOnly(_ owner: String, on connection: DBusConnection,
                                      identities: ApplicationIdentities) throws(GcrPromptError) {
        let identity: ApplicationIdentity
        do {
            identity = try identities.identity(of: owner, on: connection)
        } catch {
            throw GcrPromptError("cannot tell which program owns \(GcrPrompterNames.busName): \(error)")
        }
        guard case .executable(_, nil, nil) = identity.kind else {
            throw GcrPromptError("\(GcrPrompterNames.busName) is owned by \(identity.string), not a program only root can replace")
        }
    }

    /// Waits for the next event from the prompter, at most until the deadline.
    func next() -> Event {
        lock.lock()
        defer { lock.unlock() }
        while true {
            if withdrawn { return .withdrawn }
            if !events.isEmpty { return events.removeFirst() }
            if ownerGone { return .gone }
            if !lock.wait(untilNanoseconds: deadline), monotonicNanoseconds() >= deadline { return .timedOut }
        }
    }

    /// Shows a dialog: `PerformPrompt` with `properties` and our half of the secret exchange.
    func perform(type: String, properties: [(String, DBusValue)]) throws(GcrPromptError) {
        let key = Data(exchange.publicKey).base64EncodedString()
        let sent = "[\(GcrPrompterNames.exchangeGroup)]\n\(GcrPrompterNames.exchangePublic)=\(key)\n"
        var attempt = 0
        while true {
            do throws(DBusError) {
                _ = try connection.call(destination: owner, path: GcrPrompterNames.objectPath, interface: GcrPrompterNames.interface,
                                        member: GcrPrompterNames.performPrompt,
                                        arguments: [.objectPath(path), .string(type), .stringVariantDict(properties), .string(sent)],
                                        timeout: Self.remaining(until: deadline), autoStart: false)
                return
            } catch {
                // The prompter counts itself ready only once our reply to its PromptReady has
                // reached its main loop, which may come after this call does ("Already
                // performing a prompt for this prompt callback"): asked again shortly, it takes it.
                attempt += 1
                guard error.name == DBusError.Name.failed, attempt < Self.performAttempts,
                      monotonicNanoseconds() + Self.performRetryPause < deadline else {
                    throw GcrPromptError("gcr's prompter refused the dialog: \(error.message)")
                }
                usleep(useconds_t(Self.performRetryPause / 1000))
            }
        }
    }

    /// `PerformPrompt` tries before the prompter's refusal stands, and the pause between them.
    static let performAttempts = 40
    static let performRetryPause: UInt64 = 50_000_000

    /// The password in the prompter's half of the exchange (`[sx-aes-1]`, `public=`, `iv=`,
    /// `secret=`, base64): AES-128-CBC under the key both sides derive (docs/prompts.md). Nil when
    /// it carries no secret.
    func secret(in exchange: String) throws(GcrPromptError) -> SecretBytes? {
        guard exchange.utf8.count <= Self.maximumExchange else { throw GcrPromptError("gcr's prompter sent an oversized exchange") }
        var fields: [String: [UInt8]] = [:]
        var group = ""
        for line in exchange.split(whereSeparator: \.isNewline) {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("[") { group = text; continue }
            guard group == "[\(GcrPrompterNames.exchangeGroup)]", let equals = text.firstIndex(of: "=") else { continue }
            let key = String(text[..<equals])
            guard [GcrPrompterNames.exchangePublic, GcrPrompterNames.exchangeIV, GcrPrompterNames.exchangeSecret].contains(key),
                  let bytes = Data(base64Encoded: String(text[text.index(after: equals)...])) else { continue }
            fields[key] = Array(bytes)
        }
        guard let ciphertext = fields[GcrPrompterNames.exchangeSecret] else { return nil }
        guard let peer = fields[GcrPrompterNames.exchangePublic], let iv = fields[GcrPrompterNames.exchangeIV] else {
            throw GcrPromptError("gcr's prompter sent a secret without its key or iv")
        }
        do {
            var plain = try AESCBCCipher(key: transportKey(with: peer)).open(iv: iv, ciphertext: ciphertext)
            defer { plain.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
            return SecretBytes(copying: plain)
        } catch {
            throw GcrPromptError("cannot open the password gcr's prompter sent: \(error)")
        }
    }

    /// An exchange is a few hundred bytes; more is not read.
    static let maximumExchange = 64 * 1024

    private func transportKey(with peer: [UInt8]) throws(SecretCryptoError) -> SecretBytes {
        try exchange.deriveKey(peerPublicKey: peer)
    }

    /// Closes the dialog from another thread (a withdrawn question): `next()` answers `.withdrawn`.
    func withdraw() { note { $0.withdrawn = true } }

    /// Stops prompting (closing a dialog still shown) and stops listening. Idempotent.
    func finish() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        if let subscription { connection.removeMatch(subscription) }
        connection.unregister(path: path)
        try? connection.callWithoutReply(destination: owner, path: GcrPrompterNames.objectPath,
                                         interface: GcrPrompterNames.interface, member: GcrPrompterNames.stopPrompting,
                                         arguments: [.objectPath(path)])
    }

    /// A callback from the bus: kept only when it comes from the prompter we began with.
    fileprivate func received(_ event: Event, from sender: String) -> Bool {
        guard sender == owner else { return false }
        note { prompt in
            if prompt.events.count < Self.queuedEventsCap { prompt.events.append(event) }
        }
        return true
    }

    private func note(_ change: (GcrSystemPrompt) -> Void) {
        lock.withLock {
            change(self)
            lock.broadcast()
        }
    }

    private static func remaining(until deadline: UInt64) -> Duration {
        let now = monotonicNanoseconds()
        return .nanoseconds(Int64(clamping: deadline > now ? deadline - now : 1_000_000))
    }
}

/// Why gcr's prompter cannot show a dialog, in words for the log.
struct GcrPromptError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The callback object gcr's prompter calls: `PromptReady(s reply, a{sv} properties, s exchange)`
/// and `PromptDone()`. Answered on the I/O thread: it only hands the event to the waiting prompt.
private final class GcrPromptCallback: DBusObject, GcrPromptCallbackMethods {
    private weak let prompt: GcrSystemPrompt?

    init(prompt: GcrSystemPrompt) { self.prompt = prompt }

    func interfaces(at path: String) -> [DBusInterface]? { [GcrInterfaces.promptCallback] }

    func placement(of call: DBusMethodCall) -> DBusCallPlacement { .ioThread }

    func handle(_ call: DBusMethodCall) {
        // The prompter is known by its bus name alone (`received(_:from:)`): no caller to work out.
        let context = CallContext(call, callers: nil, logger: Self.logger)
        call.reply { () throws(DBusError) in try dispatchGcrPromptCallback(call, context: context) }
    }

    private static let logger = Logger(label: "keywelld")

    func promptReady(reply: String, properties: DBusValue, exchange: String, call: CallContext) throws(DBusError) {
        let chosen = properties.asStringVariantDict()?[GcrPrompterNames.Property.choiceChosen]?.unwrappingVariants.boolValue
        try deliver(.ready(reply: reply, choiceChosen: chosen, exchange: exchange), call)
    }

    func promptDone(call: CallContext) throws(DBusError) {
        try deliver(.done, call)
    }

    private func deliver(_ event: GcrSystemPrompt.Event, _ call: CallContext) throws(DBusError) {
        guard let prompt, prompt.received(event, from: call.sender) else {
            throw .accessDenied("Not the prompter this prompt was begun with")
        }
    }
}

extension PrompterChoice.SystemPrompter {
    /// Whether gcr's prompter runs on `connection`'s bus or can be started there; absent when
    /// the bus does not answer.
    static func on(_ connection: DBusConnection?) -> Self {
        guard let connection else { return .absent }
        do {
            if try connection.nameHasOwner(GcrPrompterNames.busName) { return .running }
            return try connection.isActivatable(GcrPrompterNames.busName) ? .activatable : .absent
        } catch {
            return .absent
        }
    }
}
