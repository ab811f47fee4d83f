#if canImport(Glibc)
import Glibc
#endif

/// The calling thread's stack, below the frames in use.
package enum ThreadStack {
    /// Left alone below the caller's frame: what the calls it makes next (a lock's wait, the
    /// kernel's signal frame) use without faulting a page in again.
    package static let margin = 16 << 10

    /// What a thread that is about to end keeps below its frame (`releaseUnused(margin:)`).
    package static let exitMargin = 4 << 10

    /// glibc's `pthread_getattr_np`, which Swift's Glibc module does not export; looked up once.
    private typealias GetAttributes = @convention(c) (pthread_t, UnsafeMutablePointer<pthread_attr_t>) -> Int32
    private static let getAttributes: GetAttributes? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pthread_getattr_np") else { return nil }
        return unsafeBitCast(symbol, to: GetAttributes.self)
    }()

    /// Gives back the pages of the calling thread's stack below its current frame (less
    /// `margin`): an idle thread keeps every stack page its deepest call ever touched, 48 KiB at
    /// least once a call was handled (the stack scrub), and four idle workers or connection
    /// loops held 0.3 MiB that way (docs/performance.md, "The daemon"). `MADV_DONTNEED` on a
    /// private anonymous mapping: the next touch gets a zero page. Only for a thread's own stack,
    /// from a frame that stays live until it returns; nothing below that frame is in use.
    /// Not for the main thread (its stack is the kernel's, grown on demand).
    /// A thread about to end passes a smaller `margin`: glibc keeps the 16 KiB below the frame
    /// it ends from resident in its cache of stacks, all of it touched by the stack scrub, and
    /// only frees, destructors and the exit run below this one now.
    package static func releaseUnused(margin: Int = ThreadStack.margin) {
        guard let range = unusedRange(margin: margin) else { return }
        _ = madvise(UnsafeMutableRawPointer(bitPattern: range.lowerBound), Int(range.upperBound - range.lowerBound), MADV_DONTNEED)
    }

    /// The whole pages of the calling thread's stack below its current frame less `margin`;
    /// nil when it cannot be told or there is none.
    package static func unusedRange(margin: Int = ThreadStack.margin) -> Range<UInt>? {
        var attributes = pthread_attr_t()
        guard let getAttributes = Self.getAttributes, getAttributes(pthread_self(), &attributes) == 0 else { return nil }
        defer { pthread_attr_destroy(&attributes) }
        var base: UnsafeMutableRawPointer?
        var size = 0
        guard pthread_attr_getstack(&attributes, &base, &size) == 0, let low = base else { return nil }
        var here: UInt8 = 0
        let frame = withUnsafeMutablePointer(to: &here) { UInt(bitPattern: $0) }
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let lowest = UInt(bitPattern: low)
        // The stack grows down: [lowest, frame - margin), whole pages.
        guard frame > lowest + UInt(margin) + page, frame <= lowest + UInt(size) else { return nil }
        let end = (frame - UInt(margin)) & ~(page - 1)
        let start = (lowest + page - 1) & ~(page - 1)
        return end > start ? start..<end : nil
    }
}
