import KeywellAccess
import KeywellCore
import KeywellDBus
import KeywellIdentity
import KeywellProtocol
import KeywellSystem
import Logging

/// What one call carries to its handler besides its arguments, the same for every interface
/// keywelld serves (the native API, the Secret Service's objects, gnome-keyring's private
/// interface, the portal backend, KWallet, gcr's callback): the call, its caller as access
/// control sees it, its deadline and its log scope (docs/dbus-layer.md, "One context per
/// call"). The object that receives a call builds it once and hands it to the generated
/// dispatch, which passes it to the method's function; nothing under a handler finds the
/// caller another way.
///
/// The caller is worked out on first use and then kept for the call: a call that never asks
/// who is calling (OpenSession, a prompt's Dismiss) never waits for the bus, and one that asks
/// several times pays once. It lives in this module, the lowest that both the Secret Service's
/// faces and the daemon's native API build on.
// @unchecked: a call runs on one thread at a time (the I/O thread, then at most one worker it
// hands the call to, the hand-off ordering the two), so its context is never used at once by two.
public final class CallContext: @unchecked Sendable {
    public let call: DBusMethodCall
    /// Where callers are looked up; nil for a service built without access control (unit
    /// tests), whose calls have no caller and every item is allowed.
    private let callers: CallerDirectory?
    private var resolved: KnownCaller??
    /// The log scope: the logger the call's outcome goes to, and when the call began (its
    /// arrival: a clock read of its own here was one more on every call).
    public let logger: Logger
    public var started: ContinuousClock.Instant { call.arrived }
    /// What the call's plaintext passed through, wiped once its reply has gone (`wipeAfterReply`).
    private var wipes: [WireDictionary] = []

    public init(_ call: DBusMethodCall, callers: CallerDirectory?, logger: Logger) {
        self.call = call
        self.callers = callers
        self.logger = logger
    }

    // MARK: The caller

    /// The caller as access control sees it (its identity worked out, or taken from the
    /// identities cache, once per call); nil without access control.
    public var known: KnownCaller? {
        if let resolved { return resolved }
        let found = callers?.known(call)
        resolved = .some(found)
        return found
    }

    /// The caller; one whose identity cannot be worked out is trusted with nothing.
    public var caller: AccessCaller? { known?.caller }

    /// The caller's application identity, when it could be worked out.
    public var identity: ApplicationIdentity? { known?.caller.identity }

    // MARK: The call

    /// The caller's unique bus name (a peer's name on the direct socket).
    public var sender: String { call.sender }
    public var connection: DBusConnection { call.connection }
    public var path: String { call.path }
    public var member: String { call.member }
    /// When nobody waits for the reply any more (the connection's call deadline).
    public var deadline: ContinuousClock.Instant { call.deadline }

    /// See `DBusMethodCall.replyMayHoldSecrets`.
    public var replyMayHoldSecrets: Bool {
        get { call.replyMayHoldSecrets }
        set { call.replyMayHoldSecrets = newValue }
    }

    /// See `DBusMethodCall.checkStillWanted()`.
    public func checkStillWanted() throws(DBusError) { try call.checkStillWanted() }

    /// See `DBusMethodCall.afterReply(_:)`.
    public func afterReply(_ work: @escaping @Sendable () -> Void) { call.afterReply(work) }

    // MARK: After the reply

    /// Keeps `dictionary` (a request or reply that may hold a secret) to be wiped by
    /// `finishAfterReply()`: the caller waits for the reply, not for the clean-up.
    public func wipeAfterReply(_ dictionary: WireDictionary) { wipes.append(dictionary) }
    public func wipeAfterReply(_ list: [WireDictionary]) { wipes += list }

    /// Wipes (and frees) what `wipeAfterReply` kept; the object calls it once the reply is out.
    public func finishAfterReply() {
        for index in wipes.indices { SecretWipe.wipe(&wipes[index]) }
        wipes = []
    }

