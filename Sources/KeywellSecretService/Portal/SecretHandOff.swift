import Foundation
import KeywellProtocol
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// Writes an app's secret into the descriptor the portal passed, then closes it. Only a pipe or
/// a socket is taken (what libsecret and oo7 pass): nothing else can be read back by the app
/// alone, and a file on a hung file system could block. The write is non-blocking and waits for
/// room at most `patience`, so a full pipe nobody reads, or one whose reader left, fails
/// cleanly instead of holding a worker thread.
enum SecretHandOff {
    static let patience = ServiceLimits.portalWritePatience

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Takes ownership of `descriptor`: it is closed on every path.
    static func write(_ secret: Data, to descriptor: Int32, patience: Duration = patience) throws(Failure) {
        defer { close(descriptor) }
        let started = ContinuousClock.now
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw Failure(description: "the descriptor is not open: \(errorText())") }
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFIFO || kind == S_IFSOCK else { throw Failure(description: "the descriptor is not a pipe or a socket") }
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw Failure(description: "cannot make the descriptor non-blocking: \(errorText())")
        }
        let deadline = started + patience
        var written = 0
        while written < secret.count {
            let result = retryingOnInterrupt {
                secret.withUnsafeBytes { bytes in Glibc.write(descriptor, bytes.baseAddress! + written, bytes.count - written) }
            }
            if result > 0 {
                written += result
                continue
            }
            let failure = errno
            guard result < 0, failure == EAGAIN || failure == EWOULDBLOCK else {
                throw Failure(description: result == 0 ? "the descriptor took no bytes" : "cannot write: \(errorText(failure))")
            }
            try waitForRoom(descriptor, until: deadline, patience: patience)
        }
    }

    private static func waitForRoom(_ descriptor: Int32, until deadline: ContinuousClock.Instant, patience: Duration) throws(Failure) {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw Failure(description: "nobody read the secret within \(patience)") }
            let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            let ready = retryingOnInterrupt { poll(&poller, 1, milliseconds) }
            guard ready >= 0 else { throw Failure(description: "cannot wait for the reader: \(errorText())") }
            if ready == 0 { continue }
            if poller.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                throw Failure(description: "the reading end is closed")
            }
            return
        }
    }

    private static func errorText(_ code: Int32 = errno) -> String { Errno(rawValue: code).description }
}
