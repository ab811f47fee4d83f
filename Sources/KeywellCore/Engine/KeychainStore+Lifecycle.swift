import Foundation
import KeywellSystem

/// Receivers of `KeychainLifecycleEvent`s and `KeychainItemsEvent`s (the Secret Service's
/// collection and item signals).
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

    /// Adds a receiver of every `KeychainItemsEvent`. It runs on the thread that made the change,
    /// after the change and right before that call's `itemsChanged` events.
    public func observeItems(_ handler: @escaping @Sendable (KeychainItemsEvent) -> Void) {
        LifecycleObservers.add(items: handler, for: self)
    }

    /// A call changed items: each keychain's `KeychainItemsEvent`, then its `itemsChanged`.
    func emit(itemChanges events: [KeychainItemsEvent]) {
        guard !events.isEmpty else { return }
        let handlers = LifecycleObservers.itemHandlers(of: self)
        for event in events { handlers.forEach { $0(event) } }
        emit(events.map { .itemsChanged($0.keychain) })
    }
}

/// The observers of each store, in one table beside the stores: an extension cannot add stored
/// properties. An entry holds its store weakly, so a later store that reuses a dead one's
/// address never inherits its observers.
private enum LifecycleObservers {
    typealias Handler = @Sendable (KeychainLifecycleEvent) -> Void
    typealias ItemsHandler = @Sendable (KeychainItemsEvent) -> Void

    private struct Entry {
        weak var store: KeychainStore?
        var handlers: [Handler] = []
        var itemHandlers: [ItemsHandler] = []
    }

    private static let table = Protected<[ObjectIdentifier: Entry]>([:])

    static func add(_ handler: @escaping Handler, for store: KeychainStore) {
        change(store) { $0.handlers.append(handler) }
    }

    static func add(items handler: @escaping ItemsHandler, for store: KeychainStore) {
        change(store) { $0.itemHandlers.append(handler) }
    }

    static func handlers(of store: KeychainStore) -> [Handler] {
        entry(of: store)?.handlers ?? []
    }

    static func itemHandlers(of store: KeychainStore) -> [ItemsHandler] {
        entry(of: store)?.itemHandlers ?? []
    }

    private static func change(_ store: KeychainStore, _ body: (inout Entry) -> Void) {
        table.withLock { table in
            table = table.filter { $0.value.store != nil }
            let key = ObjectIdentifier(store)
            var entry = table[key]?.store === store ? table[key]! : Entry(store: store)
            body(&entry)
            table[key] = entry
        }
    }

    private static func entry(of store: KeychainStore) -> Entry? {
        table.read { table in
            guard let entry = table[ObjectIdentifier(store)], entry.store === store else { return nil }
            return entry
        }
    }
}
