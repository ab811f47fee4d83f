import CSodium

/// Bytes that must stay secret (passwords, keys): kept in libsodium's guarded, mlocked memory,
/// never copied by the type itself, and zeroed and freed when the last reference goes away. The
/// one secret-memory type of the process; KeywellCore re-exports it to the engine's users.
// @unchecked: the bytes are written while one owner builds them, then only read.
public final class SecretBytes: @unchecked Sendable {
    public let count: Int
    private let pointer: UnsafeMutableRawPointer
    /// From `SecretSlots` (given back there) rather than its own `sodium_malloc`.
    private let pooled: Bool

    /// `count` zero bytes.
    public convenience init(count: Int) {
        self.init(count: count, transient: false)
    }

    /// `count` zero bytes for a secret that lives for one call (a KWallet password on its way
    /// between D-Bus and an item): from a slot of `SecretSlots` when it fits, which saves the five
    /// system calls of a `sodium_malloc` and its `sodium_free` (docs/kwallet.md, "Passwords in
    /// memory"). Still locked and zeroed when the last reference goes.
    public convenience init(transientCount count: Int) {
        self.init(count: count, transient: true)
    }

    private init(count: Int, transient: Bool) {
        precondition(count >= 0, "negative SecretBytes count")
        self.count = count
        if transient, let slot = SecretSlots.shared.take(count) {
            pointer = slot
            pooled = true
            return
        }
        SecretMemory.ensureSodiumInitialized()
        // sodium_malloc(0) is legal but returns an unusable region; one byte keeps the pointer valid.
        guard let memory = sodium_malloc(max(count, 1)) else {
            fatalError("sodium_malloc failed for \(count) secret bytes")
        }
        SecretMemory.wipe(memory, count: max(count, 1))
        pointer = memory
        pooled = false
    }

    /// Whether the bytes sit in a slot of `SecretSlots.shared` (for tests).
    var isPooled: Bool { pooled }

    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count, transient: false)
        copyIn(bytes)
    }

    /// As `init(copying:)`, for a secret that lives for one call (`init(transientCount:)`).
    public convenience init(transientCopying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count, transient: true)
        copyIn(bytes)
    }

    private func copyIn(_ bytes: some Collection<UInt8>) {
        let target = pointer.assumingMemoryBound(to: UInt8.self)
        var index = 0
        for byte in bytes {
            target[index] = byte
            index += 1
        }
    }

    deinit {
        if pooled {
            SecretSlots.shared.give(pointer)  // zeroed there
        } else {
            // sodium_free zeroes the region, unlocks it and unmaps its guard pages.
            sodium_free(pointer)
        }
    }

    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    public func withUnsafeMutableBytes<Result, Failure: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }
}

/// Equal when the bytes are (compared in constant time); the hash takes the count alone, so no
/// hash table ever holds a digest of a secret. For values that carry one (a D-Bus secret
/// string, `DBusValue.secretString`) and must stay `Hashable`.
extension SecretBytes: Hashable {
    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        if lhs === rhs { return true }
        guard lhs.count == rhs.count else { return false }
        return sodium_memcmp(lhs.pointer, rhs.pointer, lhs.count) == 0
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
    }
}
