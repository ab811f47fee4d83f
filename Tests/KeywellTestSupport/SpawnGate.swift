import Foundation

/// Keeps the test process from starting a child while it writes a program file.
///
/// Tests run in parallel threads of one process. A child forked while another thread has a
/// script open for writing holds a copy of that descriptor until it closes its descriptors and
/// execs; if dbus-daemon activates the script in that window, exec fails with "Text file busy"
/// (seen once under load: `Spawn.ExecFailed … Text file busy`). `posix_spawn` returns only once
/// the child has exec'd, so holding this lock around every spawn and every write of an
/// executable file closes the window.
public enum SpawnGate {
    private static let lock = NSLock()

    public static func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Starts a Foundation `Process` under the gate.
    public static func run(_ process: Process) throws {
        try withLock { try process.run() }
    }
}
