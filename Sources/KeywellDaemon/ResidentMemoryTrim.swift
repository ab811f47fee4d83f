import Foundation
import KeywellSystem

/// Gives back the file pages the daemon touched but does not need while idle.
///
/// Most of a Swift daemon's resident memory is clean pages of shared libraries (Foundation, the
/// Swift runtime), much of it the kernel's fault-around mapping 16 neighbours of every page
/// touched; with a big keychain it is also the engine's read-only SQLite mmap of the file. When
/// idle, every read-only file mapping that holds no page this process wrote is dropped from its
/// page tables (`MADV_DONTNEED`): the pages stay in the page cache and come back on first touch.
/// Writable mappings (the WAL index, data segments) and any mapping with private (relocated)
/// pages are left alone, so nothing this process changed can be lost: the same as the kernel
/// evicting clean pages under memory pressure.
///
/// The whole of `/proc/self/smaps` is read and parsed before the first page goes, and the pages
/// then go in one loop that calls nothing but `madvise`: parsing runs the Swift runtime's
/// string and integer code, and parsing between two drops faulted that code (and its
/// neighbours, 1.5–2 MiB) straight back in, to stay resident until the next trim.
/// Every eligible mapping gets its `madvise`, also one with no page resident when smaps was
/// read: the parse and the heap trim run after that reading and fault in pages of their own
/// (a parse that reached Foundation's string search kept 0.5 MiB of libFoundation's text
/// resident through every idle trim after a lock), which the loop then gives back too
/// (docs/performance.md, "The daemon").
enum ResidentMemoryTrim {
    /// One mapping to drop: where it starts, its length, what of it was resident.
    struct Eligible: Equatable {
        let start: UInt
        let length: Int
        let residentKiB: Int
    }

    /// Gives the free heap back too (`MallocTuning.trim`), between the parse and the drops: the
    /// smaps text and the parse's arrays are freed then, and the trim's own code goes with the
    /// library pages. `report` hears, before the drops, how many KiB were resident in the
    /// mappings that go (logging afterwards would fault the logger's code back in).
    /// Returns that figure.
    @discardableResult
    static func apply(report: (Int) -> Void = { _ in }) -> Int {
        let mappings = readEligibleMappings()
        MallocTuning.trim()
        let resident = mappings.reduce(0) { $0 &+ $1.residentKiB }
        report(resident)
        // Nothing but madvise from here on (see the type's comment).
        mappings.withUnsafeBufferPointer { buffer in
            for mapping in buffer {
                guard let address = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
                _ = madvise(address, mapping.length, MADV_DONTNEED)
            }
        }
        return resident
    }

    /// In a function of its own, so that the smaps text is freed before the heap trim.
    private static func readEligibleMappings() -> [Eligible] {
        guard let smaps = readProcFile("/proc/self/smaps") else { return [] }
        return eligibleMappings(smaps)
    }

    /// The mappings `apply` drops, from smaps' text: read-only, backed by a file, no page of
    /// them written; resident or not (see the type's comment).
    static func eligibleMappings(_ smaps: String) -> [Eligible] {
        var eligible: [Eligible] = []
        var current: (start: UInt, end: UInt, eligible: Bool)?
        var rss = 0
        func finish() {
            guard let mapping = current, mapping.eligible else { return }
            eligible.append(Eligible(start: mapping.start, length: Int(mapping.end - mapping.start), residentKiB: rss))
        }
        // Only the standard library's string code below: `contains` of a String (not of a
        // Character) is Foundation's, which is not resident when smaps is read.
        for line in smaps.split(separator: "\n", omittingEmptySubsequences: true) {
            if let first = line.first, first.isHexDigit, line.contains(Character("-")) {
                finish()
                rss = 0
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                let range = fields[0].split(separator: "-")
                let permissions = fields[1]
                let path = fields.count > 5 ? fields[5] : ""
                guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16) else {
                    current = nil
                    continue
                }
                // Read-only and backed by a file (not [vdso], [stack] or anonymous memory).
                let eligible = permissions.hasPrefix("r") && !permissions.contains(Character("w")) && path.hasPrefix("/")
                current = (start, end, eligible)
            } else if line.hasPrefix("Rss:") {
                rss = kibibytes(line)
            } else if line.hasPrefix("Anonymous:") || line.hasPrefix("Swap:") {
                // Relocated or otherwise written pages, this process's own copies: dropping them
                // would lose the changes. Not `Private_Dirty`, which also counts a file's pages
                // not yet written back to the disk (a keywelld just installed or built: 5 MiB
                // of its text for half a minute), which the page cache keeps.
                if kibibytes(line) > 0 { current?.eligible = false }
            }
        }
        finish()
        return eligible
    }

    /// The most of smaps read: far more than the daemon maps (some hundred KiB); a larger file
    /// skips the trim rather than hold it.
    static let smapsLimit = 64 << 20

    /// /proc files report size 0; `readAll` reads until the end, in one 64 KiB buffer that
    /// doubles as it fills. Nil when it cannot be read or is over `smapsLimit`.
    private static func readProcFile(_ path: String) -> String? {
        guard let file = try? FileDescriptor.open(path, O_RDONLY),
              let bytes = file.closeAfter({ try? file.readAll(limit: smapsLimit) })
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func kibibytes(_ line: Substring) -> Int {
        Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }
}
