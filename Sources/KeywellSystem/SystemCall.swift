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
