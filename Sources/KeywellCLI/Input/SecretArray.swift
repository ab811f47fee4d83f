import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A password or secret held for as short a time as possible, wiped when released.
///
/// Swift arrays copy on write, so the one buffer lives inside this class and is handed out
/// only for the duration of a call; what other layers copy (libdbus's message buffer) is
/// out of our reach, which is why commands drop their SecretArray right after the call.
/// Not KeywellSystem's locked `SecretBytes`: its storage is an ordinary array, because the
/// native client's calls take `[UInt8]`; it is wiped with the same `SecretMemory.wipe`.
final class SecretArray {
    private(set) var bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Takes the bytes of `data` and wipes `data`.
    convenience init(wiping data: inout Data) {
        self.init([UInt8](data))
        data.wipe()
    }

    var count: Int { bytes.count }
    var isEmpty: Bool { bytes.isEmpty }

    /// The secret as Data for the length of one call; the Data is wiped afterwards (the caller
    /// must not keep it: a dictionary holding it must drop it before `body` returns).
    func withData<T, E: Error>(_ body: (Data) throws(E) -> T) throws(E) -> T {
        var data = Data(bytes)
        defer { data.wipe() }
        return try body(data)
    }

    func wipe() {
        bytes.withUnsafeMutableBytes { SecretMemory.wipe($0) }
        bytes.removeAll()
    }

    deinit { wipe() }

    static func == (lhs: SecretArray, rhs: SecretArray) -> Bool {
        // Constant time: the comparison must not tell how much of a retyped password matched.
        guard lhs.bytes.count == rhs.bytes.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.bytes.indices { difference |= lhs.bytes[index] ^ rhs.bytes[index] }
        return difference == 0
    }
}

extension Data {
    /// Overwrites the bytes in place (when this Data is the buffer's only owner) and empties it.
    mutating func wipe() {
        withUnsafeMutableBytes { SecretMemory.wipe($0) }
        removeAll()
    }
}

