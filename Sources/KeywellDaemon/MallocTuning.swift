import Foundation

/// glibc's malloc, tuned and trimmed through functions Swift's Glibc module does not export
/// (`mallopt`, `malloc_trim`); looked up at run time (docs/performance.md, "The daemon").
enum MallocTuning {
    /// `M_ARENA_MAX` from <malloc.h>.
    private static let arenaMaxOption: Int32 = -8
    /// Arenas for the whole process. glibc gives every thread that allocates while the others'
    /// arenas are busy one of its own, up to 8 per core, and each keeps the pages it once used;
    /// keywelld's D-Bus workers, timers and trimmer then hold several heaps' worth of free pages.
    /// One arena: a second one (for the I/O thread and a worker not to wait on one lock) held
    /// 0.5–0.7 MiB resident after the heap trim for 60–400 KiB of live blocks, pages that blocks
    /// of either arena only partly fill; each thread's malloc cache (tcache) already serves most
    /// small blocks without the lock (docs/performance.md, "The daemon").
    static let arenaLimit: Int32 = 1

    private typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
    private typealias MallocTrim = @convention(c) (Int) -> Int32

    private static let mallopt: Mallopt? = symbol("mallopt")
    private static let mallocTrim: MallocTrim? = symbol("malloc_trim")

    /// Before the daemon's threads start: an arena limit applies to arenas made afterwards.
    static func limitArenas() {
        _ = mallopt?(arenaMaxOption, arenaLimit)
    }

    /// Gives the free pages of every arena back to the system (`malloc_trim(0)`).
    static func trim() {
        _ = mallocTrim?(0)
    }

    private static func symbol<T>(_ name: String) -> T? {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(address, to: T.self)
    }
}
