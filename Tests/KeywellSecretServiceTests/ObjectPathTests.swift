import Foundation
import Testing

@testable import KeywellCore
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

    /// GetSecrets' reader of item paths (`withItemPathParts`) finds an item exactly where
    /// `item(fromSegment:)` of the last segment does, and splits off the part before it.
    @Test func itemPathPartsAgreeWithTheSegmentParser() throws {
        let id = try #require(UUID(uuidString: "0192F3A4-B5C6-7D8E-9FA0-B1C2D3E4F506"))
        let hex = ObjectPaths.segment(for: id)
        let login = "/org/freedesktop/secrets/collection/login"
        func parts(_ path: String) -> (String, UUID)? {
            ObjectPaths.withItemPathParts(path) { prefix, id in (String(decoding: prefix, as: UTF8.self), id) }
        }
        #expect(parts(login + "/" + hex).map { $0.0 == login && $0.1 == id } == true)
        #expect(parts("/" + hex).map { $0.0 == "" && $0.1 == id } == true)
        let substring = ("x" + login + "/" + hex).dropFirst()
        #expect(parts(String(substring)).map { $0.0 == login && $0.1 == id } == true)
        let head = String(hex.dropLast()), tail = String(hex.dropFirst())
        var cases: [String] = [login + "/" + hex.uppercased(), login + "/" + head, login + "/" + hex + "0", login + hex]
        cases += [login + "/" + hex + "/", hex, "", "/", login, login + "/g" + tail, login + "/" + head + "/"]
        cases += [login + "/" + head + "G", login + "/-" + tail, login + "//" + hex]
        // Every byte that is not a lowercase hex digit, at each end of the segment.
        for byte in UInt8(1)...UInt8(127) where !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) && !(UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte) {
            let other = String(UnicodeScalar(byte))
            cases.append(login + "/" + other + tail)
            cases.append(login + "/" + head + other)
        }
        for path in cases {
            let slash = path.lastIndex(of: "/")
            let expected = slash.flatMap { ObjectPaths.item(fromSegment: String(path[path.index(after: $0)...])) }
            let found = parts(path)
            #expect(found?.1 == expected, "\(path)")
            if let found, let slash { #expect(found.0 == String(path[..<slash]), "\(path)") }
        }
    }

    /// Session and prompt numbers are read as `String(number)` writes them, and nothing else.
    @Test func sessionAndPromptNumbersHaveOneSpelling() {
        for number: UInt64 in [0, 1, 9, 10, 42, 1_000_000, UInt64.max] {
            #expect(ObjectPaths.parse(ObjectPaths.sessionPath(number)) == .session(number))
            #expect(ObjectPaths.parse(ObjectPaths.promptPath(number)) == .prompt(number))
        }
        for segment in ["", "00", "01", "+1", "-1", " 1", "1 ", "1a", "0x1", "\u{661}", "18446744073709551616", "99999999999999999999"] {
            #expect(ObjectPaths.parse("/org/freedesktop/secrets/session/\(segment)") == nil, "session/\(segment)")
            #expect(ObjectPaths.parse("/org/freedesktop/secrets/prompt/\(segment)") == nil, "prompt/\(segment)")
        }
    }

    /// Item segments and Secret Service access groups are the UUID's hex, lowercase, no dashes:
    /// both are stored or handed out, so the format is fixed.
    @Test func itemSegmentsAndAccessGroupsSpellTheUUID() throws {
        let id = try #require(UUID(uuidString: "0192F3A4-B5C6-7D8E-9FA0-B1C2D3E4F506"))
        #expect(ObjectPaths.segment(for: id) == "0192f3a4b5c67d8e9fa0b1c2d3e4f506")
        #expect(ObjectPaths.path(of: id, in: .keychain("login"))
            == "/org/freedesktop/secrets/collection/login/0192f3a4b5c67d8e9fa0b1c2d3e4f506")
        #expect(FreeformItem.accessGroup(for: id) == "org.freedesktop.secrets/0192f3a4b5c67d8e9fa0b1c2d3e4f506")
        for _ in 0..<100 {
            let random = UUID()
            #expect(random.compactHex == random.uuidString.lowercased().filter { $0 != "-" })
        }
    }

    @Test func serviceObjectsAreTheServiceAndWhatIsUnderIt() {
        #expect(SecretServiceNames.isServiceObject("/org/freedesktop/secrets"))
        #expect(SecretServiceNames.isServiceObject("/org/freedesktop/secrets/collection/login"))
        #expect(!SecretServiceNames.isServiceObject("/org/freedesktop/secretsx"))
        #expect(!SecretServiceNames.isServiceObject("/org/freedesktop"))
        #expect(!SecretServiceNames.isServiceObject("/org/keywell/Keychain"))
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

    @Test func refusesPathsThatNameNothing() {
        let item = ObjectPaths.segment(for: UUID())
        for path in [
            "", "/", "/org/freedesktop/secrets/", "/org/freedesktop/secretsx/collection/login", "/org/freedesktop/secret",
            "/org/freedesktop/secrets/collection/", "/org/freedesktop/secrets/collection//" + item,
            "/org/freedesktop/secrets/collection/login/", "/org/freedesktop/secrets/collection/login/\(item)/x",
            "/org/freedesktop/secrets/aliases/", "/org/freedesktop/secrets/session/", "/org/freedesktop/secrets/session/1/x",
            "/org/freedesktop/secrets/session/+1", "/org/freedesktop/secrets/session/-1", "/org/freedesktop/secrets/prompt/x",
            "/org/freedesktop/secrets/session/18446744073709551616", "/org/freedesktop/secrets/folder",
        ] {
            #expect(ObjectPaths.parse(path) == nil, "\(path)")
        }
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/session") == .folder("session"))
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/session/0") == .session(0))
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/session/18446744073709551615") == .session(.max))
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/collection/_73ession") == .collection(.id(.keychain("session"))))
        #expect(ObjectPaths.parse("/org/freedesktop/secrets/collection/session") == .collection(.id(.session)))
    }

    @Test func itemPathsOfACollectionAreItsPathAndTheirSegments() {
        let ids = [UUID(), UUID(), UUID()]
        for collection in [CollectionID.keychain("login"), .keychain("my.keys"), .keychain("session"), .session] {
            let paths = ObjectPaths.paths(of: ids, in: collection)
            #expect(paths == ids.map { ObjectPaths.path(of: collection) + "/" + ObjectPaths.segment(for: $0) })
            #expect(paths.map(ObjectPaths.parse) == ids.map { .item(.id(collection), $0) })
        }
        #expect(ObjectPaths.paths(of: [], in: .session).isEmpty)
        #expect(ObjectPaths.segment(for: .keychain("Login2")) == "Login2")
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
