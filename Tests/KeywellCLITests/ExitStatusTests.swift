import KeywellProtocol
import Testing

/// `security` exits with the low byte of the OSStatus (docs/cli.md "General rules").
@Test func exitStatusIsTheLowByteOfTheStatus() {
    #expect(UInt8(truncatingIfNeeded: SecStatus.itemNotFound) == 44)
    #expect(UInt8(truncatingIfNeeded: SecStatus.duplicateItem) == 45)
    #expect(UInt8(truncatingIfNeeded: SecStatus.interactionNotAllowed) == 36)
}
