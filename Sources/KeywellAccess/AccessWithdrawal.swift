import KeywellSystem

/// Lets whoever put an access question take it back before the person answers: a Secret
/// Service prompt's `Dismiss` withdraws the question it shows, as gnome-keyring withdraws its
/// prompts (docs/access-control.md, "The question"). A withdrawn question is answered Deny and
/// not remembered: the next request asks again.
public final class AccessWithdrawal: Sendable {
    private struct State {
        var withdrawn = false
        var stops: [UInt64: @Sendable () -> Void] = [:]
        var nextToken: UInt64 = 0
    }

    private let state = Protected(State())

    public init() {}

    public var isWithdrawn: Bool { state.read { $0.withdrawn } }

    /// Withdraws the question: every registered stop runs once (a dialog on screen closes).
    public func withdraw() {
        let stops = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.withdrawn else { return [] }
            state.withdrawn = true
            defer { state.stops.removeAll() }
            return Array(state.stops.values)
        }
        stops.forEach { $0() }
    }

    /// Runs `stop` if the question is withdrawn while `body` runs (at once when it already is),
    /// then forgets it: a dialog closes only while it is the one showing the question.
    public func whileShowing<Result>(_ body: () -> Result, stop: @escaping @Sendable () -> Void) -> Result {
        let token = state.withLock { state -> UInt64? in
            guard !state.withdrawn else { return nil }
            state.nextToken += 1
            state.stops[state.nextToken] = stop
            return state.nextToken
        }
        if token == nil { stop() }
        defer { if let token { _ = state.withLock { state in state.stops.removeValue(forKey: token) } } }
        return body()
    }
}
