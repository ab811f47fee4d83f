#if canImport(Glibc)
import Glibc
#endif

/// An open file descriptor, typed so it is not mistaken for any other `Int32`. It does not close
/// itself: whoever opened it closes it, once, with `close()` or by doing its work in `closeAfter`.
/// Reads and writes follow the one EINTR rule (`retryingOnInterrupt`) and throw the typed `Errno`.
public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `open(2)`; O_CLOEXEC is always added, so no program the process starts inherits it.
    public static func open(_ path: String, _ flags: Int32, permissions: mode_t = 0) throws(Errno) -> FileDescriptor {
        let fd = retryingOnInterrupt { Glibc.open(path, flags | O_CLOEXEC, permissions) }
        guard fd >= 0 else { throw .current }
        return FileDescriptor(rawValue: fd)
    }

    /// Closes it. Never retried on EINTR: Linux has freed the descriptor by then, and a second
    /// close could close a number another thread has just been given.
    public func close() throws(Errno) {
        guard Glibc.close(rawValue) == 0 else { throw .current }
    }

    /// Runs `body`, then closes the descriptor whether `body` returned or threw (a failed close
    /// is not reported: the work is done, or its own error is the one that matters).
    public func closeAfter<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        defer { _ = Glibc.close(rawValue) }
        return try body()
    }

    /// Reads up to `buffer.count` bytes at the current offset; 0 at the end of the file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        let count = retryingOnInterrupt { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
        guard count >= 0 else { throw .current }
        return count
    }

    /// Reads up to `buffer.count` bytes at `offset`, leaving the file offset alone.
    public func read(fromAbsoluteOffset offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        let count = retryingOnInterrupt { pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
        guard count >= 0 else { throw .current }
        return count
    }

    /// Fills `buffer` whole, however many reads that takes; false when the file or stream ended
    /// first (a short message is no message, so how much came is not said). On a socket with a
    /// receive timeout, the timeout is thrown as `.wouldBlock`.
    public func read(filling buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Bool {
        var done = 0
        while done < buffer.count {
            let count = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            guard count > 0 else { return false }
            done += count
        }
        return true
    }

    /// Exactly `count` bytes, or nil when the file or stream ended first (see `read(filling:)`).
    /// What came of a message that did not arrive whole is zeroed: it may have held a secret.
    public func read(exactly count: Int) throws(Errno) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let filled = bytes.withUnsafeMutableBytes { buffer in Result { () throws(Errno) in try read(filling: buffer) } }
        guard case .success(true) = filled else {
            SecretMemory.wipe(bytes)
            return try filled.get() ? bytes : nil
        }
        return bytes
    }

    /// Everything up to the end of the file, read from the current offset, or from `offset`
    /// leaving the file offset alone. The cap: at most `limit` bytes, and nil when there is more,
    /// which is found by reading one byte past it, so no more than `limit + 1` bytes are ever held
    /// whatever the file's size. Storage the read outgrows, and everything read when it fails or
    /// runs over, is zeroed before it is freed, so a file of secrets (a CSV export) leaves no
    /// copy behind; the caller wipes what it gets.
    public func readAll(limit: Int, fromAbsoluteOffset offset: Int64? = nil) throws(Errno) -> [UInt8]? {
        precondition(limit >= 0, "negative readAll limit")
        var info = stat()
        let size = fstat(rawValue, &info) == 0 && info.st_mode & S_IFMT == S_IFREG ? Int(info.st_size) : 0
        // One read past a regular file's size sees its end; anything else starts at 64 KiB.
        var bytes = [UInt8](repeating: 0, count: min(limit + 1, max(size + 1, 1 << 16)))
        var count = 0
        while true {
            if count == bytes.count {
                guard count <= limit else { break }
                var larger = [UInt8](repeating: 0, count: min(bytes.count * 2, limit + 1))
                bytes.withUnsafeBytes { old in larger.withUnsafeMutableBytes { $0.copyMemory(from: old) } }
                SecretMemory.wipe(bytes)
                bytes = larger
            }
            let got = bytes.withUnsafeMutableBytes { buffer in
                let free = UnsafeMutableRawBufferPointer(rebasing: buffer[count...])
                return Result { () throws(Errno) in
                    if let offset { try read(fromAbsoluteOffset: offset + Int64(count), into: free) } else { try read(into: free) }
                }
            }
            switch got {
            case .success(0):
                bytes.removeLast(bytes.count - count)
                return bytes
            case .success(let more):
                count += more
            case .failure(let error):
                SecretMemory.wipe(bytes)
                throw error
            }
        }
        SecretMemory.wipe(bytes)
        return nil
    }

    /// One `write(2)`: how many of `buffer`'s bytes it took, which may be fewer than all. For a
    /// non-blocking descriptor, whose caller waits for room (`wait(for:milliseconds:)`) and goes on.
    public func write(_ buffer: UnsafeRawBufferPointer) throws(Errno) -> Int {
        let count = retryingOnInterrupt { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
        guard count >= 0 else { throw .current }
        return count
    }

    /// Writes all of `bytes` at the current offset, however many calls that takes.
    public func writeAll(_ bytes: some Collection<UInt8>) throws(Errno) {
        try transfer(bytes, .write)
    }

    /// Writes all of `bytes` at `offset`, leaving the file offset alone.
    public func writeAll(toAbsoluteOffset offset: Int64, _ bytes: some Collection<UInt8>) throws(Errno) {
        try transfer(bytes, .writeAt(offset))
    }

    /// Sends all of `bytes` on a socket, with MSG_NOSIGNAL: a peer that has gone away is thrown
    /// as EPIPE instead of raising SIGPIPE, which would end the process. A send timeout
    /// (`setTimeouts`) is thrown as `.wouldBlock`.
    public func sendAll(_ bytes: some Collection<UInt8>) throws(Errno) {
        try transfer(bytes, .send)
    }

    /// `sendAll` for bytes lent as a buffer (a `SecretBytes`' locked memory), sent where they are.
    public func sendAll(_ buffer: UnsafeRawBufferPointer) throws(Errno) {
        if let failure = transfer(buffer, .send) { throw failure }
    }

    private enum Transfer {
        case write
        case writeAt(Int64)
        case send
    }

    /// Bytes in contiguous storage (Array, Data, a buffer) are written where they are; only any
    /// other collection is copied first.
    private func transfer(_ bytes: some Collection<UInt8>, _ how: Transfer) throws(Errno) {
        let failure: Errno?
        if let contiguous = bytes.withContiguousStorageIfAvailable({ transfer(UnsafeRawBufferPointer($0), how) }) {
            failure = contiguous
        } else {
            failure = Array(bytes).withUnsafeBytes { transfer($0, how) }
        }
        if let failure { throw failure }
    }

    /// The error, nil once every byte is out. Not a `Result`: its type would be made at run time
    /// (a scan of every conformance in the program), which a `keywell` process pays at start-up
    /// (docs/performance.md, "The command line").
    private func transfer(_ buffer: UnsafeRawBufferPointer, _ how: Transfer) -> Errno? {
        var done = 0
        while done < buffer.count {
            let start = buffer.baseAddress! + done
            let count = retryingOnInterrupt {
                switch how {
                case .write: Glibc.write(rawValue, start, buffer.count - done)
                case .writeAt(let offset): pwrite(rawValue, start, buffer.count - done, off_t(offset) + off_t(done))
                case .send: Glibc.send(rawValue, start, buffer.count - done, Int32(MSG_NOSIGNAL))
                }
            }
            guard count > 0 else { return count < 0 ? .current : Errno(rawValue: EIO) }
            done += count
        }
        return nil
    }

    /// `fstat(2)`.
    public func status() throws(Errno) -> stat {
        var info = stat()
        guard fstat(rawValue, &info) == 0 else { throw .current }
        return info
    }

    /// Sets O_NONBLOCK: a read or write that would wait throws `.wouldBlock` instead.
    public func setNonBlocking() throws(Errno) {
        let flags = fcntl(rawValue, F_GETFL)
        guard flags >= 0, fcntl(rawValue, F_SETFL, flags | O_NONBLOCK) == 0 else { throw .current }
    }

    /// `poll(2)` on this descriptor alone: waits up to `milliseconds` (-1: for ever) for `events`
    /// (POLLIN, POLLOUT) and returns the events that came, POLLERR and POLLHUP included; 0 when
    /// the time ran out. An interrupted wait starts again with the whole time (the EINTR rule).
    public func wait(for events: Int32, milliseconds: Int32) throws(Errno) -> Int32 {
        var poller = pollfd(fd: rawValue, events: Int16(events), revents: 0)
        let ready = retryingOnInterrupt { poll(&poller, 1, milliseconds) }
        guard ready >= 0 else { throw .current }
        return ready == 0 ? 0 : Int32(poller.revents)
    }

    /// `poll(2)` on several descriptors at once (`entries`' `revents` are filled in): how many
    /// have events, 0 when `milliseconds` ran out. An interrupted wait starts again with the
    /// whole time (the EINTR rule), so a caller with a deadline passes at most what is left.
    public static func wait(_ entries: inout [pollfd], milliseconds: Int32) throws(Errno) -> Int {
        let ready = retryingOnInterrupt { poll(&entries, nfds_t(entries.count), milliseconds) }
        guard ready >= 0 else { throw .current }
        return Int(ready)
    }

    /// A pipe whose two ends are closed on exec; both are the caller's to close. FD_CLOEXEC is
    /// set right after `pipe(2)` (Glibc's module hides `pipe2`), which is enough: a child
    /// `ChildSpawner` starts gets only fds 0-2 whatever is open.
    public static func pipe() throws(Errno) -> (readEnd: FileDescriptor, writeEnd: FileDescriptor) {
        var ends: [Int32] = [-1, -1]
        guard Glibc.pipe(&ends) == 0 else { throw .current }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (FileDescriptor(rawValue: ends[0]), FileDescriptor(rawValue: ends[1]))
    }

    /// `fsync(2)`: what was written is on the disk.
    public func sync() throws(Errno) {
        guard retryingOnInterrupt({ fsync(rawValue) }) == 0 else { throw .current }
    }

    /// `ftruncate(2)`.
    public func resize(to size: Int64) throws(Errno) {
        guard retryingOnInterrupt({ ftruncate(rawValue, off_t(size)) }) == 0 else { throw .current }
    }
}
