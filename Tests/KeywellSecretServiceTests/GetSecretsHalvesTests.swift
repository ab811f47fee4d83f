import Foundation
import KeywellDBus
import Testing

@testable import KeywellSystem

/// GetSecrets of many items opens and seals its secrets on two threads (`TwoHalves`,
/// docs/performance.md, "GetSecrets of many items"); a batch below `TwoHalves.minimumItems`
/// runs on one. Whatever the split, the reply is the one item-by-item calls give, in the order
/// asked: an item gone, one named twice, one of a locked keychain, two collections mixed.
@Suite struct GetSecretsHalvesTests {
    static let login = "/org/freedesktop/secrets/collection/login"
    static let work = "/org/freedesktop/secrets/collection/work_2ekeys"
    static let shut = "/org/freedesktop/secrets/collection/shut_2ekeys"

    /// The reply's entries: (path, secret struct).
    private func entries(_ fixture: SecretServiceFixture, _ paths: [String], _ session: ClientSession) throws -> [(String, DBusValue)] {
        let reply = try fixture.service("GetSecrets", [.objectPathArray(paths), .objectPath(session.path)])
        return (reply.first?.dictionaryEntries ?? []).map { ($0.key.objectPathValue ?? "", $0.value) }
    }

    /// What calls of one path each (far below the split) answer, in the reply's order: by
    /// collection (each read once, in the order the paths first name them), then as asked.
    private func oneByOne(_ fixture: SecretServiceFixture, _ paths: [String], _ session: ClientSession) throws -> [(String, DBusValue)] {
        var collections: [Substring] = []
        for path in paths {
            let collection = path[..<(path.lastIndex(of: "/") ?? path.endIndex)]
            if !collections.contains(collection) { collections.append(collection) }
        }
        let ordered = collections.flatMap { collection in paths.filter { $0[..<($0.lastIndex(of: "/") ?? $0.endIndex)] == collection } }
        return try ordered.flatMap { try entries(fixture, [$0], session) }
    }

    @Test func aSplitBatchAnswersAsOneItemAtATime() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        try fixture.native("CreateKeychain", [.string("work.keys"), .bytes(Array("pw".utf8))])
        try fixture.native("CreateKeychain", [.string("shut.keys"), .bytes(Array("pw".utf8))])
        let plain = try fixture.openSession()
        let dh = try fixture.openSession(dh: true)
        let minimum = TwoHalves.minimumItems
        let mine = try (0..<(2 * minimum + 10)).map { try fixture.createItem(["n": "\($0)"], secret: "s\($0)", session: plain) }
        let theirs = try (0..<(minimum + 3)).map {
            try fixture.createItem(["w": "\($0)"], secret: "w\($0)", in: Self.work, session: plain)
        }
        let shut = try (0..<3).map { try fixture.createItem(["x": "\($0)"], secret: "x\($0)", in: Self.shut, session: plain) }
        try fixture.native("Lock", [.string("shut.keys")])
        let gone = mine[7]
        try fixture.call(gone, "Item", "Delete")
        let unknown = Self.login + "/" + String(repeating: "0", count: 32)

        var mixed: [String] = []
        for index in mine.indices {
            mixed.append(mine[index])
            if index < theirs.count, index % 2 == 0 { mixed.append(theirs[index]) }
            if index == 20 { mixed += [mine[3], shut[0], unknown, "/org/freedesktop/secrets/x"] }
        }
        mixed += theirs.suffix(theirs.count / 2) + [mine[0], shut[1]]
        let batches = [
            Array(mine.prefix(minimum - 1)), Array(mine.prefix(minimum)), Array(mine.prefix(minimum + 1)),
            Array(mine.dropFirst(8).prefix(minimum - 1)), Array(mine.dropFirst(8).prefix(minimum)),
            Array(mine.reversed()), mixed, theirs,
        ]
        for batch in batches {
            let expected = try oneByOne(fixture, batch, plain)
            let found = try entries(fixture, batch, plain)
            #expect(found.map(\.0) == expected.map(\.0), "the paths of \(batch.count)")
            #expect(found.map(\.1) == expected.map(\.1), "the secrets of \(batch.count)")
            // The same in a DH session, opened; every IV its own.
            let sealed = try entries(fixture, batch, dh)
            #expect(sealed.map(\.0) == expected.map(\.0))
            #expect(try sealed.map { try dh.decode($0.1) } == expected.map { try plain.decode($0.1) })
            let ivs = sealed.compactMap { $0.1.structureFields?[1].bytesValue }
            #expect(ivs.count == sealed.count && Set(ivs).count == ivs.count)
        }
        let answered = try entries(fixture, mixed, plain).map(\.0)
        #expect(!answered.contains(gone) && !answered.contains(unknown) && !answered.contains(shut[0]))
        #expect(answered.filter { $0 == mine[3] }.count == 2, "a path named twice is answered twice")
        #expect(answered.count == mixed.count - 5)
    }
}
