import KeywellSystem

/// The signals of keychain changes, sent in the order the changes were told, by one thread at a
/// time (docs/secret-service.md, "Signals"). A call's item signals wait here until its reply is
/// out, so the bus routes the reply first; a later change's signals (a lock's, a collection's new
/// label, the list of collections) are queued behind them (`SecretServiceSignals.inOrder`), so no
/// listener sees them overtake an earlier change's, whichever thread happens to send the queue.
final class ItemSignalQueue: Sendable {
    private struct State {
        var pending: [@Sendable () -> Void] = []
        /// Some thread is sending `pending` and sends what others add meanwhile.
        var draining = false
    }

    private let state = Protected(State())

    func enqueue(_ send: @escaping @Sendable () -> Void) {
        state.withLock { $0.pending.append(send) }
    }

    /// Sends everything waiting, oldest first, unless another thread (or this one, from inside a
    /// send) already is: that one sends it, in order. No lock is held while a signal goes out.
    func flush() {
        let claimed = state.withLock { state -> Bool in
            if state.draining { return false }
            state.draining = true
            return true
        }
        guard claimed else { return }
        while let send = state.withLock({ state -> (@Sendable () -> Void)? in
            if state.pending.isEmpty {
                state.draining = false
                return nil
            }
            return state.pending.removeFirst()
        }) {
            send()
        }
    }
}
