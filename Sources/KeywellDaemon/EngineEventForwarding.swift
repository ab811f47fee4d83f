import Foundation
import KeywellCore

/// Hands the engine's events to `handler`, working around a growth in KeywellCore's `onEvent`.
///
/// `KeychainStore.onEvent` keeps the closure in a generic `Protected<Value>` and its getter reads
/// it through `withLock { $0 }`, whose `inout` parameter makes Swift store the closure back
/// wrapped in two more reabstraction thunks on every read. Every event thus deepens the closure
/// by two frames, and after about 13,000 item changes a call overflows a 1 MiB worker stack
/// (SIGSEGV; found by `keywell-bench daemon`). Installing the original closure again every few
/// hundred events keeps the chain short. Remove this once the engine reads the handler without
/// an `inout` accessor.
enum EngineEventForwarding {
    static let reinstallEvery = 256

    static func install(on store: KeychainStore, _ handler: @escaping @Sendable (KeychainEvent) -> Void) {
        install(on: store, handler, counter: EventCounter())
    }

    private static func install(on store: KeychainStore, _ handler: @escaping @Sendable (KeychainEvent) -> Void,
                                counter: EventCounter) {
        store.onEvent = { [unowned store] event in
            handler(event)
            // The engine calls handlers outside its lock, so setting the handler here cannot deadlock.
            if counter.increment() % reinstallEvery == 0 { install(on: store, handler, counter: counter) }
        }
    }
}

private final class EventCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment() -> Int {
        lock.withLock {
            count += 1
            return count
        }
    }
}
