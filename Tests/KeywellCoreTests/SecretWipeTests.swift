import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

@Suite("Wiping secrets after a request")
struct SecretWipeTests {
    @Test func wipingADictionaryZeroesItsDataInPlaceAndInSharedStorage() {
        let long = SecretWipe.wipingData(copying: [UInt8](repeating: 7, count: 40))
        let otherHolder = long  // the same storage, as a copy kept elsewhere during the request
        var dictionary: WireDictionary = [
            "v_Data": .data(long), "short": .data(Data([1, 2, 3])), "acct": .string("a"), "port": .integer(443),
        ]
        SecretWipe.wipe(&dictionary)
        #expect(dictionary["v_Data"] == .data(Data(count: 40)))
        #expect(dictionary["short"] == .data(Data(count: 3)))  // kept inside the value: overwritten
        #expect(dictionary["acct"] == .string("a"))
        #expect(dictionary["port"] == .integer(443))
        #expect(otherHolder.count == 40 && otherHolder.allSatisfy { $0 == 0 })
    }

    @Test func wipingDataHoldsItsBytesUntilReleased() {
        let bytes: [UInt8] = Array("a secret of some length".utf8)
        let data = SecretWipe.wipingData(copying: bytes)
        #expect(Array(data) == bytes)
        #expect(SecretWipe.wipingData(copying: []).isEmpty)
        #expect(Array(SecretWipe.ownCopy(data)) == bytes)
    }
}
