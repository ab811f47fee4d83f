import Foundation
import KeywellCore
import KeywellSSHWire
import KeywellSystem
import Logging

/// What the agent remembers about one connection.
public struct AgentConnectionState: Sendable {
    /// `session-bind@openssh.com` records, oldest first, at most `AgentLimits.maximumSessionBinds`.
    public internal(set) var sessionBinds: [SessionBind] = []

    public init() {}

    var context: SignatureContext {
        SignatureContext(hostKeyFingerprints: sessionBinds.map { SSHFingerprint.sha256($0.hostKey) })
    }
}

/// The agent protocol's semantics, as OpenSSH's agent gives them (docs/ssh.md): keys added
/// with constraints are kept here, in memory only; every other key is the store's. One service
/// serves every connection; each connection brings its own `AgentConnectionState`.
public final class AgentService<Store: AgentKeyStore>: Sendable {
    private struct MemoryKey: Sendable {
        let pair: SSHKeyPair
        let expires: ContinuousClock.Instant?
        let confirm: Bool

        var identity: AgentIdentity { AgentIdentity(publicBlob: pair.publicBlob, comment: pair.comment) }
    }

    private struct State: Sendable {
        var memoryKeys: [MemoryKey] = []
        var lock = AgentLock()

        /// Forgets keys whose lifetime is over.
        mutating func expire(at now: ContinuousClock.Instant) {
            memoryKeys.removeAll { key in key.expires.map { $0 <= now } ?? false }
        }
    }

    public let store: Store
    private let logger: Logger
    private let state = Protected(State())

