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
    static func write(_ secret: Data, to descriptor: FileDescriptor, patience: Duration = patience) throws(Failure) {
        try descriptor.closeAfter { () throws(Failure) in
            let started = ContinuousClock.now
            let kind: mode_t
            do { kind = try descriptor.status().st_mode & S_IFMT } catch {
                throw Failure(description: "the descriptor is not open: \(error)")
            }
            guard kind == S_IFIFO || kind == S_IFSOCK else { throw Failure(description: "the descriptor is not a pipe or a socket") }
            do { try descriptor.setNonBlocking() } catch {
                throw Failure(description: "cannot make the descriptor non-blocking: \(error)")
            }
            let deadline = started + patience
            var written = 0
            while written < secret.count {
                let result = secret.withUnsafeBytes { bytes in
                    Result { () throws(Errno) in try descriptor.write(UnsafeRawBufferPointer(rebasing: bytes[written...])) }
                }
                switch result {
                case .success(0): throw Failure(description: "the descriptor took no bytes")
                case .success(let count): written += count
                case .failure(.wouldBlock): try waitForRoom(descriptor, until: deadline, patience: patience)
                case .failure(let error): throw Failure(description: "cannot write: \(error)")
                }
            }
        }
    }

    private static func waitForRoom(_ descriptor: FileDescriptor, until deadline: ContinuousClock.Instant, patience: Duration) throws(Failure) {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw Failure(description: "nobody read the secret within \(patience)") }
            let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            let events: Int32
            do { events = try descriptor.wait(for: POLLOUT, milliseconds: milliseconds) } catch {
                throw Failure(description: "cannot wait for the reader: \(error)")
            }
            if events == 0 { continue }
            if events & (POLLERR | POLLHUP | POLLNVAL) != 0 {
                throw Failure(description: "the reading end is closed")
            }
            return
        }
    }
}
