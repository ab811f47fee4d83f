import KeywellSystem

/// stdout buffered (flushed before prompts and at exit, like C's stdio), stderr unbuffered.
final class OutputStream {
    let fd: FileDescriptor
    private let buffered: Bool
    private var pending: [UInt8] = []

    init(fd: FileDescriptor, buffered: Bool) {
        self.fd = fd
        self.buffered = buffered
    }

    func write(_ text: String) { write(Array(text.utf8)) }

    func write(_ bytes: [UInt8]) {
        guard buffered else { return writeThrough(bytes) }
        pending += bytes
        if pending.count >= 1 << 16 { flush() }
    }

    /// A secret written straight through, so no copy of it waits in the buffer.
    func writeSecret(_ bytes: [UInt8]) {
        flush()
        writeThrough(bytes)
    }

    func flush() {
        guard !pending.isEmpty else { return }
        writeThrough(pending)
        pending.removeAll(keepingCapacity: true)
    }

    /// A failed write (a closed pipe, a full disk) drops the output, as C's stdio does.
    private func writeThrough(_ bytes: [UInt8]) {
        try? fd.writeAll(bytes)
    }
}

enum StandardStreams {
    nonisolated(unsafe) static let output = OutputStream(fd: FileDescriptor(rawValue: 1), buffered: true)
    nonisolated(unsafe) static let error = OutputStream(fd: FileDescriptor(rawValue: 2), buffered: false)
}
