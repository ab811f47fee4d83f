#if canImport(Glibc)
import Glibc
#endif

/// An `errno` value as a typed error, with the C library's text for it.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// This thread's `errno` now (read it before any other call can change it).
    public static var current: Errno { Errno(rawValue: errno) }

    public static let interrupted = Errno(rawValue: EINTR)
    public static let noEntry = Errno(rawValue: ENOENT)
    public static let exists = Errno(rawValue: EEXIST)
    public static let notDirectory = Errno(rawValue: ENOTDIR)
    public static let noSpace = Errno(rawValue: ENOSPC)
    public static let noSuchProcess = Errno(rawValue: ESRCH)
    public static let notPermitted = Errno(rawValue: EPERM)
    /// EAGAIN, which Linux also spells EWOULDBLOCK: a non-blocking call that would have waited.
    public static let wouldBlock = Errno(rawValue: EAGAIN)

    public var description: String { String(cString: strerror(rawValue)) }
}

/// The one EINTR rule: a system call that a signal interrupted (-1 with EINTR) is simply made
/// again, at once and with the same arguments; any other result, and `errno` with it, is the
/// caller's to judge. Every read, write, send, recv and poll loop of Keywell goes through it, so
/// none of them treats an interruption as an end of file or a failure (docs/design.md).
@inlinable
public func retryingOnInterrupt<Result: BinaryInteger>(_ call: () -> Result) -> Result {
    while true {
        let result = call()
        if result >= 0 || errno != EINTR { return result }
    }
}
