import Foundation

/// Receivers of `KeychainLifecycleEvent`s (the Secret Service's collection signals).
extension KeychainStore {
    /// Adds a receiver of every `KeychainLifecycleEvent`. Like `onEvent`, it runs on the thread
    /// that made the change, after the change and before that call's `onEvent` events (so a
    /// keychain is announced before anything about it).
    public func observeKeychains(_ handler: @escaping @Sendable (KeychainLifecycleEvent) -> Void) {
        LifecycleObservers.add(handler, for: self)
    }

    func emit(_ events: [KeychainLifecycleEvent]) {
        guard !events.isEmpty else { return }
        let handlers = LifecycleObservers.handlers(of: self)
        for event in events { handlers.forEach { $0(event) } }
    }
}

/// The observers of each store, in one table beside the stores: an extension cannot add stored
/// properties. An entry holds its store weakly, so a later store that reuses a dead one's
/// address never inherits its observers.
private enum LifecycleObservers {
    typealias Handler = @Sendable (KeychainLifecycleEvent) -> Void

    private struct Entry {
        weak var store: KeychainStore?
        var handlers: [Handler]
    }

    private static let table = Protected<[ObjectIdentifier: Entry]>([:])

    static func add(_ handler: @escaping Handler, for store: KeychainStore) {
        table.withLock { table in
            table = table.filter { $0.value.store != nil }
            let key = ObjectIdentifier(store)
            if table[key]?.store === store {
                table[key]!.handlers.append(handler)
            } else {
                table[key] = Entry(store: store, handlers: [handler])
            }
        }
    }

    static func handlers(of store: KeychainStore) -> [Handler] {
        table.read { table in
            guard let entry = table[ObjectIdentifier(store)], entry.store === store else { return [] }
            return entry.handlers
        }
    }
}
