import KeywellProtocol
import KeywellSystem

/// When a collection's `Items` goes out after items were made or deleted (docs/secret-service.md,
/// "Signals"). libsecret (Seahorse) loads new items only from that value, so it always goes out,
/// never as a bare invalidation; but it lists every item, and a big keychain written in a loop
/// must not cost a scan and a multi-megabyte message per write.
///
/// A list last sent with at most `ServiceLimits.itemsSentWithEveryChange` paths goes out at once
/// with every change (before the call's reply, as gnome-keyring's does). A longer one goes out at
/// most once per `ServiceLimits.longItemsListInterval`: the first change sends at once, the
/// changes after it within the interval share one later send that reads the list then.
final class ItemsPropertyPacer: Sendable {
    typealias Schedule = @Sendable (Duration, @escaping @Sendable () -> Void) -> Void

    private struct State {
        var lastLength = 0
        var lastSent: ContinuousClock.Instant?
        var laterSendScheduled = false
    }

    private let shortLength: Int
    private let interval: Duration
    private let schedule: Schedule
    private let states = Protected<[CollectionID: State]>([:])

    private enum Decision {
        case sendNow
        case sendLater(after: Duration)
        case coveredByLaterSend
    }

    /// `schedule` runs a later send after a delay: on the timer thread (tests run it by hand).
    init(shortLength: Int = ServiceLimits.itemsSentWithEveryChange,
         interval: Duration = ServiceLimits.longItemsListInterval,
         schedule: @escaping Schedule = { delay, body in TimerThread.shared.schedule(after: delay, body) }) {
        self.shortLength = shortLength
        self.interval = interval
        self.schedule = schedule
    }

    /// Items of `id` were made or deleted. `send` reads the list, sends it, and returns its length
    /// (nil when it could not).
    func changed(_ id: CollectionID, send: @escaping @Sendable () -> Int?) {
        let now = ContinuousClock.now
        let decision = states.withLock { states -> Decision in
            var state = states[id, default: State()]
            defer { states[id] = state }
            if state.laterSendScheduled { return .coveredByLaterSend }
            guard state.lastLength > shortLength, let lastSent = state.lastSent, now - lastSent < interval else {
                state.lastSent = now
                return .sendNow
            }
            state.laterSendScheduled = true
            return .sendLater(after: interval - (now - lastSent))
        }
        switch decision {
        case .sendNow:
            record(id, length: send())
        case .coveredByLaterSend:
            return
        case .sendLater(let delay):
            schedule(delay) { [self] in
                states.withLock { states in
                    states[id]?.laterSendScheduled = false
                    states[id]?.lastSent = .now
                }
                record(id, length: send())
            }
        }
    }

    /// A collection that went away starts afresh if it comes back.
    func forget(_ id: CollectionID) {
        _ = states.withLock { $0.removeValue(forKey: id) }
    }

    private func record(_ id: CollectionID, length: Int?) {
        guard let length else { return }
        states.withLock { $0[id]?.lastLength = length }
    }
}
