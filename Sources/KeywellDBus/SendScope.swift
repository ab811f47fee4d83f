#if canImport(Glibc)
import Glibc
#endif

/// Marks "this thread is inside dbus_connection_send*" so the I/O loop's wake-up function can
/// tell a send from other events. libdbus asks for a wake-up on every send, but a send from a
/// worker is nearly always written out at once by that worker; waking the I/O thread for
/// nothing costs a context switch per reply on a 2-core machine. The sender checks afterwards
/// whether anything is really left for the loop, and wakes it only then.
enum SendScope {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private static var active: UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: 1) }
    private static var wakeRequested: UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: 2) }

    /// Runs `body` as a send; returns its result and whether libdbus asked for a wake-up.
    static func run<T>(_ body: () -> T) -> (T, Bool) {
        pthread_setspecific(key, active)
        let result = body()
        let requested = pthread_getspecific(key) == wakeRequested
        pthread_setspecific(key, nil)
        return (result, requested)
    }

    /// Called from the wake-up function: true (and remembered) when inside a send.
    static func deferWakeIfSending() -> Bool {
        guard let value = pthread_getspecific(key) else { return false }
        if value == active { pthread_setspecific(key, wakeRequested) }
        return true
    }
}
