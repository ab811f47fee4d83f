import Foundation

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
/// neighbours, 1.5–2 MiB) straight back in, to stay resident until the next trim
/// (docs/performance.md, "The daemon").
enum ResidentMemoryTrim {
    /// One mapping to drop: where it starts, its length, what of it is resident.
    private struct Eligible {
        let start: UInt
        let length: Int
        let residentKiB: Int
    }

    /// Returns how many KiB were dropped.
    @discardableResult
    static func apply() -> Int {
        guard let smaps = readProcFile("/proc/self/smaps") else { return 0 }
        let mappings = eligibleMappings(smaps)
        var dropped = 0
        // Nothing but madvise from here on (see the type's comment).
        mappings.withUnsafeBufferPointer { buffer in
            for mapping in buffer {
                guard let address = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
                if madvise(address, mapping.length, MADV_DONTNEED) == 0 { dropped &+= mapping.residentKiB }
            }
        }
        return dropped
    }

    private static func eligibleMappings(_ smaps: String) -> [Eligible] {
        var eligible: [Eligible] = []
        var current: (start: UInt, end: UInt, eligible: Bool)?
        var rss = 0
        func finish() {
            guard let mapping = current, mapping.eligible, rss > 0 else { return }
            eligible.append(Eligible(start: mapping.start, length: Int(mapping.end - mapping.start), residentKiB: rss))
        }
        for line in smaps.split(separator: "\n", omittingEmptySubsequences: true) {
            if let first = line.first, first.isHexDigit, line.contains("-") {
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
                let eligible = permissions.hasPrefix("r") && !permissions.contains("w") && path.hasPrefix("/")
                current = (start, end, eligible)
            } else if line.hasPrefix("Rss:") {
                rss = kibibytes(line)
            } else if line.hasPrefix("Private_Dirty:") || line.hasPrefix("Anonymous:") || line.hasPrefix("Swap:") {
                // Relocated or otherwise written pages: dropping them would lose the changes.
                if kibibytes(line) > 0 { current?.eligible = false }
            }
        }
        finish()
        return eligible
    }

    /// /proc files report size 0; read until the end.
    private static func readProcFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func kibibytes(_ line: Substring) -> Int {
        Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }
}
