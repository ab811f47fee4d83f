import CDBus
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A connection's threads: they run its loop (one at a time, see `ConnectionLoop`) and its
/// method handlers off the loop.
///
/// Threads are reused (no thread per message) and the pool grows whenever every worker is busy,
/// so a handler that blocks (a 300 ms key derivation, a nested D-Bus call) never holds up the
/// next caller. Threads above `keepAlive` exit after `idleTimeout` without work; the others give
/// back the stack pages their jobs touched then (`ThreadStack.releaseUnused`) and wait for work
/// without a timeout.
// @unchecked: the job queue and counters are only touched under `lock`.
final class WorkerPool: @unchecked Sendable {
    private let lock = ConditionLock()
    /// Taken slots are emptied at once: a job's captures (a call that must answer when released)
    /// must not outlive the job until the next compaction.
    private var jobs: [(@Sendable () -> Void)?] = []
    private var jobHead = 0
    private var threadCount = 0
    private var idleCount = 0
    private var stopped = false
    private let name: String
    private let keepAlive: Int
    private let maximumThreads: Int
    private let idleTimeout: Duration

    /// Half the daemon's idle trim (ten seconds after the last call): what a worker runs when its
    /// timeout comes (exiting, or giving back its stack) faults code in, and it must do so before
    /// that trim, not just after it (docs/performance.md, "The daemon").
    static let defaultIdleTimeout: Duration = .seconds(5)

    init(name: String, keepAlive: Int = 4, maximumThreads: Int = 256, idleTimeout: Duration = WorkerPool.defaultIdleTimeout) {
        self.name = name
        self.keepAlive = keepAlive
        self.maximumThreads = maximumThreads
        self.idleTimeout = idleTimeout
    }

    func submit(_ job: @escaping @Sendable () -> Void) {
        _ = enqueue(job, onlyIfRunnableNow: false)
    }

    /// From one of this pool's workers, runs `job` on that same thread as soon as its current
    /// job has returned (its frames and captures gone), before it takes any other: nothing is
    /// woken for it. From any other thread, the same as `submit`. For short bookkeeping a job
    /// leaves behind (a connection's end, docs/dbus-layer.md "The direct socket"), which would
    /// otherwise wake a sleeping worker while this one is about to be free.
    func submitAfterCurrentJob(_ job: @escaping @Sendable () -> Void) {
        if let worker = WorkerThread.current, worker.pool === self {
            worker.next.append(job)
            return
        }
        submit(job)
    }

    /// Submits `job` only if a thread can take it at once (an idle worker, or a new one within
    /// the limit); false, and nothing queued, when every thread is busy at the limit or the pool
    /// has stopped.
    func submitToRunNow(_ job: @escaping @Sendable () -> Void) -> Bool {
        enqueue(job, onlyIfRunnableNow: true)
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void, onlyIfRunnableNow: Bool) -> Bool {
        lock.lock()
        let pending = jobs.count - jobHead + 1
        let runnableNow = pending <= idleCount || threadCount < maximumThreads
        if stopped || (onlyIfRunnableNow && !runnableNow) {
            lock.unlock()
            return false
        }
        jobs.append(job)
        // Start a thread only when the idle ones cannot take every queued job.
        let startThread = pending > idleCount && threadCount < maximumThreads
        if startThread { threadCount += 1 }
        if idleCount > 0 { lock.signal() }
        lock.unlock()
        if startThread { startWorker() }
        return true
    }

    /// Lets queued jobs finish but accepts no new ones; idle workers exit.
    func stop() {
        lock.withLock {
            stopped = true
            lock.broadcast()
        }
    }

    private func startWorker() {
        startDetachedThread(name: name, stackSize: 1 << 20) { [self] in workerLoop() }
    }

    private func workerLoop() {
        // Kept after an idle timeout: waits without one until there is work, so that an idle
        // daemon's workers do not wake every `idleTimeout` (each wake faulted their code back in
        // after the idle trim).
        var parked = false
        let worker = WorkerThread(pool: self)
        WorkerThread.enter(worker)
        defer { WorkerThread.leave() }
        lock.lock()
        while true {
            if jobHead < jobs.count {
                parked = false
                var job = jobs[jobHead]
                jobs[jobHead] = nil
                jobHead += 1
                if jobHead > 64, jobHead * 2 > jobs.count {
                    // Compact now and then so the queue does not grow without bound.
                    jobs.removeFirst(jobHead)
                    jobHead = 0
                }
                lock.unlock()
                job!()
                job = nil
                // What the job left to run after it (`submitAfterCurrentJob`), and what those leave.
                while !worker.next.isEmpty {
                    var next = worker.next.removeFirst()
                    next()
                    next = { }
                }
                // What the job left on this stack (short secrets live inside Swift values) goes.
                keywell_scrub_stack()
                lock.lock()
                continue
            }
            if stopped { break }
            idleCount += 1
            let signalled = lock.wait(untilNanoseconds: parked ? nil : deadline(after: idleTimeout))
            idleCount -= 1
            if !signalled, jobHead >= jobs.count, threadCount > keepAlive { break }
            if !signalled {
                // Idle for `idleTimeout` and kept: the stack pages its jobs touched go back.
                lock.unlock()
                ThreadStack.releaseUnused()
                lock.lock()
                parked = true
            }
        }
        threadCount -= 1
        lock.unlock()
    }
}

/// A worker's own state, found through a thread-specific key: the pool it belongs to and the
/// jobs its current job asked to run after it. Only its own thread touches `next`.
// @unchecked: `next` is used by the owning thread alone.
private final class WorkerThread: @unchecked Sendable {
    unowned let pool: WorkerPool
    var next: [@Sendable () -> Void] = []

    init(pool: WorkerPool) { self.pool = pool }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Set for the worker loop's lifetime, which keeps the object alive meanwhile.
    static func enter(_ worker: WorkerThread) { pthread_setspecific(key, Unmanaged.passUnretained(worker).toOpaque()) }

    static func leave() { pthread_setspecific(key, nil) }

    static var current: WorkerThread? {
        pthread_getspecific(key).map { Unmanaged<WorkerThread>.fromOpaque($0).takeUnretainedValue() }
    }
}
