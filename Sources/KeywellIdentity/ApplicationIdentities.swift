import Foundation
import KeywellDBus
import KeywellSystem

/// Every connected caller's identity, worked out at its first call and kept until its unique
/// name leaves the bus (NameOwnerChanged), so that later calls pay a dictionary lookup. The
/// thing access control asks: `identity(of: call.sender, on: call.connection)`.
///
/// Unique names are never reused on one bus, but a new bus (keywelld reconnects when the
/// session bus comes back) numbers its connections afresh: the cache belongs to one connection
/// to the bus, and starting to serve another forgets everything.
public final class ApplicationIdentities: Sendable {
    /// One caller's answer as the cache keeps it. A new entry is made whenever an answer is
    /// kept, so a table built on top (`CallerDirectory`) can tell by the entry alone, without
    /// copying and comparing the identity, that what it made for the caller still stands.
    public final class Entry: Sendable {
        public let result: Result<ApplicationIdentity, IdentityError>
        init(_ result: Result<ApplicationIdentity, IdentityError>) { self.result = result }
    }

    public let resolver: IdentityResolver
    /// Callers remembered at once. A session has a few dozen; beyond the cap the oldest are
    /// forgotten (and worked out again if they call again).
    public let capacity: Int

    private struct Cache {
        var known: [String: Entry] = [:]
        var order: [String] = []
        /// Names seen leaving, so an answer worked out while its caller left is not kept forever.
        var departed = Set<String>()
        var departedOrder: [String] = []
        /// The bus connection the cache is about (weak: a closed connection is not kept alive).
        weak var current: DBusConnection?
        /// Credentials asked for new callers before their calls reached a worker (`prefetch`).
        var asked: [String: CallerCredentials.Question] = [:]
        var askedOrder: [String] = []
    }

    /// Callers on the direct socket (`DBusPeerServer`), by their connection's `peerName`, until
    /// it ends (`forgetPeer`). Peer names are never reused in one process.
    private let peers = Protected<[String: Entry]>([:])

    /// Questions kept waiting for their callers' calls at once; older ones are cancelled.
    static let maximumAsked = 64

    private let cache = Protected(Cache())

    public init(resolver: IdentityResolver, capacity: Int = 4096) {
        self.resolver = resolver
        self.capacity = max(1, capacity)
    }

    /// The identity already known for `sender`, without any call to the bus or the kernel: the
    /// per-call cost of access control for a caller seen before. nil: not worked out yet.
    public func cached(_ sender: String, on connection: DBusConnection) -> Result<ApplicationIdentity, IdentityError>? {
        entry(of: sender, on: connection)?.result
    }

    /// What `cached` answers from, kept as it is: one retain, no copy of the identity.
    public func entry(of sender: String, on connection: DBusConnection) -> Entry? {
        if let peer = connection.peerName { return peers.withLock { $0[peer] } }
        return cache.withLock { $0.current === connection ? $0.known[sender] : nil }
    }

    /// Whether `sender`'s identity is known already, as `cached(_:on:) != nil` says, without
    /// copying the identity (its strings) out of the cache and dropping it again: asked for every
    /// call, to place it (docs/performance.md, "The D-Bus layer's cost per call").
    public func isCached(_ sender: String, on connection: DBusConnection) -> Bool {
        if let peer = connection.peerName { return peers.withLock { $0.index(forKey: peer) != nil } }
        return cache.withLock { $0.current === connection && $0.known.index(forKey: sender) != nil }
    }

    /// Asks the bus for a new caller's credentials from the D-Bus I/O thread, which may send but
    /// not wait, as its first call is handed to a worker: the round trip then overlaps the
    /// hand-over instead of following it. `identity(of:)` takes the answer. Asks nothing for a
    /// caller already known or already asked, or before the first caller made the cache follow
    /// this connection.
    public func prefetch(_ sender: String, on connection: DBusConnection) {
        guard !sender.isEmpty, connection.peerName == nil else { return }
        let wanted = cache.withLock { cache in
            cache.current === connection && cache.known[sender] == nil && cache.asked[sender] == nil && !cache.departed.contains(sender)
        }
        guard wanted, let question = try? CallerCredentials.start(sender, on: connection) else { return }
        // Questions dropped here are cancelled outside the lock (cancelling takes the connection's own).
        // A caller seen leaving meanwhile gets no question kept: nothing would take it.
        let dropped = cache.withLock { cache -> [CallerCredentials.Question] in
            guard cache.current === connection, cache.asked[sender] == nil, !cache.departed.contains(sender) else { return [question] }
            cache.asked[sender] = question
            cache.askedOrder.append(sender)
            var dropped: [CallerCredentials.Question] = []
            while cache.askedOrder.count > Self.maximumAsked {
                if let old = cache.asked.removeValue(forKey: cache.askedOrder.removeFirst()) { dropped.append(old) }
            }
            return dropped
        }
        _ = dropped
    }

