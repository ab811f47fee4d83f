/// Big-endian numbers and fields led by their 4-byte length: the layout of an export file's
/// records (docs/export-import.md) and of everything sealed in a sync folder (docs/sync.md).
/// One writer for both, so the two formats cannot drift apart in how a field is framed.
package struct LengthPrefixedWriter {
    package var bytes: [UInt8]

    package init(bytes: [UInt8] = []) { self.bytes = bytes }

    package mutating func byte(_ value: UInt8) { bytes.append(value) }

    package mutating func number(_ value: UInt64, width: Int) {
        for index in (0..<width).reversed() { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    package mutating func raw(_ value: some Sequence<UInt8>) { bytes += value }

    package mutating func text(_ value: String) { blob(Array(value.utf8)) }

    package mutating func blob(_ value: [UInt8]) {
        number(UInt64(value.count), width: 4)
        bytes += value
    }

    package mutating func blob(_ value: UnsafeRawBufferPointer) {
        number(UInt64(value.count), width: 4)
        bytes += value
    }
}
