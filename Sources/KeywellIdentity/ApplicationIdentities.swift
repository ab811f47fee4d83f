import Foundation
import KeywellDBus

/// Every connected caller's identity, worked out at its first call and kept until its unique
/// name leaves the bus (NameOwnerChanged), so that later calls pay a dictionary lookup. The
/// thing access control asks: `identity(of: call.sender, on: call.connection)`.
public final class ApplicationIdentities: @unchecked Sendable {
    public let resolver: IdentityResolver
    /// Callers remembered at once. A session has a few dozen; beyond the cap the oldest are
    /// forgotten (and worked out again if they call again).
    public let capacity: Int

    private let lock = NSLock()
    private var known: [String: Result<ApplicationIdentity, IdentityError>] = [:]
    private var order: [String] = []
    /// Names seen leaving, so an answer worked out while its caller left is not kept forever.
    private var departed = Set<String>()
    private var departedOrder: [String] = []
    private var watched = Set<ObjectIdentifier>()

    public init(resolver: IdentityResolver, capacity: Int = 4096) {
        self.resolver = resolver
        self.capacity = max(1, capacity)
    }

    /// The identity already known for `sender`, without any call to the bus or the kernel: the
    /// per-call cost of access control for a caller seen before. nil: not worked out yet.
    public func cached(_ sender: String) -> Result<ApplicationIdentity, IdentityError>? {
        lock.withLock { known[sender] }
    }

    /// `sender`'s identity, worked out on its first call (a few bus round trips and, for a
    /// program not seen before, hashing its executable). Not from the D-Bus I/O thread when
    /// `cached` said nil: it waits for the bus.
    public func identity(of sender: String, on connection: DBusConnection) throws(IdentityError) -> ApplicationIdentity {
        if let result = cached(sender) { return try result.get() }
        guard !sender.isEmpty else { throw .bus("the call came from no bus name") }
        try watch(connection)
        let result: Result<ApplicationIdentity, IdentityError>
        do throws(IdentityError) {
            result = .success(try resolver.resolve(sender, on: connection))
        } catch {
            result = .failure(error)
        }
        if Self.isLasting(result) { remember(sender, result) }
        return try result.get()
    }

    /// How many callers are remembered.
    public var count: Int { lock.withLock { known.count } }

    /// A race or a bus failure may not happen again; anything else is what the caller is.
    private static func isLasting(_ result: Result<ApplicationIdentity, IdentityError>) -> Bool {
        switch result {
        case .success: return true
        case .failure(.raced), .failure(.bus): return false
        case .failure: return true
        }
    }

    private func remember(_ sender: String, _ result: Result<ApplicationIdentity, IdentityError>) {
        lock.withLock {
            guard !departed.contains(sender), known[sender] == nil else { return }
            if known.count >= capacity, !order.isEmpty { known[order.removeFirst()] = nil }
            known[sender] = result
            order.append(sender)
        }
    }

    func forget(_ sender: String) {
        lock.withLock {
            if known.removeValue(forKey: sender) != nil, let index = order.firstIndex(of: sender) { order.remove(at: index) }
            guard departed.insert(sender).inserted else { return }
            departedOrder.append(sender)
            if departedOrder.count > capacity { departed.remove(departedOrder.removeFirst()) }
        }
    }

    /// Subscribes once per connection to unique names leaving the bus.
    private func watch(_ connection: DBusConnection) throws(IdentityError) {
        let id = ObjectIdentifier(connection)
        guard lock.withLock({ watched.insert(id).inserted }) else { return }
        var rule = DBusMatchRule.nameOwnerChanged()
        rule.arguments[2] = ""
        do {
            _ = try connection.addMatch(rule) { [weak self] signal in
                guard let name = signal.arguments.first?.stringValue, name.hasPrefix(":") else { return }
                self?.forget(name)
            }
        } catch {
            _ = lock.withLock { watched.remove(id) }
            throw .bus("cannot watch callers leaving: \(error.message)")
        }
    }
}