    /// The question `prefetch` sent for `sender`, taken out.
    private func takeAsked(_ sender: String, on connection: DBusConnection) -> CallerCredentials.Question? {
        cache.withLock { cache in
            guard cache.current === connection, let question = cache.asked.removeValue(forKey: sender) else { return nil }
            if let index = cache.askedOrder.firstIndex(of: sender) { cache.askedOrder.remove(at: index) }
            return question
        }
    }

    /// `sender`'s identity, worked out on its first call (a few bus round trips and, for a
    /// program not seen before, hashing its executable). Not from the D-Bus I/O thread when
    /// `cached` said nil: it waits for the bus.
    public func identity(of sender: String, on connection: DBusConnection) throws(IdentityError) -> ApplicationIdentity {
        if let result = cached(sender, on: connection) { return try result.get() }
        if let peer = connection.peerName { return try peerIdentity(peer, on: connection) }
        guard !sender.isEmpty else { throw .bus("the call came from no bus name") }
        try adopt(connection)
        let result: Result<ApplicationIdentity, IdentityError>
        do throws(IdentityError) {
            result = .success(try resolver.resolve(sender, on: connection, asked: takeAsked(sender, on: connection)))
        } catch {
            result = .failure(error)
        }
        if Self.isLasting(result) { remember(sender, result, on: connection) }
        return try result.get()
    }

    /// A direct-socket caller's identity, from the kernel's record of the socket's peer.
    private func peerIdentity(_ peer: String, on connection: DBusConnection) throws(IdentityError) -> ApplicationIdentity {
        let result: Result<ApplicationIdentity, IdentityError>
        do throws(IdentityError) {
            guard let socket = connection.socketDescriptor, let credentials = PeerCredentials.of(socket: socket) else {
                throw .process("the socket does not say who connected")
            }
            result = .success(try resolver.resolve(peer: credentials, socket: FileDescriptor(rawValue: socket)))
        } catch {
            result = .failure(error)
        }
        if Self.isLasting(result) {
            let capacity = capacity
            peers.withLock { peers in
                // Under the lock `forgetPeer` takes once the connection has ended: a caller that
                // left while this was worked out (on a worker) leaves no entry behind.
                guard connection.isConnected else { return }
                if peers.count >= capacity { peers.removeAll() }
                peers[peer] = Entry(result)
            }
        }
        return try result.get()
    }

    /// A direct-socket connection ended: its caller is forgotten.
    public func forgetPeer(_ peer: String) {
        peers.withLock { _ = $0.removeValue(forKey: peer) }
    }

    /// How many questions `prefetch` sent are still waiting for their callers' calls.
    var pendingQuestions: Int { cache.withLock { $0.asked.count } }

    /// How many callers are remembered.
    public var count: Int { cache.withLock { $0.known.count } }

    /// A race or a bus failure may not happen again; anything else is what the caller is.
    private static func isLasting(_ result: Result<ApplicationIdentity, IdentityError>) -> Bool {
        switch result {
        case .success: return true
        case .failure(.raced), .failure(.bus): return false
        case .failure: return true
        }
    }

    private func remember(_ sender: String, _ result: Result<ApplicationIdentity, IdentityError>, on connection: DBusConnection) {
        let capacity = capacity
        cache.withLock { cache in
            guard cache.current === connection, !cache.departed.contains(sender), cache.known[sender] == nil else { return }
            if cache.known.count >= capacity, !cache.order.isEmpty { cache.known[cache.order.removeFirst()] = nil }
            cache.known[sender] = Entry(result)
            cache.order.append(sender)
        }
    }

    func forget(_ sender: String, on connection: DBusConnection?) {
        let capacity = capacity
        // An unanswered question is cancelled outside the lock, as in `prefetch`.
        let unanswered = cache.withLock { cache -> CallerCredentials.Question? in
            guard let connection, cache.current === connection else { return nil }
            if cache.known.removeValue(forKey: sender) != nil, let index = cache.order.firstIndex(of: sender) {
                cache.order.remove(at: index)
            }
            let question = cache.asked.removeValue(forKey: sender)
            if question != nil, let index = cache.askedOrder.firstIndex(of: sender) { cache.askedOrder.remove(at: index) }
            if cache.departed.insert(sender).inserted {
                cache.departedOrder.append(sender)
                if cache.departedOrder.count > capacity { cache.departed.remove(cache.departedOrder.removeFirst()) }
            }
            return question
        }
        _ = unanswered
    }

    /// Makes `connection` the one the cache is about: a different one forgets every caller (they
    /// were another bus's) and subscribes to names leaving this bus.
    private func adopt(_ connection: DBusConnection) throws(IdentityError) {
        let previous = cache.withLock { cache -> Cache? in
            guard cache.current !== connection else { return nil }
            defer { cache = Cache(current: connection) }
            return cache
        }
        // The old connection's questions are cancelled here, outside the lock.
        guard previous != nil else { return }
        do {
            _ = try connection.addMatch(.namesLeft()) { [weak self, weak connection] signal in
                guard let name = signal.arguments.first?.stringValue, name.hasPrefix(":") else { return }
                self?.forget(name, on: connection)
            }
        } catch {
            cache.withLock { if $0.current === connection { $0.current = nil } }
            throw .bus("cannot watch callers leaving: \(error.message)")
        }
    }
}
