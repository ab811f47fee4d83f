import Foundation
import KeywellDBus
import KeywellSystem

/// Who owns a well-known name on one connection's bus right now. Any connection may send a
/// signal straight to another with any path, interface and member, and a match rule naming a
/// well-known sender does not stop it; so a signal counts only when its sender is the name's
/// current owner: asked once at start, then followed through the bus's own `NameOwnerChanged`,
/// which no client can send (docs/auto-lock.md).
final class NameOwnerTracker: Sendable {
    private struct State {
        /// The unique name owning `name`; nil while nobody does.
        var owner: String?
        /// A NameOwnerChanged was seen: it is newer than the GetNameOwner answer may be.
        var followed = false
        var subscription: DBusSignalSubscription?
    }

    let name: String
    private let state = Protected(State())

    /// Starts following `name` on `connection` (blocking call: not from its I/O thread).
    init(_ name: String, on connection: DBusConnection) throws(DBusError) {
        self.name = name
        // Follow first, then ask, so no change falls in between.
        let subscription = try connection.addMatch(.nameOwnerChanged(name: name)) { [weak self] signal in
            guard let self, signal.arguments.count == 3, let owner = signal.arguments[2].stringValue else { return }
            state.withLock { state in
                state.owner = owner.isEmpty ? nil : owner
                state.followed = true
            }
        }
        let current = try connection.nameOwner(name)
        state.withLock { state in
            if !state.followed { state.owner = current }
            state.subscription = subscription
        }
    }

    func isOwner(_ sender: String) -> Bool {
        state.withLock { $0.owner != nil && $0.owner == sender }
    }
}
