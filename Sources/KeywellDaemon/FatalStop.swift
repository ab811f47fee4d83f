import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// A failure on another thread that must end the daemon (its bus name taken by another
/// process). The library does not exit the process itself: the message is kept, and the main
/// thread, waiting in `sigwait` for SIGTERM/SIGINT, is woken with a SIGTERM to the process;
/// it then reports the message and hands the exit status back to `main`.
final class FatalStop: Sendable {
    private let message = Protected<String?>(nil)

    /// Keeps the first message and wakes the main thread.
    func stop(_ text: String) {
        let first = message.withLock { current in
            guard current == nil else { return false }
            current = text
            return true
        }
        // To the process, not this thread: every thread blocks SIGTERM, and only the main
        // thread's sigwait takes it.
        if first { kill(getpid(), SIGTERM) }
    }

    /// The message, once `stop` was called.
    var reason: String? { message.withLock { $0 } }
}
