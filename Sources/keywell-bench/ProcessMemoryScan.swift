import Foundation
import KeywellSystem

/// Reads a live process's memory the way an attacker with root can: every mapping in
/// /proc/<pid>/maps, through /proc/<pid>/mem, counting where given byte strings occur. That
/// includes PROT_NONE mappings (libsodium's guarded key pages when not in use): /proc/<pid>/mem
/// reads them anyway. Pages that cannot be read at all ([vvar], holes) are skipped.
struct ProcessMemoryScan {
    let pid: pid_t
    private static let chunk = 4 << 20
    private static let page = 4096
    /// The most of a /proc text file (maps, smaps) read: far more than any process here maps.
    static let procFileLimit = 64 << 20

    /// Where one needle was found.
    struct Findings {
        var count = 0
        /// Copies in D-Bus wire format (right after their own length, as an `ay` is marshalled):
        /// message and socket buffers rather than values of the program's own.
        var inWireFormat = 0
        /// The mappings holding it: their file or [heap]/[stack], "anonymous" for the rest.
        var places: Set<String> = []
        var summary: String { "\(count) \(count == 1 ? "copy" : "copies")" + (places.isEmpty ? "" : " (in \(places.sorted().joined(separator: ", ")))") }
    }

    /// How many times each needle occurs in the process's memory, in the needles' order.
    func occurrences(of needles: [[UInt8]]) throws -> [Findings] {
        let maps = try Self.readWhole("/proc/\(pid)/maps")
        let descriptor: FileDescriptor
        do { descriptor = try FileDescriptor.open("/proc/\(pid)/mem", O_RDONLY) } catch {
            throw BenchmarkFailure("cannot open /proc/\(pid)/mem: \(error.description)")
        }
        defer { try? descriptor.close() }
        var findings = Array(repeating: Findings(), count: needles.count)
        for line in maps.split(separator: "\n") {
            guard let range = Self.addressRange(line) else { continue }
            var counts = Array(repeating: (all: 0, wire: 0), count: needles.count)
            scan(range, descriptor, needles, &counts)
            for (index, count) in counts.enumerated() where count.all > 0 {
                findings[index].count += count.all
                findings[index].inWireFormat += count.wire
                findings[index].places.insert(Self.mappingName(line))
            }
        }
        return findings
    }

    /// The sixth field of a maps line, when there is one.
    private static func mappingName(_ line: Substring) -> String {
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard fields.count == 6 else { return "anonymous" }
        return fields[5].trimmingCharacters(in: .whitespaces)
    }

    /// A /proc file read to its end (its size shows as 0, and Foundation's one-shot reads stop short).
    static func readWhole(_ path: String) throws -> String {
        let read: [UInt8]?
        do {
            let file = try FileDescriptor.open(path, O_RDONLY)
            read = try file.closeAfter { () throws(Errno) in try file.readAll(limit: procFileLimit) }
        } catch {
            throw BenchmarkFailure("cannot read \(path): \(error.description)")
        }
        guard let bytes = read else { throw BenchmarkFailure("\(path) is larger than \(procFileLimit) bytes") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// "start-end perms …" → start..<end.
    private static func addressRange(_ line: Substring) -> Range<UInt64>? {
        guard let field = line.split(separator: " ", maxSplits: 1).first else { return nil }
        let bounds = field.split(separator: "-")
        guard bounds.count == 2, let start = UInt64(bounds[0], radix: 16), let end = UInt64(bounds[1], radix: 16),
              start < end else { return nil }
        return start..<end
    }

    /// Reads the mapping in chunks; the tail of each chunk is carried over so a needle that
    /// straddles two chunks is still found (and counted once).
    private func scan(_ range: Range<UInt64>, _ descriptor: FileDescriptor, _ needles: [[UInt8]], _ counts: inout [(all: Int, wire: Int)]) {
        // Four more bytes than the longest needle, to see the length in front of a copy.
        let carryLength = max(0, (needles.map(\.count).max() ?? 1) - 1) + 4
        var carry: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: Self.chunk)
        var address = range.lowerBound
        while address < range.upperBound {
            let wanted = Int(min(UInt64(Self.chunk), range.upperBound - address))
            let got = buffer.withUnsafeMutableBytes { block in
                (try? descriptor.read(fromAbsoluteOffset: Int64(bitPattern: address), into: UnsafeMutableRawBufferPointer(rebasing: block[..<wanted]))) ?? 0
            }
            guard got > 0 else {
                // An unreadable page: skip it, and nothing straddles it.
                address += UInt64(Self.page)
                carry = []
                continue
            }
            let window = carry + buffer[0..<got]
            for (index, needle) in needles.enumerated() {
                let found = Self.count(needle, in: window, endingAfter: carry.count)
                counts[index].all += found.all
                counts[index].wire += found.wire
            }
            carry = Array(window.suffix(carryLength))
            address += UInt64(got)
        }
    }

    /// Occurrences of `needle` in `haystack` that end past `offset` (those inside the carried-over
    /// bytes were counted with the previous chunk), and how many follow their own length.
    static func count(_ needle: [UInt8], in haystack: [UInt8], endingAfter offset: Int) -> (all: Int, wire: Int) {
        guard let first = needle.first, haystack.count >= needle.count else { return (0, 0) }
        var found = 0
        var wire = 0
        let length = withUnsafeBytes(of: UInt32(needle.count).littleEndian) { Array($0) }
        haystack.withUnsafeBufferPointer { hay in
            needle.withUnsafeBufferPointer { pin in
                let last = hay.count - pin.count
                var start = max(0, offset - pin.count + 1)
                while start <= last {
                    guard let hit = memchr(hay.baseAddress! + start, Int32(first), last - start + 1) else { break }
                    let position = hay.baseAddress!.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if memcmp(hay.baseAddress! + position, pin.baseAddress!, pin.count) == 0 {
                        found += 1
                        if position >= 4, memcmp(hay.baseAddress! + position - 4, length, 4) == 0 { wire += 1 }
                    }
                    start = position + 1
                }
            }
        }
        return (found, wire)
    }
}
