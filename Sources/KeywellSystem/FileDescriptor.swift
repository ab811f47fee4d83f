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

    /// Writes all of `bytes` at the current offset, however many calls that takes.
    public func writeAll(_ bytes: some Collection<UInt8>) throws(Errno) {
        try write(bytes, at: nil)
    }

    /// Writes all of `bytes` at `offset`, leaving the file offset alone.
    public func writeAll(toAbsoluteOffset offset: Int64, _ bytes: some Collection<UInt8>) throws(Errno) {
        try write(bytes, at: offset)
    }

    /// Bytes in contiguous storage (Array, Data, a buffer) are written where they are; only any
    /// other collection is copied first.
    private func write(_ bytes: some Collection<UInt8>, at offset: Int64?) throws(Errno) {
        let result =
            bytes.withContiguousStorageIfAvailable { write(UnsafeRawBufferPointer($0), at: offset) }
            ?? Array(bytes).withUnsafeBytes { write($0, at: offset) }
        try result.get()
    }

    private func write(_ buffer: UnsafeRawBufferPointer, at offset: Int64?) -> Result<Void, Errno> {
        var done = 0
        while done < buffer.count {
            let start = buffer.baseAddress! + done
            let count = retryingOnInterrupt {
                if let offset { pwrite(rawValue, start, buffer.count - done, off_t(offset) + off_t(done)) }
                else { Glibc.write(rawValue, start, buffer.count - done) }
            }
            guard count > 0 else { return .failure(count < 0 ? .current : Errno(rawValue: EIO)) }
            done += count
        }
        return .success(())
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
