import CSodium

/// A small symmetric key in sodium_malloc'd memory: guarded, locked, and wiped when released.
// @unchecked: the locked memory is written once in init and only read after.
public final class LockedKey: @unchecked Sendable {
    public let count: Int
    private let pointer: UnsafeMutableRawPointer

    init(copying bytes: UnsafeRawBufferPointer) {
        _ = sodium_init()
        count = bytes.count
        guard let memory = sodium_malloc(max(count, 1)) else { fatalError("sodium_malloc failed") }
        pointer = memory
        pointer.copyMemory(from: bytes.baseAddress!, byteCount: count)
    }

    deinit {
        sodium_free(pointer)  // sodium_free zeroes before it releases
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
