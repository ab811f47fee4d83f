import Foundation
import KeywellCore

/// A machine's random 128-bit id, made at `sync enable` or `sync join` and kept with the
/// keychain's sync settings. Written as 32 lowercase hex digits in file names.
public struct MachineID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public static let byteCount = 16
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    public init?(hex: some StringProtocol) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 2 * Self.byteCount else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.byteCount)
        for index in stride(from: 0, to: utf8.count, by: 2) {
            guard let high = Self.nibble(utf8[index]), let low = Self.nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    public static func random() -> MachineID {
        MachineID(bytes: Array(Sodium.randomData(count: byteCount)))!
    }

    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return String(decoding: text, as: UTF8.self)
    }

    public var description: String { hex }

    /// Ties between changes made in the same millisecond go to the higher id.
    public static func < (left: MachineID, right: MachineID) -> Bool { left.bytes.lexicographicallyPrecedes(right.bytes) }

    /// Lowercase only: one id has one spelling, so one file has one name.
    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
