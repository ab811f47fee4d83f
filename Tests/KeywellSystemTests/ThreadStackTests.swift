import Testing

@testable import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// An idle thread gives back the stack pages its deepest calls touched.
@Suite struct ThreadStackTests {
    /// Pages of `range` resident now (mincore).
    private static func residentPages(_ range: Range<UInt>) -> Int {
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        var vector = [UInt8](repeating: 0, count: Int((range.upperBound - range.lowerBound) / page))
        guard mincore(UnsafeMutableRawPointer(bitPattern: range.lowerBound), Int(range.upperBound - range.lowerBound), &vector) == 0 else {
            return -1
        }
        return vector.reduce(0) { $0 + Int($1 & 1) }
    }

    /// Recurses `depth` frames, each writing a KiB of its own stack.
    @inline(never)
    private static func touchStack(depth: Int) -> UInt8 {
        withUnsafeTemporaryAllocation(byteCount: 1024, alignment: 16) { buffer in
            buffer.initializeMemory(as: UInt8.self, repeating: UInt8(truncatingIfNeeded: depth))
            return buffer[depth % 1024] &+ (depth > 0 ? touchStack(depth: depth - 1) : 0)
        }
    }

    @Test func releasingGivesBackThePagesBelowTheFrame() {
        let result = Protected<(before: Int, after: Int, ranged: Bool)?>(nil)
        let done = ConditionLock()
        startDetachedThread(name: "stack-test", stackSize: 1 << 20) {
            _ = Self.touchStack(depth: 300)
            guard let range = ThreadStack.unusedRange() else {
                done.withLock { result.withLock { $0 = (0, 0, false) }; done.broadcast() }
                return
            }
            // Two pages short of the end: the release runs from a frame a little deeper.
            let checked = range.lowerBound..<(range.upperBound - 2 * UInt(sysconf(Int32(_SC_PAGESIZE))))
            let before = Self.residentPages(checked)
            ThreadStack.releaseUnused()
            let after = Self.residentPages(checked)
            done.withLock { result.withLock { $0 = (before, after, true) }; done.broadcast() }
        }
        done.withLock { while result.withLock({ $0 }) == nil { done.wait(untilNanoseconds: deadline(after: .seconds(10))) } }
        let outcome = result.withLock { $0 }
        #expect(outcome?.ranged == true)
        #expect((outcome?.before ?? 0) > 32, "300 KiB of frames left fewer pages resident than expected")
        #expect(outcome?.after == 0)
    }
}
