import Foundation

extension ActivatedDaemonWorld {
    /// The daemon's pid, or nil when there is none — also when it goes away between the bus's
    /// two answers (name owner, then its pid), which a crash or a stop can cause.
    func livePID() -> pid_t? {
        (try? daemonPID()) ?? nil
    }

    /// SIGTERM to keywelld and wait until its name is gone; the next call activates a new one.
    func stopDaemon() throws {
        guard let pid = livePID() else { return }
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(10)
        while livePID() != nil {
            guard ContinuousClock.now < deadline else { throw BenchmarkFailure("keywelld did not stop on SIGTERM") }
            usleep(20_000)
        }
    }
}