    /// Microseconds since the call began, for its log line.
    public var elapsedMicroseconds: Int64 {
        let elapsed = ContinuousClock.now - started
        return elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
    }
}

/// A caller as access control sees it, and the list texts found to trust it so far (kept per
/// connection, `TrustingLists`).
///
/// A class: a call takes it out of `CallerDirectory`'s table with one retain, where copying the
/// struct it was copied the caller's identity field by field on every call.
public final class KnownCaller: Sendable {
    public let caller: AccessCaller
    public let trusting: TrustingLists

    init(caller: AccessCaller, trusting: TrustingLists) {
        self.caller = caller
        self.trusting = trusting
    }
}

/// The callers of every interface, by connection: their identities (`ApplicationIdentities`)
/// and the `AccessCaller` last made for each connection, kept while its identity stays the one
/// the identities cache gives (docs/performance.md, "What a call costs before and after its
/// handler"): making a caller builds the identity's strings, and judging a list splits it. Each
/// call still asks the identities cache, so nothing here outlives an identity it no longer
/// gives; a bound keeps the table small (unique names are never reused). One for the daemon,
/// shared by every interface.
///
/// Keyed by the identities cache's entry for the caller (`ApplicationIdentities.Entry`), held
/// here so its address is not reused: the cache makes a new entry whenever it keeps an answer,
/// so finding the entry it gives now is finding what was made from that very answer, with no
/// copy or comparison of the identity, and no second hash of the caller's name, per call
/// (docs/performance.md, "Reads with fewer steps").
public final class CallerDirectory: Sendable {
    private static let capacity = 256
    public let identities: ApplicationIdentities
    private let table = Protected<[ObjectIdentifier: (entry: ApplicationIdentities.Entry, known: KnownCaller)]>([:])

    public init(identities: ApplicationIdentities) {
        self.identities = identities
    }

    /// Whether `call`'s caller's identity is known already: only then may a read stay on the
    /// D-Bus I/O thread (working it out waits for the bus). From the I/O thread, placing the
    /// call: for a caller not known yet the bus is asked for its credentials now, while the call
    /// goes to a worker, where `learn` takes the answer.
    public func isKnown(_ call: DBusMethodCall) -> Bool {
        if identities.isCached(call.sender, on: call.connection) { return true }
        identities.prefetch(call.sender, on: call.connection)
        return false
    }

    /// Works out the identity of a caller not known yet, on a worker, before its call runs: so
    /// that its next calls stay on the I/O thread even when this one never asks who called
    /// (ReadAlias, a property); without it, a client making only such calls had every one handed
    /// to a worker (docs/performance.md, "The D-Bus layer's cost per call"). A failure that may
    /// not last (the bus, a race) is not kept, so the next call asks again.
    public func learn(_ call: DBusMethodCall) {
        guard !call.connection.isOnIOThread, !identities.isCached(call.sender, on: call.connection) else { return }
        _ = try? identities.identity(of: call.sender, on: call.connection)
    }

    /// `call`'s caller, its identity worked out (or taken from the cache).
    func known(_ call: DBusMethodCall) -> KnownCaller {
        var entry = identities.entry(of: call.sender, on: call.connection)
        if let entry, let kept = table.withLock({ $0[ObjectIdentifier(entry)] }) { return kept.known }
        if entry == nil {
            // Worked out now (waits for the bus); an answer that may not last is not kept there,
            // nor here: the caller is then made for this call only.
            _ = try? identities.identity(of: call.sender, on: call.connection)
            entry = identities.entry(of: call.sender, on: call.connection)
        }
        let identity = try? entry?.result.get()
        let made = KnownCaller(caller: AccessCaller(connection: call.sender, identity: identity), trusting: TrustingLists())
        guard let entry else { return made }
        table.withLock { table in
            if table.count >= Self.capacity { table.removeAll(keepingCapacity: true) }
            table[ObjectIdentifier(entry)] = (entry, made)
        }
        return made
    }
}
