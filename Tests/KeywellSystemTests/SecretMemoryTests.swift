import Testing

@testable import KeywellSystem

/// The one secret-memory type and the one wipe.
@Suite struct SecretMemoryTests {
    @Test func secretBytesHoldACopyAndStartZeroed() {
        let zeroed = SecretBytes(count: 32)
        #expect(zeroed.withUnsafeBytes { Array($0) } == [UInt8](repeating: 0, count: 32))
        let copy = SecretBytes(copying: Array("hunter2".utf8))
        #expect(copy.count == 7)
        #expect(copy.withUnsafeBytes { Array($0) } == Array("hunter2".utf8))
        #expect(SecretBytes(count: 0).withUnsafeBytes { $0.count } == 0)
    }

    @Test func wipeZeroesTheStorageEveryHolderSees() {
        var buffer: [UInt8] = Array("correct horse".utf8)
        let shared = buffer
        SecretMemory.wipe(shared)
        #expect(buffer.allSatisfy { $0 == 0 }, "the storage both names share is zeroed")
        buffer = Array("battery staple".utf8)
        buffer.withUnsafeMutableBytes { SecretMemory.wipe($0) }
        #expect(buffer.allSatisfy { $0 == 0 })
        // Empty and zero-length regions are no-ops.
        SecretMemory.wipe([UInt8]())
        SecretMemory.wipe(UnsafeMutableRawBufferPointer(start: nil, count: 0))
    }
}
