import KeywellProtocol
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// Passwords that Apple's C-shaped functions receive as pointer and length.
package enum PasswordBytes {
    /// A copy of `length` bytes at `pointer`, in locked memory; a missing pointer with a
    /// non-zero length is errSecParam, as in Apple's `RequiredParam`.
    package static func copy(_ pointer: UnsafeRawPointer?, length: UInt32) throws(KeychainError) -> SecretBytes {
        guard length > 0 else { return SecretBytes(count: 0) }
        guard let pointer else { throw .param("password pointer is NULL but its length is \(length)") }
        return SecretBytes(copying: UnsafeRawBufferPointer(start: pointer, count: Int(length)))
    }

    /// Zeroes the array's storage in place (`SecretMemory.wipe`). Call it
    /// once the D-Bus call that carried the bytes has returned: the array is then no longer
    /// shared, so the wipe reaches the storage that was sent rather than a fresh copy.
    package static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { SecretMemory.wipe($0) }
    }
}
