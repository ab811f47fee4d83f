import Testing
import KeywellProtocol

/// `security` exits with the low byte of the OSStatus (reference §1.1).
@Test func exitStatusIsTheLowByteOfTheStatus() {
    #expect(UInt8(truncatingIfNeeded: SecStatus.itemNotFound) == 44)
    #expect(UInt8(truncatingIfNeeded: SecStatus.duplicateItem) == 45)
    #expect(UInt8(truncatingIfNeeded: SecStatus.interactionNotAllowed) == 36)
}
