import KeywellSystem

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The CLI holds passwords and secrets in KeywellSystem's locked `SecretBytes` from the moment
/// they are read until they are released (docs/cli.md, "Secrets in memory"). These helpers make
/// the few copies other APIs need (Data for a wire dictionary, an array for a parser or a
/// printer) last one call, and wipe them right after.
extension SecretBytes {
    /// Takes the bytes of `data` and wipes `data`.
    convenience init(wiping data: inout Data) {
        self.init(count: data.count)
        withUnsafeMutableBytes { target in data.withUnsafeBytes { target.copyMemory(from: $0) } }
        data.wipe()
    }

    /// Takes the bytes of `array` and wipes `array`.
    convenience init(wiping array: inout [UInt8]) {
        self.init(copying: array)
        array.withUnsafeMutableBytes { SecretMemory.wipe($0) }
        array.removeAll()
    }

    var isEmpty: Bool { count == 0 }

    /// The secret as Data for the length of one call; the Data is wiped afterwards (the caller
    /// must not keep it: a dictionary holding it must drop it before `body` returns).
    func withData<T, E: Error>(_ body: (Data) throws(E) -> T) throws(E) -> T {
        var data = withUnsafeBytes { Data($0) }
        defer { data.wipe() }
        return try body(data)
    }

    /// The secret as an array for the length of one call (a parser or a printer that takes
    /// `[UInt8]`); the array is wiped afterwards.
    func withArray<T, E: Error>(_ body: ([UInt8]) throws(E) -> T) throws(E) -> T {
        var array = withUnsafeBytes { [UInt8]($0) }
        defer { array.withUnsafeMutableBytes { SecretMemory.wipe($0) } }
        return try body(array)
    }

    /// Zeroes the bytes now (the memory itself is freed, zeroed again, with the last reference).
    func wipe() {
        withUnsafeMutableBytes { SecretMemory.wipe($0) }
    }

    /// Constant time: the comparison must not tell how much of a retyped password matched.
    func matches(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        return withUnsafeBytes { lhs in
            other.withUnsafeBytes { rhs in
                var difference: UInt8 = 0
                for index in 0..<lhs.count { difference |= lhs[index] ^ rhs[index] }
                return difference == 0
            }
        }
    }
}

extension Data {
    /// Overwrites the bytes in place (when this Data is the buffer's only owner) and empties it.
    mutating func wipe() {
        withUnsafeMutableBytes { SecretMemory.wipe($0) }
        removeAll()
    }
}
