import Foundation
import KeywellDBus
import Synchronization

/// Every connected caller's identity, worked out at its first call and kept until its unique
/// name leaves the bus (NameOwnerChanged), so that later calls pay a dictionary lookup. The
/// thing access control asks: `identity(of: call.sender, on: call.connection)`.
///
/// Unique names are never reused on one bus, but a new bus (keywelld reconnects when the
/// session bus comes back) numbers its connections afresh: the cache belongs to one connection
/// to the bus, and starting to serve another forgets everything.
public final class ApplicationIdentities: Sendable {
    public let resolver: IdentityResolver
    /// Callers remembered at once. A session has a few dozen; beyond the cap the oldest are
    /// forgotten (and worked out again if they call again).
    public let capacity: Int

    private struct Cache {
        var known: [String: Result<ApplicationIdentity, IdentityError>] = [:]
        var order: [String] = []
        /// Names seen leaving, so an answer worked out while its caller left is not kept forever.
        var departed = Set<String>()
        var departedOrder: [String] = []
        /// The bus connection the cache is about (weak: a closed connection is not kept alive).
        weak var current: DBusConnection?
    }

    private let cache = Mutex(Cache())

    public init(resolver: IdentityResolver, capacity: Int = 4096) {
        self.resolver = resolver
        self.capacity = max(1, capacity)
    }

    /// The identity already known for `sender`, without any call to the bus or the kernel: the
    /// per-call cost of access control for a caller seen before. nil: not worked out yet.
    public func cached(_ sender: String, on connection: DBusConnection) -> Result<ApplicationIdentity, IdentityError>? {
        cache.withLock { $0.current === connection ? $0.known[sender] : nil }
    }

    /// `sender`'s identity, worked out on its first call (a few bus round trips and, for a
    /// program not seen before, hashing its executable). Not from the D-Bus I/O thread when
    /// `cached` said nil: it waits for the bus.
    public func identity(of sender: String, on connection: DBusConnection) throws(IdentityError) -> ApplicationIdentity {
        if let result = cached(sender, on: connection) { return try result.get() }
        guard !sender.isEmpty else { throw .bus("the call came from no bus name") }
        try adopt(connection)
        let result: Result<ApplicationIdentity, IdentityError>
        do throws(IdentityError) {
            result = .success(try resolver.resolve(sender, on: connection))
        } catch {
            result = .failure(error)
        }
        if Self.isLasting(result) { remember(sender, result, on: connection) }
        return try result.get()
    }

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
            cache.known[sender] = result
            cache.order.append(sender)
        }
    }

    func forget(_ sender: String, on connection: DBusConnection?) {
        let capacity = capacity
        cache.withLock { cache in
            guard let connection, cache.current === connection else { return }
            if cache.known.removeValue(forKey: sender) != nil, let index = cache.order.firstIndex(of: sender) {
                cache.order.remove(at: index)
            }
            guard cache.departed.insert(sender).inserted else { return }
            cache.departedOrder.append(sender)
            if cache.departedOrder.count > capacity { cache.departed.remove(cache.departedOrder.removeFirst()) }
        }
    }

    /// Makes `connection` the one the cache is about: a different one forgets every caller (they
    /// were another bus's) and subscribes to names leaving this bus.
    private func adopt(_ connection: DBusConnection) throws(IdentityError) {
        let isNew = cache.withLock { cache -> Bool in
            guard cache.current !== connection else { return false }
            cache = Cache(current: connection)
            return true
        }
        guard isNew else { return }
        var rule = DBusMatchRule.nameOwnerChanged()
        rule.arguments[2] = ""
        do {
            _ = try connection.addMatch(rule) { [weak self, weak connection] signal in
                guard let name = signal.arguments.first?.stringValue, name.hasPrefix(":") else { return }
                self?.forget(name, on: connection)
            }
        } catch {
            cache.withLock { if $0.current === connection { $0.current = nil } }
            throw .bus("cannot watch callers leaving: \(error.message)")
        }
    }
}
