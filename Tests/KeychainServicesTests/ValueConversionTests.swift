import Foundation
import KeywellProtocol
import Testing

@testable import KeychainServices

/// Apple dictionaries (as Apple-platform code builds them) → native-API wire dictionaries.
@Suite struct ValueConversionTests {
    private func wire(_ dictionary: [String: Any], _ role: DictionaryRole = .query) throws -> WireDictionary {
        try ValueConversion.wireDictionary(dictionary as CFDictionary, role: role)
    }

    private func status(_ dictionary: [String: Any], _ role: DictionaryRole = .query) -> OSStatus? {
        do {
            _ = try ValueConversion.wireDictionary(dictionary as CFDictionary, role: role)
            return nil
        } catch {
            return error.status
        }
    }

    @Test func stringsDataAndBooleans() throws {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: "svc",
            kSecAttrAccount as String: NSString(string: "alice"),
            kSecValueData as String: "pw".data(using: .utf8)!,
            kSecAttrGeneric as String: NSData(data: Data([1, 2])),
            kSecReturnData as String: kCFBooleanTrue!,
            kSecReturnAttributes as String: true,
            kSecAttrIsInvisible as String: NSNumber(value: false),
        ]
        #expect(try wire(query, .add) == [
            "class": .string("genp"), "svce": .string("svc"), "acct": .string("alice"),
            "v_Data": .data(Data("pw".utf8)), "gena": .data(Data([1, 2])),
            "r_Data": .bool(true), "r_Attributes": .bool(true), "invi": .bool(false),
        ])
    }

    @Test func implicitlyUnwrappedConstantsAreUnwrapped() throws {
        // `kCFBooleanTrue` without `!` reaches the dictionary as an Optional.
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecReturnData as String: kCFBooleanTrue as Any]
        #expect(try wire(query)["r_Data"] == .bool(true))
        #expect(ValueConversion.unwrapOptional(Optional(Optional(3)) as Any) as? Int == 3)
    }

    @Test func numbersBecomeIntegersOrBooleansByKey() throws {
        let query: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword,
            kSecAttrPort as String: 443,
            kSecAttrCreator as String: NSNumber(value: UInt32(0x6162_6364)),
            kSecReturnPersistentRef as String: NSNumber(value: 1),  // an integer NSNumber where a bool goes
            kSecMatchCaseInsensitive as String: 1,
            kSecAttrIsNegative as String: 0,
        ]
        let converted = try wire(query)
        #expect(converted["port"] == .integer(443))
        #expect(converted["crtr"] == .integer(0x6162_6364))
        #expect(converted["r_PersistentRef"] == .bool(true))
        #expect(converted["m_CaseInsensitive"] == .bool(true))
        #expect(converted["nega"] == .bool(false))
    }

    @Test func matchLimits() throws {
        let base: [String: Any] = [kSecClass as String: kSecClassGenericPassword]
        func limit(_ value: Any) throws -> WireValue? {
            var query = base
            query[kSecMatchLimit as String] = value
            return try wire(query)["m_Limit"]
        }
        #expect(try limit(kSecMatchLimitOne) == .string("m_LimitOne"))
        #expect(try limit(kSecMatchLimitAll) == .string("m_LimitAll"))
        #expect(try limit(5) == .integer(5))
        #expect(try limit(NSNumber(value: 2)) == .integer(2))
    }

    @Test func datesBecomeMilliseconds() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000.123)
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrCreationDate as String: date,
                                    kSecAttrModificationDate as String: NSDate(timeIntervalSince1970: 2)]
        let converted = try wire(query)
        #expect(converted["cdat"] == .integer(1_700_000_000_123))
        #expect(converted["mdat"] == .integer(2000))
    }

    @Test func keychainsBecomeNamesOrPaths() throws {
        let login = SecKeychain(nameOrPath: "login.keychain")
        let other = SecKeychain(nameOrPath: "/tmp/x/other.keychain-db")
        let add: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecUseKeychain as String: login]
        #expect(try wire(add, .add)["u_Keychain"] == .string("login"))
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecMatchSearchList as String: [login, other]]
        #expect(try wire(query)["m_SearchList"] == .strings(["login", "/tmp/x/other.keychain-db"]))
        let asCFArray: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                        kSecMatchSearchList as String: [other] as CFArray]
        #expect(try wire(asCFArray)["m_SearchList"] == .strings(["/tmp/x/other.keychain-db"]))
        #expect(status([kSecClass as String: kSecClassGenericPassword, kSecMatchSearchList as String: [1, 2]]) == errSecParam)
        #expect(status([kSecClass as String: kSecClassGenericPassword, kSecUseKeychain as String: 7], .add) == errSecParam)
    }

    @Test func synchronizable() throws {
        let base: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "a"]
        func with(_ value: Any) -> [String: Any] {
            var dictionary = base
            dictionary[kSecAttrSynchronizable as String] = value
            return dictionary
        }
        // Not synchronizable is what every item is: dropped.
        #expect(try wire(with(false), .add) == ["class": .string("genp"), "acct": .string("a")])
        #expect(try wire(with(kCFBooleanFalse as Any)) == ["class": .string("genp"), "acct": .string("a")])
        #expect(try wire(with(kSecAttrSynchronizableAny)) == ["class": .string("genp"), "acct": .string("a")])
        #expect(try wire(with(false), .attributesToUpdate) == ["class": .string("genp"), "acct": .string("a")])
        // Synchronizable items cannot exist.
        #expect(status(with(true), .add) == errSecParam)
        #expect(status(with(true), .attributesToUpdate) == errSecParam)
        #expect(status(with(kSecAttrSynchronizableAny), .add) == errSecParam)
        #expect(status(with(true), .query) == errSecItemNotFound)
    }

    @Test func appleOnlyKeysAreDropped() throws {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecUseDataProtectionKeychain as String: true,
            kSecUseOperationPrompt as String: "Unlock?",
            kSecReturnRef as String: false,
        ]
        #expect(try wire(query) == ["class": .string("genp")])
    }

    @Test func authenticationUIReachesTheDaemon() throws {
        let base: [String: Any] = [kSecClass as String: kSecClassGenericPassword]
        func with(_ key: CFString, _ value: Any) -> [String: Any] {
            var dictionary = base
            dictionary[key as String] = value
            return dictionary
        }
        #expect(try wire(with(kSecUseAuthenticationUI, kSecUseAuthenticationUIFail))
            == ["class": .string("genp"), "u_AuthUI": .string("u_AuthUIF")])
        #expect(try wire(with(kSecUseAuthenticationUI, kSecUseAuthenticationUISkip))["u_AuthUI"] == .string("u_AuthUIS"))
        #expect(try wire(with(kSecUseNoAuthenticationUI, true)) == ["class": .string("genp"), "u_AuthUI": .string("u_AuthUIF")])
        #expect(try wire(with(kSecUseNoAuthenticationUI, false)) == ["class": .string("genp")])
    }

    @Test func unconvertibleValuesAreParam() {
        let base: [String: Any] = [kSecClass as String: kSecClassGenericPassword]
        func with(_ key: String, _ value: Any) -> [String: Any] {
            var dictionary = base
            dictionary[key] = value
            return dictionary
        }
        #expect(status(with(kSecAttrAccount as String, NSNull())) == errSecParam)
        #expect(status(with(kSecAttrAccount as String, Optional<String>.none as Any)) == errSecParam)
        #expect(status(with(kSecAttrAccount as String, [1: 2])) == errSecParam)
        #expect(status(with(kSecAttrPort as String, 1.5)) == errSecParam)
        #expect(status(with(kSecReturnRef as String, true)) == errSecParam)
        #expect(status(with(kSecValueRef as String, SecAccess.anyApplication())) == errSecParam)
    }

    @Test func nonStringKeysAreParam() {
        let dictionary = NSMutableDictionary()
        dictionary[NSNumber(value: 1)] = "x"
        do {
            _ = try ValueConversion.wireDictionary(dictionary, role: .query)
            Issue.record("a number key was accepted")
        } catch {
            #expect(error.status == errSecParam)
        }
    }

    @Test func unknownKeysTravelForTheDaemonToJudge() throws {
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, "zzzz": "x"]
        #expect(try wire(query)["zzzz"] == .string("x"))
    }
}
