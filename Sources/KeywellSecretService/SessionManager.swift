import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import SecretServiceCrypto

/// One client's session: how secrets travel between it and us.
final class SecretSession: Sendable {
    let number: UInt64
    /// The unique bus name of the connection that opened it; nobody else may use it.
    let owner: String
    /// Nil for `plain`; the AES key agreed through Diffie-Hellman otherwise.
    let cipher: AESCBCCipher?
    /// Secrets travel encrypted (a DH session): what crosses the bus is no secret.
    var isEncrypted: Bool { cipher != nil }

    /// Kept: every secret sent back names it.
    let path: String

    init(number: UInt64, owner: String, cipher: AESCBCCipher?) {
        self.number = number
        self.owner = owner
        self.cipher = cipher
        path = ObjectPaths.sessionPath(number)
    }
}

/// Open sessions, per owner. Sessions end with `Close`, when their owner leaves the bus
/// (NameOwnerChanged), or when the daemon moves to a new bus. One connection holds at most
/// `ServiceLimits.sessionsPerConnection`.
final class SessionManager: Sendable {
    /// The open sessions, only touched under the lock.
    private struct Table {
        var sessions: [UInt64: SecretSession] = [:]
        /// The numbers of each owner's sessions: a departing client's are found without a walk
        /// over everybody's, and its count is at hand.
        var numbersByOwner: [String: Set<UInt64>] = [:]
        var nextNumber: UInt64 = 1
        let maximumPerOwner: Int

        func checkRoom(for owner: String) throws(DBusError) {
            guard (numbersByOwner[owner]?.count ?? 0) >= maximumPerOwner else { return }
            throw CallLimits.exceeded("This connection has \(maximumPerOwner) open sessions, the most one may have: close some first")
        }

        mutating func forget(_ session: SecretSession) {
            sessions[session.number] = nil
            guard var numbers = numbersByOwner[session.owner] else { return }
            numbers.remove(session.number)
            numbersByOwner[session.owner] = numbers.isEmpty ? nil : numbers
        }
    }

    private let table: Protected<Table>
    private let keyPairs = DHKeyPairPool()

    init(maximumPerOwner: Int = ServiceLimits.sessionsPerConnection) {
        table = Protected(Table(maximumPerOwner: maximumPerOwner))
    }

    /// `OpenSession`: the output value and the session. Unknown algorithms are `NotSupported`,
    /// the one clients fall back to `plain` on; an owner at its cap is `LimitsExceeded`.
    func open(algorithm: String, input: DBusValue, owner: String) throws(DBusError) -> (output: DBusValue, session: SecretSession) {
        // Checked before the key agreement too, so that refusals cost nothing.
        try table.withLock { table throws(DBusError) in try table.checkRoom(for: owner) }
        let output: DBusValue
        let cipher: AESCBCCipher?
        switch algorithm {
        case SecretServiceNames.plainAlgorithm:
            // The input is unused, but of the specification's type, as gnome-keyring requires.
            guard input.stringValue != nil else {
                throw .invalidArgs("\(SecretServiceNames.plainAlgorithm) takes an empty string as input, got \(input.signature.rawValue)")
            }
            output = .string("")
            cipher = nil
        case DHKeyExchange.algorithm:
            guard let peerKey = input.bytesValue else {
                throw .invalidArgs("\(DHKeyExchange.algorithm) takes the client's public key as ay, got \(input.signature.rawValue)")
            }
            try CallLimits.check(peerKey.count, atMost: ServiceLimits.sessionKeyBytes, "A public key has", "bytes")
            let exchange = try keyPairs.take()
            do {
                cipher = AESCBCCipher(key: try exchange.deriveKey(peerPublicKey: peerKey))
            } catch {
                throw .invalidArgs("The client's public key is not usable: \(error)")
            }
            output = .bytes(exchange.publicKey)
        default:
            throw .notSupported("Algorithm \(algorithm) is not supported (plain and \(DHKeyExchange.algorithm) are)")
        }
        let session = try table.withLock { table throws(DBusError) -> SecretSession in
            try table.checkRoom(for: owner)
            let session = SecretSession(number: table.nextNumber, owner: owner, cipher: cipher)
            table.nextNumber += 1
            table.sessions[session.number] = session
            table.numbersByOwner[owner, default: []].insert(session.number)
            return session
        }
        return (output, session)
    }

    /// The session at `path` if `caller` owns it; anything else is NoSession (gnome-keyring's answer).
    func session(at path: String, for caller: String) throws(DBusError) -> SecretSession {
        guard case .session(let number)? = ObjectPaths.parse(path),
              let session = table.withLock({ $0.sessions[number] }), session.owner == caller
        else { throw SecretServiceError.noSession("No session \(path) of this connection") }
        return session
    }

    func exists(_ number: UInt64) -> Bool { table.withLock { $0.sessions[number] != nil } }

    func close(_ number: UInt64, caller: String) throws(DBusError) {
        try table.withLock { table throws(DBusError) in
            guard let session = table.sessions[number], session.owner == caller else {
                throw SecretServiceError.noSuchObject("No session \(ObjectPaths.sessionPath(number)) of this connection")
            }
            table.forget(session)
        }
    }

    /// Returns how many there were.
    @discardableResult
    func closeAll(ownedBy owner: String) -> Int {
        table.withLock { table in
            guard let numbers = table.numbersByOwner.removeValue(forKey: owner) else { return 0 }
            for number in numbers { table.sessions[number] = nil }
            return numbers.count
        }
    }

    func closeAll() {
        table.withLock { table in
            table.sessions.removeAll()
            table.numbersByOwner.removeAll()
        }
    }

    var count: Int { table.withLock { $0.sessions.count } }
}

/// Diffie-Hellman key pairs made ahead of time on a background thread, so that OpenSession
/// only pays for the shared-secret exponentiation: a key pair is half of a DH session's cost.
final class DHKeyPairPool: Sendable {
    /// The pairs made ahead, and whether a refill runs; only touched under the lock.
    private let pool = Protected<(ready: [DHKeyExchange], refilling: Bool)>(([], false))
    private let target = 4

    func take() throws(DBusError) -> DHKeyExchange {
        let pair = pool.withLock { $0.ready.popLast() }
        refillInBackground()
        if let pair { return pair }
        do {
            return try DHKeyExchange()
        } catch {
            throw .failed("Cannot make a Diffie-Hellman key pair: \(error)")
        }
    }

    private func refillInBackground() {
        let start = pool.withLock { pool -> Bool in
            guard !pool.refilling, pool.ready.count < target else { return false }
            pool.refilling = true
            return true
        }
        guard start else { return }
        startDetachedThread(name: "dh-pool", stackSize: 1 << 20) { [self] in
            while true {
                guard let pair = try? DHKeyExchange() else { break }
                let full = pool.withLock { pool -> Bool in
                    pool.ready.append(pair)
                    return pool.ready.count >= target
                }
                if full { break }
            }
            pool.withLock { $0.refilling = false }
        }
    }
}
