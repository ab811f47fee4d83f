import Foundation
import KeywellProtocol
import Testing

@testable import KeychainServices

/// Wire results → what Apple's SecItem puts in `result`, for every combination of return types
/// and limits, read back with the casts Apple-platform code uses.
@Suite struct ResultShapingTests {
    static let secrets = [Data("secret-1".utf8), Data("secret-2".utf8)]
    static let refs = [Data([0xAA, 1]), Data([0xAA, 2])]

    /// What the daemon answers for a match: the attributes, and the values that were asked for.
    static func match(_ index: Int, _ shape: ResultShape) -> WireDictionary {
        var match: WireDictionary = [:]
        if shape.returnsAttributes {
            match = ["class": .string("genp"), "acct": .string("user\(index)"), "svce": .string("svc"),
                     "cdat": .integer(1_700_000_000_000), "mdat": .integer(1_700_000_000_500)]
        }
        if shape.returnsData { match["v_Data"] = .data(secrets[index]) }
        if shape.returnsPersistentRef { match["v_PersistentRef"] = .data(refs[index]) }
        return match
    }

    static let limits: [(String, WireValue?)] = [
        ("default", nil), ("one", .string("m_LimitOne")), ("count 1", .integer(1)),
        ("all", .string("m_LimitAll")), ("count 5", .integer(5)),
    ]

    static let returnTypeSets: [(data: Bool, attributes: Bool, persistentRef: Bool)] =
        (0..<8).map { ($0 & 1 != 0, $0 & 2 != 0, $0 & 4 != 0) }

    @Test func shapeReadsTheQuery() {
        let shape = ResultShape(query: ["r_Data": .bool(true), "r_Attributes": .bool(false), "m_Limit": .string("m_LimitAll")])
        #expect(shape == ResultShape(returnsData: true, limitIsOne: false))
        #expect(ResultShape(query: [:]) == ResultShape())
        #expect(ResultShape(query: ["m_Limit": .integer(1)]).limitIsOne)
        #expect(!ResultShape(query: ["m_Limit": .integer(2)]).limitIsOne)
    }

    @Test(arguments: returnTypeSets)
    func everyReturnTypeCombinationAndLimit(_ returns: (data: Bool, attributes: Bool, persistentRef: Bool)) throws {
        for (label, limit) in Self.limits {
            var query: WireDictionary = ["class": .string("genp")]
            if returns.data { query["r_Data"] = .bool(true) }
            if returns.attributes { query["r_Attributes"] = .bool(true) }
            if returns.persistentRef { query["r_PersistentRef"] = .bool(true) }
            if let limit { query["m_Limit"] = limit }
            let shape = ResultShape(query: query)
            let matches = shape.limitIsOne ? [Self.match(0, shape)] : [Self.match(0, shape), Self.match(1, shape)]
            let result = try shape.copyMatchingResult(matches)
            let context = Comment(rawValue: "returns \(returns), limit \(label)")

            guard returns.data || returns.attributes || returns.persistentRef else {
                #expect(result == nil, context)
                continue
            }
            let items: [Any]
            if shape.limitIsOne {
                #expect((result as? [Any]) == nil, context)
                items = [result as Any]
            } else {
                let array = try #require(result as? [Any], context)
                #expect(array.count == 2, context)
                items = array
            }
            for (index, item) in items.enumerated() {
                check(item, index: index, returns: returns, context)
            }
        }
    }

    private func check(_ item: Any, index: Int, returns: (data: Bool, attributes: Bool, persistentRef: Bool), _ context: Comment) {
        let count = [returns.data, returns.attributes, returns.persistentRef].filter { $0 }.count
        if count == 1 && returns.data {
            #expect(item as? Data == Self.secrets[index], context)
            return
        }
        if count == 1 && returns.persistentRef {
            #expect(item as? Data == Self.refs[index], context)
            return
        }
        guard let dictionary = item as? [String: Any] else {
            Issue.record("not a dictionary: \(type(of: item)); \(context)")
            return
        }
        #expect((dictionary[kSecValueData as String] as? Data) == (returns.data ? Self.secrets[index] : nil), context)
        #expect((dictionary[kSecValuePersistentRef as String] as? Data) == (returns.persistentRef ? Self.refs[index] : nil), context)
        if returns.attributes {
            #expect(dictionary[kSecAttrAccount as String] as? String == "user\(index)", context)
            #expect(dictionary[kSecClass as String] as? String == "genp", context)
            #expect(dictionary[kSecAttrCreationDate as String] as? Date == Date(timeIntervalSince1970: 1_700_000_000), context)
        } else {
            #expect(dictionary[kSecAttrAccount as String] == nil, context)
            #expect(dictionary.count == count, context)
        }
    }

