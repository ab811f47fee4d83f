import KeywellSystem

/// Jobs run one at a time and in the order given, on a worker pool's threads: a connection's
/// signal handlers, off its loop (a handler may make a call of its own and wait for the reply,
/// which the loop must be free to read).
///
/// It used to be a libdispatch queue, whose worker thread ran a daemon's signals (a client
/// leaving the bus) after its idle trim and stayed five seconds more, faulting libdispatch's
/// code back in; the connection's own workers run them now, and leave with the pool's idle
/// threads (docs/performance.md, "The daemon").
// @unchecked: `state` is locked.
final class SerialLane: @unchecked Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var draining = false
    }

    private let workers: WorkerPool
    private let state = Protected(State())

    init(workers: WorkerPool) {
        self.workers = workers
    }

    /// Queues `job` after every job given before it; a worker runs the queue while one is there.
    /// Dropped once the pool has stopped (its connection is closed).
    func async(_ job: @escaping @Sendable () -> Void) {
        let startDrain = state.withLock { state -> Bool in
            state.jobs.append(job)
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
        if startDrain { workers.submit { [self] in drain() } }
    }

    private func drain() {
        while true {
            let batch = state.withLock { state -> [@Sendable () -> Void] in
                let batch = state.jobs
                state.jobs = []
                if batch.isEmpty { state.draining = false }
                return batch
            }
            if batch.isEmpty { return }
            for job in batch { job() }
        }
    }
}