    public init(store: Store, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// The reply body to one request body from `caller`.
    public func handle(_ body: [UInt8], connection: inout AgentConnectionState, caller: Store.Caller) -> [UInt8] {
        let request: AgentRequest
        do {
            request = try AgentRequest.parse(body)
        } catch {
            logger.notice("ssh agent: a malformed request refused: \(error.reason)")
            return AgentReply.failure
        }
        let locked = state.withLock { state in
            state.expire(at: .now)
            return state.lock.isLocked
        }
        if locked {
            switch request {
            case .unlock, .sessionBind, .malformedSessionBind: break
            case .requestIdentities: return AgentReply.identities([])
            default: return AgentReply.failure
            }
        }
        return serve(request, connection: &connection, caller: caller)
    }

    /// Keys held in memory now (tests).
    var memoryKeyCount: Int { state.withLock { $0.memoryKeys.count } }

    /// Forgets keys whose lifetime ended (the daemon's timer calls it; requests do it first too).
    public func expireKeys() {
        state.withLock { $0.expire(at: .now) }
    }

    private func serve(_ request: AgentRequest, connection: inout AgentConnectionState, caller: Store.Caller) -> [UInt8] {
        switch request {
        case .requestIdentities:
            let memory = state.withLock { $0.memoryKeys.map(\.identity) }
            var listed = memory
            for identity in store.identities() where !listed.contains(where: { $0.publicBlob == identity.publicBlob }) {
                listed.append(identity)
            }
            return AgentReply.identities(Array(listed.prefix(AgentLimits.maximumListedKeys)))
        case .sign(let blob, let data, let flags):
            return sign(blob, data, flags, connection: connection, caller: caller)
        case .add(let pair, let constraints):
            return add(pair, constraints, caller: caller)
        case .addToKeychain(let pair, let keychain, let trusted):
            do {
                try store.store(pair, in: keychain, trusting: trusted, importedBy: caller)
                return AgentReply.success
            } catch {
                logger.notice("ssh agent: the key \(pair.fingerprint) was not imported: \(error.reason)")
                return AgentReply.extensionFailure
            }
        case .remove(let blob):
            let inMemory = state.withLock { state in
                let before = state.memoryKeys.count
                state.memoryKeys.removeAll { $0.pair.publicBlob == blob }
                return state.memoryKeys.count != before
            }
            let stored = store.remove(publicBlob: blob)
            return AgentReply.status(inMemory || stored)
        case .removeAll:
            state.withLock { $0.memoryKeys.removeAll() }
            store.removeAll()
            return AgentReply.success
        case .lock(let passphrase):
            return AgentReply.status(state.withLock { $0.lock.lock(passphrase) })
        case .unlock(let passphrase):
            let (unlocked, delay) = state.withLock { state in (state.lock.unlock(passphrase), state.lock.delay) }
            if !unlocked {
                logger.notice("ssh agent: a wrong passphrase to unlock the agent")
                Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
            }
            return AgentReply.status(unlocked)
        case .sessionBind(let bind, let signature):
            // As OpenSSH's agent: only a host that signed the session id is recorded.
            guard SSHVerifier.verify(publicKey: bind.hostKey, signature: signature, data: bind.sessionID) else {
                logger.notice("ssh agent: a session-bind whose signature does not verify, refused")
                return AgentReply.extensionFailure
            }
            return record(bind, in: &connection) ? AgentReply.success : AgentReply.extensionFailure
        case .malformedSessionBind(let error):
            logger.notice("ssh agent: a malformed session-bind: \(error.reason)")
            return AgentReply.extensionFailure
        case .query:
            return AgentReply.query()
        case .unknownExtension(let name):
            logger.debug("ssh agent: unsupported extension \"\(name)\"")
            return AgentReply.failure
        case .unsupported(let type):
            logger.debug("ssh agent: unsupported message \(type)")
            return AgentReply.failure
        }
    }

    private func sign(_ blob: [UInt8], _ data: [UInt8], _ flags: SignatureFlags,
                      connection: AgentConnectionState, caller: Store.Caller) -> [UInt8] {
        let context = connection.context
        let privateKey: SecretBytes
        if let memoryKey = state.withLock({ state in state.memoryKeys.first { $0.pair.publicBlob == blob } }) {
            if memoryKey.confirm, !store.confirm(memoryKey.identity, caller: caller, context: context) {
                logger.notice("ssh agent: a signature with \(memoryKey.pair.fingerprint) was not confirmed")
                return AgentReply.failure
            }
            privateKey = memoryKey.pair.privateKey
        } else {
            do {
                guard let stored = try store.privateKey(for: blob, caller: caller, context: context) else { return AgentReply.failure }
                privateKey = stored
            } catch {
                logger.notice("ssh agent: no signature with \(SSHFingerprint.sha256(blob)): \(error.reason)")
                return AgentReply.failure
            }
        }
        do {
            return AgentReply.signature(try SSHSigner.sign(privateKey, data: data, flags: flags))
        } catch {
            logger.error("ssh agent: signing with \(SSHFingerprint.sha256(blob)) failed: \(error.reason)")
            return AgentReply.failure
        }
    }

    private func add(_ pair: SSHKeyPair, _ constraints: KeyConstraints, caller: Store.Caller) -> [UInt8] {
        guard constraints.keepsInMemoryOnly else {
            do {
                try store.store(pair, addedBy: caller)
                return AgentReply.success
            } catch {
                logger.notice("ssh agent: the key \(pair.fingerprint) was not stored: \(error.reason)")
                return AgentReply.failure
            }
        }
        let expires = constraints.lifetimeSeconds.map { ContinuousClock.now + .seconds(Int($0)) }
        let key = MemoryKey(pair: pair, expires: expires, confirm: constraints.confirm)
        let added = state.withLock { state -> Bool in
            state.memoryKeys.removeAll { $0.pair.publicBlob == pair.publicBlob }
            guard state.memoryKeys.count < AgentLimits.maximumMemoryKeys else { return false }
            state.memoryKeys.append(key)
            return true
        }
        if !added { logger.notice("ssh agent: already \(AgentLimits.maximumMemoryKeys) keys in memory") }
        if added, let seconds = constraints.lifetimeSeconds {
            // Forgotten (and its locked memory wiped) when due, not at the next request.
            _ = TimerThread.shared.schedule(after: .seconds(Int(seconds))) { [weak self] in self?.expireKeys() }
        }
        return AgentReply.status(added)
    }

    /// Records a session binding as OpenSSH's agent does: once a connection was bound for
    /// authentication (not forwarded), it may not be bound again; the same id with another key is
    /// refused. Its signature was checked before.
    private func record(_ bind: SessionBind, in connection: inout AgentConnectionState) -> Bool {
        for earlier in connection.sessionBinds {
            guard earlier.forwarded else { return false }
            if earlier.sessionID == bind.sessionID { return earlier.hostKey == bind.hostKey }
        }
        guard connection.sessionBinds.count < AgentLimits.maximumSessionBinds else { return false }
        connection.sessionBinds.append(bind)
        return true
    }
}
