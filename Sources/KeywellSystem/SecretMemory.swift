import CSodium

/// The one way Keywell zeroes memory that held a secret: libsodium's `sodium_memzero`, which
/// the compiler may not drop as a dead store. Every other wipe (of a `Data`, a dictionary's
/// values, a D-Bus message's byte arrays, a scratch buffer) comes down to these.
public enum SecretMemory {
    private static let sodiumReady: Bool = sodium_init() >= 0

    /// libsodium must be initialised before `sodium_malloc` (it learns the page size then).
    public static func ensureSodiumInitialized() {
        precondition(sodiumReady, "libsodium failed to initialise")
    }

    public static func wipe(_ pointer: UnsafeMutableRawPointer, count: Int) {
        guard count > 0 else { return }
        sodium_memzero(pointer, count)
    }

    public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        wipe(base, count: buffer.count)
    }

    /// Zeroes storage that is only lent read-only (an array's or a `Data`'s, a libdbus
    /// message's): every holder of the same storage sees zeros afterwards, so only for
    /// values made for one use.
    public static func wipe(_ buffer: UnsafeRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        wipe(UnsafeMutableRawPointer(mutating: base), count: buffer.count)
    }

    /// Zeroes the array's storage in place, shared or not (see above).
    public static func wipe(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { wipe($0) }
    }
}
