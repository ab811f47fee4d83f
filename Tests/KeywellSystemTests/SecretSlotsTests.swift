import Testing

@testable import KeywellSystem

/// Transient secrets from a locked pool: zeroed when handed out and when given back, reused, and
/// the pool's bounds (docs/kwallet.md, "Passwords in memory"). Each test counts on a pool of its
/// own; the shared one serves every other test running meanwhile.
@Suite struct SecretSlotsTests {
    @Test func aSlotIsZeroedWhenGivenBackAndThenReused() throws {
        let pool = SecretSlots(slotSize: 64, slotsPerRegion: 4, maximumRegions: 2)
        let slot = try #require(pool.take(16))
        #expect(pool.inUse == 1)
        #expect(UnsafeRawBufferPointer(start: slot, count: 64).allSatisfy { $0 == 0 }, "handed out zeroed")
        slot.copyMemory(from: Array("hunter2 hunter2!".utf8), byteCount: 16)
        pool.give(slot)
        #expect(pool.inUse == 0)
        // Still mapped (the region stays): nothing of the secret is left in it.
        #expect(UnsafeRawBufferPointer(start: slot, count: 64).allSatisfy { $0 == 0 })
        #expect(pool.take(64) == slot, "the last slot given back is the next handed out")
        #expect(pool.take(65) == nil, "over a slot: the caller makes its own")
        pool.give(slot)
    }

    @Test func pastItsLastRegionThePoolSaysNo() throws {
        let pool = SecretSlots(slotSize: 32, slotsPerRegion: 4, maximumRegions: 2)
        var slots: [UnsafeMutableRawPointer] = []
        for _ in 0..<8 { slots.append(try #require(pool.take(32))) }
        #expect(Set(slots).count == 8)
        #expect(pool.take(1) == nil)
        #expect(pool.inUse == 8)
        for slot in slots { pool.give(slot) }
        #expect(pool.inUse == 0)
        #expect(pool.take(1) != nil, "slots given back are handed out again")
    }

    @Test func transientSecretsComeFromTheSharedPoolUnlessTooLong() {
        let short = SecretBytes(transientCopying: Array("hunter2".utf8))
        #expect(short.isPooled)
        #expect(short.count == 7)
        #expect(short.withUnsafeBytes { Array($0) } == Array("hunter2".utf8))
        let long = SecretBytes(transientCopying: [UInt8](repeating: 7, count: SecretSlots.shared.slotSize + 1))
        #expect(!long.isPooled)
        #expect(long.withUnsafeBytes { $0.allSatisfy { $0 == 7 } })
        #expect(SecretBytes(transientCount: 0).withUnsafeBytes { $0.count } == 0)
        #expect(!SecretBytes(copying: Array("kept".utf8)).isPooled, "a kept secret gets its own sodium_malloc")
    }

    @Test func manySecretsAtOnceAcrossThreadsKeepTheirOwnBytes() async {
        await withTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var held: [SecretBytes] = []
                    var intact = true
                    for index in 0..<300 {
                        held.append(SecretBytes(transientCopying: [UInt8](repeating: UInt8(task * 31 + index % 7), count: 1 + index % 200)))
                        if held.count > 20 { held.removeFirst(10) }
                        intact = intact && held.allSatisfy { secret in
                            secret.withUnsafeBytes { bytes in bytes.allSatisfy { $0 == bytes[0] } }
                        }
                    }
                    return intact
                }
            }
            for await intact in group { #expect(intact) }
        }
    }
}
