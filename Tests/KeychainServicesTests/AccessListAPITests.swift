import Foundation
import KeychainServices
import KeywellProtocol
import KeywellTestSupport
import Testing

/// SecAccess, SecTrustedApplication and the item access calls against the real keywelld
/// (docs/access-control.md, "Access lists on items").
@Suite(.enabled(if: ContinuousIntegration.runs(if: KeychainDaemonBus.daemonIsBuilt), "keywelld is not built next to the tests"))
struct AccessListAPITests {
    private func trusted(_ path: String?) -> SecTrustedApplication? {
        var app: SecTrustedApplication?
        let status = path.map { SecTrustedApplicationCreateFromPath($0, &app) } ?? SecTrustedApplicationCreateFromPath(nil, &app)
        #expect(status == errSecSuccess)
        return app
    }

    /// The persistent reference of the genp item (service, account), as a legacy item ref.
    private func item(_ service: String, _ account: String) throws -> SecKeychainItem {
        var result: CFTypeRef?
        let query = [kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecAttrAccount: account,
                     kSecReturnPersistentRef: true] as CFDictionary
        #expect(SecItemCopyMatching(query, &result) == errSecSuccess)
        let reference = try #require(result as? Data)
        var item: SecKeychainItem?
        #expect(SecKeychainItemCopyFromPersistentReference(reference as CFData, &item) == errSecSuccess)
        return try #require(item)
    }

    private func identities(_ item: SecKeychainItem) -> [String]?? {
        var access: SecAccess?
        guard SecKeychainItemCopyAccess(item, &access) == errSecSuccess, let access else { return .none }
        return .some(access.trustedApplications?.map(\.identity))
    }

    @Test func trustedApplicationsNameTheProgramByRealPathAndHashUnlessOnlyRootCanReplaceIt() throws {
        let env = try #require(trusted("/usr/bin/env"))
        #expect(env.identity == (try ExpectedProgramIdentity.of("/usr/bin/env")))
        // nil: the calling program (this test runner), by the path /proc/self/exe resolves to.
        let me = try #require(trusted(nil))
        let myPath = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(me.identity == (try ExpectedProgramIdentity.of(myPath)))
        // A copy under /tmp, where anyone may add files, is named with its hash.
        let folder = try TemporaryDirectory()
        let copy = folder.path + "/env"
        try FileManager.default.copyItem(atPath: "/usr/bin/env", toPath: copy)
        let copied = try #require(trusted(copy))
        #expect(copied.identity.hasPrefix("exe:\(copy);sha256="))
        #expect(copied.identity.count == "exe:\(copy);sha256=".count + 64)
        var app: SecTrustedApplication?
        #expect(SecTrustedApplicationCreateFromPath("/no/such/program", &app) == errSecParam)
        #expect(SecTrustedApplicationCreateFromPath("/usr/bin", &app) == errSecParam)
    }

    @Test func accessOnAddCopyAndSetThroughTheDaemon() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        let env = try #require(trusted("/usr/bin/env"))
        let shell = try #require(trusted("/bin/sh"))
        let me = try #require(trusted(nil))
        try session.run {
            // This test program is on the list too: changing an item's list is using the item,
            // which a program the list does not trust is asked about (docs/access-control.md).
            var access: SecAccess?
            #expect(SecAccessCreate("Mail" as CFString, [env, shell, me] as CFArray, &access) == errSecSuccess)
            let add = [kSecClass: kSecClassGenericPassword, kSecAttrService: "mail", kSecAttrAccount: "alice",
                       kSecValueData: Data("pw".utf8), kSecAttrAccess: try #require(access)] as CFDictionary
            #expect(SecItemAdd(add, nil) == errSecSuccess)
            let mail = try item("mail", "alice")
            #expect(identities(mail) == .some([env.identity, shell.identity, me.identity]))

            #expect(SecKeychainItemSetAccess(mail, SecAccess.anyApplication()) == errSecSuccess)
            #expect(identities(mail) == .some(nil))
            var none: SecAccess?
            #expect(SecAccessCreate("none" as CFString, [] as CFArray, &none) == errSecSuccess)
            #expect(SecKeychainItemSetAccess(mail, try #require(none)) == errSecSuccess)
            #expect(identities(mail) == .some([]))
            // Now it trusts nobody: a change is asked about, and with no dialog to show, denied.
            #expect(SecKeychainItemSetAccess(mail, SecAccess.anyApplication()) == errSecAuthFailed)
            #expect(identities(mail) == .some([]))

            // nil trusted list: the calling program alone, as on macOS.
            var mine: SecAccess?
            #expect(SecAccessCreate("mine" as CFString, nil, &mine) == errSecSuccess)
            #expect(mine?.trustedApplications?.map(\.identity) == [me.identity])

            // Without kSecAttrAccess, in a keychain enforcing access lists: the creator alone.
            let plain = [kSecClass: kSecClassGenericPassword, kSecAttrService: "plain", kSecAttrAccount: "bob",
                         kSecValueData: Data("pw".utf8)] as CFDictionary
            #expect(SecItemAdd(plain, nil) == errSecSuccess)
            #expect(identities(try item("plain", "bob")) == .some([me.identity]))

            // kSecAttrAccess in SecItemUpdate too.
            var shellOnly: SecAccess?
            #expect(SecAccessCreate("sh" as CFString, [shell] as CFArray, &shellOnly) == errSecSuccess)
            let query = [kSecClass: kSecClassGenericPassword, kSecAttrService: "plain"] as CFDictionary
            #expect(SecItemUpdate(query, [kSecAttrAccess: try #require(shellOnly)] as CFDictionary) == errSecSuccess)
            #expect(identities(try item("plain", "bob")) == .some([shell.identity]))
            // Asking is not allowed here: errSecInteractionNotAllowed, nothing changed.
            let quiet = [kSecClass: kSecClassGenericPassword, kSecAttrService: "plain",
                         kSecUseAuthenticationUI: kSecUseAuthenticationUIFail] as CFDictionary
            #expect(SecItemUpdate(quiet, [kSecAttrAccess: SecAccess.anyApplication()] as CFDictionary) == errSecInteractionNotAllowed)
            #expect(identities(try item("plain", "bob")) == .some([shell.identity]))
        }
    }

    @Test func tooManyApplicationsOrOtherObjectsAreParam() throws {
        let env = try #require(trusted("/usr/bin/env"))
        var access: SecAccess?
        let tooMany = Array(repeating: env, count: AccessList.maxApplications + 1)
        #expect(SecAccessCreate("x" as CFString, tooMany as CFArray, &access) == errSecParam)
        #expect(SecAccessCreate("x" as CFString, ["exe:/usr/bin/env"] as CFArray, &access) == errSecParam)
        #expect(access == nil)
    }

    @Test func aReferenceToNoItemIsNotFound() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        session.run {
            var item: SecKeychainItem?
            let bogus = Data(repeating: 7, count: 32)
            #expect(SecKeychainItemCopyFromPersistentReference(bogus as CFData, &item) != errSecSuccess)
            #expect(item == nil)
        }
    }
}
