/// Reads a fuzzer's input as a stream of choices; past the end every read answers zero, so any
/// byte string decodes to some structured input.
struct FuzzBytes {
    private let bytes: [UInt8]
    private var position = 0

    init(_ data: UnsafePointer<UInt8>, _ size: Int) {
        bytes = Array(UnsafeBufferPointer(start: data, count: size))
    }

    var isAtEnd: Bool { position >= bytes.count }

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, position + count)
        defer { position = max(position, end) }
        return position < end ? Array(bytes[position..<end]) : []
    }

    /// One of `choices`, picked by the next byte.
    mutating func pick<T>(_ choices: [T]) -> T { choices[Int(byte()) % choices.count] }

    mutating func int64() -> Int64 {
        bytes(8).reduce(Int64(0)) { ($0 << 8) | Int64($1) }
    }

    /// A short string: usually from `vocabulary` (so the fuzzer reaches the meaningful keys and
    /// values early), else raw bytes that may not be UTF-8 (decoded with replacement, as D-Bus
    /// strings never carry invalid UTF-8 but the engine must not care).
    mutating func string(from vocabulary: [String]) -> String {
        let selector = byte()
        if selector < 192, !vocabulary.isEmpty { return vocabulary[Int(selector) % vocabulary.count] }
        return String(decoding: bytes(Int(byte() % 40)), as: UTF8.self)
    }
}
