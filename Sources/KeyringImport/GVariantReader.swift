import Foundation

/// Just enough of GVariant's serialisation to read libsecret's file format (docs/migration.md):
/// tuples, arrays, dictionary entries, strings, bytes and little-endian integers, with framing
/// offsets checked against the container they sit in, so a damaged file is an error, never a
/// read outside the buffer.
struct GVariantReader {
    /// A member's alignment and, for fixed-size types, its size.
    struct Shape {
        let alignment: Int
        let fixedSize: Int?
        static let byte = Shape(alignment: 1, fixedSize: 1)
        static let uint32 = Shape(alignment: 4, fixedSize: 4)
        static let uint64 = Shape(alignment: 8, fixedSize: 8)
        /// Strings, arrays and tuples holding them: variable size, alignment 1 here.
        static let variable = Shape(alignment: 1, fixedSize: nil)
        static func variable(aligned alignment: Int) -> Shape { Shape(alignment: alignment, fixedSize: nil) }
    }

    struct Failure: Error {
        let reason: String
    }

    let bytes: UnsafeRawBufferPointer
    let start: Int
    let end: Int

    init(_ bytes: UnsafeRawBufferPointer, start: Int = 0, end: Int? = nil) {
        self.bytes = bytes
        self.start = start
        self.end = end ?? bytes.count
    }

    var size: Int { end - start }
    var content: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[start..<end]) }

    private static func offsetSize(_ size: Int) -> Int {
        switch size {
        case 0: 0
        case ...0xff: 1
        case ...0xffff: 2
        case ...0xffff_ffff: 4
        default: 8
        }
    }

    private func readOffset(at position: Int, size width: Int) throws(Failure) -> Int {
        guard position >= start, position + width <= end else { throw Failure(reason: "a framing offset is outside its container") }
        var value: UInt64 = 0
        for index in 0..<width { value |= UInt64(bytes[position + index]) << (8 * UInt64(index)) }
        guard value <= UInt64(size) else { throw Failure(reason: "a framing offset points past its container") }
        return Int(value)
    }

    private static func align(_ value: Int, _ alignment: Int) -> Int { (value + alignment - 1) & ~(alignment - 1) }

    /// A tuple's (or dictionary entry's) members in order.
    func tuple(_ members: [Shape]) throws(Failure) -> [GVariantReader] {
        let width = Self.offsetSize(size)
        let framed = members.dropLast().filter { $0.fixedSize == nil }.count
        let limit = size - width * framed
        guard limit >= 0 else { throw Failure(reason: "a tuple is too short for its framing offsets") }
        var position = 0
        var frame = 0
        var result: [GVariantReader] = []
        for (index, member) in members.enumerated() {
            position = Self.align(position, member.alignment)
            let memberEnd: Int
            if let fixed = member.fixedSize {
                memberEnd = position + fixed
            } else if index == members.count - 1 {
                memberEnd = limit
            } else {
                memberEnd = try readOffset(at: end - width * (frame + 1), size: width)
                frame += 1
            }
            guard position <= memberEnd, memberEnd <= limit else { throw Failure(reason: "a tuple member is outside the tuple") }
            result.append(GVariantReader(bytes, start: start + position, end: start + memberEnd))
            position = memberEnd
        }
        return result
    }

    /// An array's elements; `maximum` caps their number before anything is built.
    func array(of element: Shape, maximum: Int) throws(Failure) -> [GVariantReader] {
        if let fixed = element.fixedSize {
            guard size % fixed == 0 else { throw Failure(reason: "an array of fixed-size elements has a ragged size") }
            guard size / fixed <= maximum else { throw Failure(reason: "an array has more than \(maximum) elements") }
            return (0..<size / fixed).map { GVariantReader(bytes, start: start + $0 * fixed, end: start + ($0 + 1) * fixed) }
        }
        guard size > 0 else { return [] }
        let width = Self.offsetSize(size)
        let lastEnd = try readOffset(at: end - width, size: width)
        let tableSize = size - lastEnd
        guard tableSize % width == 0, tableSize > 0 else { throw Failure(reason: "an array's offset table is damaged") }
        let count = tableSize / width
        guard count <= maximum else { throw Failure(reason: "an array has more than \(maximum) elements") }
        var result: [GVariantReader] = []
        result.reserveCapacity(count)
        var position = 0
        for index in 0..<count {
            position = Self.align(position, element.alignment)
            let elementEnd = try readOffset(at: start + lastEnd + index * width, size: width)
            guard position <= elementEnd, elementEnd <= lastEnd else { throw Failure(reason: "an array element is outside the array") }
            result.append(GVariantReader(bytes, start: start + position, end: start + elementEnd))
            position = elementEnd
        }
        return result
    }

    func string() throws(Failure) -> String {
        guard size >= 1, bytes[end - 1] == 0 else { throw Failure(reason: "a string without its terminating NUL") }
        let text = UnsafeRawBufferPointer(rebasing: bytes[start..<end - 1])
        guard !text.contains(0), let string = String(validating: text, as: UTF8.self) else {
            throw Failure(reason: "a string that is not UTF-8")
        }
        return string
    }

    func uint32() throws(Failure) -> UInt32 {
        guard size == 4 else { throw Failure(reason: "a 32-bit number of the wrong size") }
        return UInt32(try readUnsigned())
    }

    func uint64() throws(Failure) -> UInt64 {
        guard size == 8 else { throw Failure(reason: "a 64-bit number of the wrong size") }
        return try readUnsigned()
    }

    private func readUnsigned() throws(Failure) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<size { value |= UInt64(bytes[start + index]) << (8 * UInt64(index)) }
        return value
    }
}
