import Foundation
import Testing

@testable import KeywellSecretService

@Suite struct ObjectPathTests {
    @Test func keychainNamesArePathSafeAndRoundTrip() {
        #expect(ObjectPaths.path(of: .keychain("login")) == "/org/freedesktop/secrets/collection/login")
        #expect(ObjectPaths.segment(for: .keychain("my.keys")) == "my_2ekeys")
        #expect(ObjectPaths.segment(for: .keychain("a_b c-d")) == "a_5fb_20c_2dd")
        #expect(ObjectPaths.segment(for: .keychain("/home/x/k.keychain-db")).allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" })
        for name in ["login", "my.keys", "a_b c-d", "Default keyring", "/home/x/k.keychain-db", "_", "ü"] {
            #expect(ObjectPaths.collection(fromSegment: ObjectPaths.segment(for: .keychain(name))) == .keychain(name))
        }
    }

    @Test func sessionCollectionAndKeychainNamedSessionDoNotCollide() {
        #expect(ObjectPaths.path(of: .session) == "/org/freedesktop/secrets/collection/session")
        #expect(ObjectPaths.segment(for: .keychain("session")) == "_73ession")
        #expect(ObjectPaths.collection(fromSegment: "session") == .session)
        #expect(ObjectPaths.collection(fromSegment: "_73ession") == .keychain("session"))
    }

    @Test func everyObjectHasOnePath() {
        #expect(ObjectPaths.collection(fromSegment: "_6cogin") == nil, "an escaped plain byte is not canonical")
        #expect(ObjectPaths.collection(fromSegment: "a_2") == nil)
        #expect(ObjectPaths.collection(fromSegment: "a_zz") == nil)
        let id = UUID()
        let segment = ObjectPaths.segment(for: id)
        #expect(segment.count == 32 && !segment.contains("-"))
        #expect(ObjectPaths.item(fromSegment: segment) == id)
        #expect(ObjectPaths.item(fromSegment: segment.uppercased()) == nil)
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/session/01") == nil)
    }

    @Test func parsesEveryKindOfPath() {
        let id = UUID()
        let item = ObjectPaths.path(of: id, in: .keychain("login"))
        #expect(ObjectPaths.parse("/org/freedesktop/secrets") == .service)
        #expect(ObjectPaths.parse(item) == .item(.id(.keychain("login")), id))
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/aliases/default") == .collection(.alias("default")))
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/aliases/default/" + ObjectPaths.segment(for: id)) == .item(.alias("default"), id))
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/session/7") == .session(7))
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/prompt/3") == .prompt(3))
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/collection") == .folder("collection"))
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/collection/login/nothex") == nil)
        #expect(ObjectPaths.parse("/org/freedesktop/secretsx") == nil)
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/other/x") == nil)
    }

    @Test func pinentryEscaping() {
        #expect(PinentryConversation.escape("100%\nsure\r") == "100%25%0Asure%0D")
        #expect(PinentryConversation.unescape(Array("a%25b%0Ac%zz".utf8)) == Array("a%b\nc%zz".utf8))
    }

    @Test func keychainNamesFromLabels() throws {
        #expect(KeychainNaming.sanitized("Default keyring") == "Default keyring")
        #expect(KeychainNaming.sanitized(".hidden/ü") == "_hidden__")
        #expect(KeychainNaming.sanitized("   ") == "keychain")
    }
}
