import KeychainServices
import Testing

@Test func statusCodesHaveApplesValues() {
    #expect(errSecDuplicateItem == -25299)
    #expect(errSecItemNotFound == -25300)
    #expect(errSecInteractionNotAllowed == -25308)
}