    @Test func arraysOfDataCastAsApplesDo() throws {
        let shape = ResultShape(returnsData: true, limitIsOne: false)
        let result = try shape.copyMatchingResult([["v_Data": .data(Self.secrets[0])], ["v_Data": .data(Self.secrets[1])]])
        #expect(result as? [Data] == Self.secrets)
        let attributes = ResultShape(returnsAttributes: true, limitIsOne: false)
        let list = try attributes.copyMatchingResult([["acct": .string("a")], ["acct": .string("b")]])
        #expect((list as? [[String: Any]])?.compactMap { $0[kSecAttrAccount as String] as? String } == ["a", "b"])
    }

    @Test func attributeValuesHaveApplesTypes() throws {
        let shape = ResultShape(returnsAttributes: true)
        let match: WireDictionary = [
            "class": .string("inet"), "acct": .string("bob"), "srvr": .string("example.com"),
            "port": .integer(443), "ptcl": .string("htps"), "atyp": .string("dflt"),
            "crtr": .string("abcd"), "type": .string("wxyz"),
            "invi": .bool(true), "nega": .bool(false),
            "cdat": .integer(1_000), "mdat": .integer(2_500),
            "labl": .data(Data("label".utf8)), "agrp": .string(""), "pdmn": .string("ak"),
        ]
        let result = try shape.copyMatchingResult([match])
        let attributes = try #require(result as? [String: Any])
        #expect(attributes[kSecAttrPort as String] as? Int == 443)
        #expect(attributes[kSecAttrPort as String] as? NSNumber == 443)
        #expect(attributes[kSecAttrProtocol as String] as? String == kSecAttrProtocolHTTPS as String)
        #expect(attributes[kSecAttrAuthenticationType as String] as? String == kSecAttrAuthenticationTypeDefault as String)
        #expect(attributes[kSecAttrCreator as String] as? UInt32 == 0x6162_6364)
        #expect((attributes[kSecAttrType as String] as? NSNumber)?.uint32Value == 0x7778_797A)
        #expect(attributes[kSecAttrIsInvisible as String] as? Bool == true)
        #expect(attributes[kSecAttrIsNegative as String] as? Bool == false)
        #expect(attributes[kSecAttrCreationDate as String] as? Date == Date(timeIntervalSince1970: 1))
        #expect(attributes[kSecAttrModificationDate as String] as? Date == Date(timeIntervalSince1970: 2.5))
        #expect(attributes[kSecAttrLabel as String] as? String == "label")
        #expect(attributes[kSecAttrAccessible as String] as? String == kSecAttrAccessibleWhenUnlocked as String)
        #expect(attributes[kSecAttrAccount as String] as? String == "bob")
    }

    @Test func defensiveIntegerForms() {
        #expect(AppleValues.appleValue(.integer(0x6874_7073), forKey: "ptcl") as? String == "htps")
        #expect(AppleValues.appleValue(.integer(0x6162_6364), forKey: "crtr") as? UInt32 == 0x6162_6364)
        #expect(AppleValues.appleValue(.integer(1), forKey: "invi") as? Bool == true)
        #expect(AppleValues.appleValue(.string("xy"), forKey: "gena") as? Data == Data("xy".utf8))
        #expect(AppleValues.appleValue(.data(Data([0xFF])), forKey: "acct") as? Data == Data([0xFF]))
    }

    @Test func addResults() throws {
        #expect(try ResultShape().addResult([:]) == nil)
        let data = try ResultShape(returnsData: true).addResult(["v_Data": .data(Self.secrets[0])])
        #expect(data as? Data == Self.secrets[0])
        let both = try ResultShape(returnsAttributes: true, returnsPersistentRef: true)
            .addResult(["acct": .string("a"), "v_PersistentRef": .data(Self.refs[0])])
        let dictionary = try #require(both as? [String: Any])
        #expect(dictionary[kSecValuePersistentRef as String] as? Data == Self.refs[0])
        #expect(dictionary[kSecAttrAccount as String] as? String == "a")
    }

    @Test func missingRequestedValueIsAnIOError() {
        #expect(throws: KeychainError(SecStatus.io, detail: "the daemon's reply has no v_Data")) {
            try ResultShape(returnsData: true).copyMatchingResult([[:]])
        }
    }

    @Test func emptyLimitOneIsNotFound() {
        #expect(throws: KeychainError(SecStatus.itemNotFound)) {
            try ResultShape(returnsData: true).copyMatchingResult([])
        }
    }
}
