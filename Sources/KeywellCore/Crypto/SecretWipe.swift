import Foundation
import KeywellProtocol
import KeywellSystem

/// Zeroes the storage of plaintext secrets once a request is done with them (`SecretMemory.wipe`,
/// KeywellSystem's one wipe). Freed memory is not cleared, so a secret left to the allocator stays readable in the daemon (and may reach swap)
/// after its keychain is locked. Every holder of the same storage sees zeros afterwards: only
/// for values made for one request (copies that something keeps must be copies of their own).
public enum SecretWipe {
    public static func wipe(_ data: Data) {
        data.withUnsafeBytes { SecretMemory.wipe($0) }
    }

    public static func wipe(_ bytes: [UInt8]) {
        SecretMemory.wipe(bytes)
    }

    /// The data values (`v_Data` and any other) of a request's or a result's dictionary: their
    /// storage, and the dictionary's own slots, where Foundation keeps values of up to 14 bytes
    /// (overwritten in place when the dictionary is not shared).
    public static func wipe(_ dictionary: inout WireDictionary) {
        // The keys first: iterating the dictionary itself would share its storage, and the
        // assignments below would then copy it instead of overwriting it.
        let keys = dictionary.compactMap { entry -> String? in
            if case .data = entry.value { return entry.key } else { return nil }
        }
        for key in keys {
            guard case .data(let data)? = dictionary[key] else { continue }
            wipe(data)
            dictionary[key] = .data(Data(count: data.count))
        }
    }

    /// A copy with storage of its own, for secrets that outlive the request that brought them;
    /// wiped when its last holder lets go.
    public static func ownCopy(_ data: Data) -> Data {
        data.withUnsafeBytes { wipingData(copying: $0) }
    }

    /// A plaintext secret whose storage is zeroed when the last holder releases it. Foundation
    /// keeps short values (up to 14 bytes) inside the `Data` value itself, where no explicit wipe
    /// can reach them once they were copied into a dictionary; this storage is always separate.
    public static func wipingData(copying bytes: UnsafeRawBufferPointer) -> Data {
        let copy = wipingData(count: bytes.count) { buffer in
            if let base = bytes.baseAddress, !bytes.isEmpty { buffer.copyMemory(from: UnsafeRawBufferPointer(start: base, count: bytes.count)) }
            return true
        }
        return copy!  // `fill` cannot fail here
    }

    public static func wipingData(copying bytes: [UInt8]) -> Data {
        bytes.withUnsafeBytes { wipingData(copying: $0) }
    }

    /// Storage of `count` bytes filled by `fill`; nil (and wiped) when `fill` fails.
    public static func wipingData(count: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Bool) -> Data? {
        let memory = malloc(max(count, 1))!
        guard fill(UnsafeMutableRawBufferPointer(start: memory, count: count)) else {
            SecretMemory.wipe(memory, count: count)
            free(memory)
            return nil
        }
        return Data(bytesNoCopy: memory, count: count, deallocator: .custom { pointer, length in
            SecretMemory.wipe(pointer, count: length)
            free(pointer)
        })
    }

}
