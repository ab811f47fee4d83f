import CSodium
import Foundation
import KeywellProtocol
import KeywellSystem

/// SHA-256 of open files, remembered by what identifies a file's contents without reading it:
/// device, inode, size, modification and change times. A write changes mtime and ctime (and
/// ctime cannot be set back by a program), so a changed file is hashed again.
public final class FileDigest: Sendable {
    /// Files larger than this are not hashed (docs/access-control.md): the largest programs
    /// are a few hundred megabytes.
    public static let maximumSize: Int64 = 2 * 1024 * 1024 * 1024
    /// Files remembered at once; beyond it the oldest are forgotten.
    public let capacity: Int

    private struct Stamp: Hashable {
        let device: UInt64
        let inode: UInt64
        let size: Int64
        let modified: timespec
        let changed: timespec

        static func == (a: Stamp, b: Stamp) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size
                && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(device)
            hasher.combine(inode)
            hasher.combine(size)
            hasher.combine(modified.tv_nsec)
            hasher.combine(changed.tv_nsec)
        }
    }

    private struct Cache {
        var digests: [Stamp: String] = [:]
        /// Oldest first: the one forgotten when the cache is full.
        var order: [Stamp] = []
        var hashedCount = 0
    }

    private let cache = Protected(Cache())

    public init(capacity: Int = 256) {
        self.capacity = max(1, capacity)
    }

    /// How many files were read and hashed (not answered from memory) so far.
    public var filesHashed: Int { cache.withLock { $0.hashedCount } }

    /// The SHA-256 of the regular file open at `descriptor`, in 64 lowercase hex digits.
    public func sha256(of descriptor: FileDescriptor) throws(IdentityError) -> String {
        var status = stat()
        guard fstat(descriptor.rawValue, &status) == 0 else { throw .process("fstat: \(Errno.current.description)") }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .process("not a regular file") }
        guard Int64(status.st_size) <= Self.maximumSize else { throw .process("file larger than \(Self.maximumSize) bytes") }
        let stamp = Stamp(device: UInt64(status.st_dev), inode: UInt64(status.st_ino), size: Int64(status.st_size),
                          modified: status.st_mtim, changed: status.st_ctim)
        if let known = cache.withLock({ $0.digests[stamp] }) { return known }
        let digest = try Self.hash(descriptor, size: Int64(status.st_size))
        let capacity = capacity
        cache.withLock { cache in
            cache.hashedCount += 1
            guard cache.digests[stamp] == nil else { return }
            if cache.digests.count >= capacity, !cache.order.isEmpty { cache.digests[cache.order.removeFirst()] = nil }
            cache.digests[stamp] = digest
            cache.order.append(stamp)
        }
        return digest
    }

    /// Reads with pread from offset 0, so the descriptor's own position does not matter, and
    /// stops at the size fstat reported: a file growing meanwhile cannot make the read endless.
    private static func hash(_ file: FileDescriptor, size: Int64) throws(IdentityError) -> String {
        var state = crypto_hash_sha256_state()
        crypto_hash_sha256_init(&state)
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var offset: Int64 = 0
        while offset < size {
            let wanted = Int(min(Int64(buffer.count), size - offset))
            let read = buffer.withUnsafeMutableBytes { block in
                Result { () throws(Errno) in try file.read(fromAbsoluteOffset: offset, into: UnsafeMutableRawBufferPointer(rebasing: block[..<wanted])) }
            }
            let count: Int
            do { count = try read.get() } catch { throw .process("read: \(error.description)") }
            guard count > 0 else { throw .process("file shrank while read") }
            buffer.withUnsafeBufferPointer { _ = crypto_hash_sha256_update(&state, $0.baseAddress, UInt64(count)) }
            offset += Int64(count)
        }
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        crypto_hash_sha256_final(&state, &digest)
        return LowercaseHex.string(digest)
    }

}
