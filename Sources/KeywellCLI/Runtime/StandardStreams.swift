#if canImport(Glibc)
import Glibc
#endif

/// stdout buffered (flushed before prompts and at exit, like C's stdio), stderr unbuffered.
final class OutputStream {
    let fd: Int32
    private let buffered: Bool
    private var pending: [UInt8] = []

    init(fd: Int32, buffered: Bool) {
        self.fd = fd
        self.buffered = buffered
    }

    func write(_ text: String) { write(Array(text.utf8)) }

    func write(_ bytes: [UInt8]) {
        guard buffered else { return PasswordInput.writeAll(fd, bytes) }
        pending += bytes
        if pending.count >= 1 << 16 { flush() }
    }

    /// A secret written straight through, so no copy of it waits in the buffer.
    func writeSecret(_ bytes: [UInt8]) {
        flush()
        PasswordInput.writeAll(fd, bytes)
    }

    func flush() {
        guard !pending.isEmpty else { return }
        PasswordInput.writeAll(fd, pending)
        pending.removeAll(keepingCapacity: true)
    }
}

enum StandardStreams {
    nonisolated(unsafe) static let output = OutputStream(fd: 1, buffered: true)
    nonisolated(unsafe) static let error = OutputStream(fd: 2, buffered: false)
}
