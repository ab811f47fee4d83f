import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

/// The export file format alone (docs/export-import.md, "File format"): real libsodium, the
/// cheapest Argon2id cost so that every cut and every flipped bit can be tried.
@Suite struct ExportFileTests {
    static let records: [[UInt8]] = [ExportRecord.keychain("login"), Array("a record".utf8), [], Array(repeating: 7, count: 300)]

    /// A file of `records`, the last one final; and the offset where each chunk ends.
    static func file(passphrase: String = "correct horse") throws -> (bytes: [UInt8], boundaries: [Int]) {
        var writer = try ExportFile.Writer(passphrase: secret(passphrase), kdf: .fastForTests)
        var bytes = writer.header
        var boundaries = [bytes.count]
        for (index, record) in records.enumerated() {
            bytes += writer.seal(record, final: index == records.count - 1)
            boundaries.append(bytes.count)
        }
        return (bytes, boundaries)
    }

    @Test func roundTrip() throws {
        let (bytes, _) = try Self.file()
        let opened = try ExportFile.open(bytes, passphrase: secret("correct horse"))
        #expect(opened.map { Array($0) } == Self.records)
        #expect(Array(bytes[0..<8]) == Array("KWEXPORT".utf8))
    }

    @Test func wrongPassphraseOpensNothing() throws {
        let (bytes, _) = try Self.file()
        expectStatus(SecStatus.authFailed) { _ = try ExportFile.open(bytes, passphrase: secret("correct horse ")) }
        expectStatus(SecStatus.authFailed) { _ = try ExportFile.open(bytes, passphrase: secret("")) }
    }

    @Test func everyCutIsRefused() throws {
        let (bytes, boundaries) = try Self.file()
        // At each chunk boundary (a whole number of records, the final one missing) and at every byte.
        for length in boundaries.dropLast() {
            expectStatus(SecStatus.decode, "cut at boundary \(length)") { _ = try ExportFile.open(Array(bytes[0..<length]), passphrase: secret("correct horse")) }
        }
        for length in 0..<bytes.count {
            #expect(throws: KeychainError.self, "cut at \(length)") { _ = try ExportFile.open(Array(bytes[0..<length]), passphrase: secret("correct horse")) }
        }
    }

    @Test func everyFlippedBitIsRefused() throws {
        let (bytes, _) = try Self.file()
        for index in bytes.indices {
            for bit in 0..<8 {
                var altered = bytes
                altered[index] ^= 1 << bit
                #expect(throws: KeychainError.self, "bit \(bit) of byte \(index)") {
                    _ = try ExportFile.open(altered, passphrase: secret("correct horse"))
                }
            }
        }
    }

    @Test func headerTamperingIsRefused() throws {
        let (bytes, _) = try Self.file()
        var version = bytes
        version[9] = 2
        let error = expectStatus(SecStatus.decode) { _ = try ExportFile.open(version, passphrase: secret("correct horse")) }
        #expect(error?.detail?.contains("version 2") == true)
        // A cost out of range is refused before any key derivation (a crafted file cannot ask for all RAM).
        var memory = bytes
        memory[17] = 0xFF
        expectStatus(SecStatus.decode) { _ = try ExportFile.open(memory, passphrase: secret("correct horse")) }
        // A weaker cost in range derives another key: the first record fails.
        let header = try ExportFile.parseHeader(bytes)
        let weaker = ExportFile.header(kdf: KDFParameters(opsLimit: header.kdf.opsLimit + 1, memLimit: header.kdf.memLimit),
                                       salt: header.salt, streamHeader: header.streamHeader)
        expectStatus(SecStatus.authFailed) { _ = try ExportFile.open(weaker + bytes[ExportFile.headerLength...], passphrase: secret("correct horse")) }
        var magic = bytes
        magic[0] = UInt8(ascii: "X")
        let notOurs = expectStatus(SecStatus.decode) { _ = try ExportFile.open(magic, passphrase: secret("correct horse")) }
        #expect(notOurs?.detail == "not a Keywell export file")
    }

    @Test func reorderedRepeatedOrExtraRecordsAreRefused() throws {
        let (bytes, boundaries) = try Self.file()
        let passphrase = secret("correct horse")
        let chunks = zip(boundaries, boundaries.dropFirst()).map { Array(bytes[$0..<$1]) }
        let header = Array(bytes[0..<boundaries[0]])
        expectStatus(SecStatus.decode) { _ = try ExportFile.open(header + chunks[0] + chunks[2] + chunks[1] + chunks[3], passphrase: passphrase) }
        expectStatus(SecStatus.decode) { _ = try ExportFile.open(header + chunks[0] + chunks[1] + chunks[1] + chunks[2] + chunks[3], passphrase: passphrase) }
        expectStatus(SecStatus.decode) { _ = try ExportFile.open(bytes + chunks[3], passphrase: passphrase) }
        expectStatus(SecStatus.decode) { _ = try ExportFile.open(bytes + [0], passphrase: passphrase) }
    }

    @Test func aRecordOverTheCapIsRefusedBeforeDecryption() throws {
        let (bytes, boundaries) = try Self.file()
        var huge = Array(bytes[0..<boundaries[0]])
        let length = UInt32(ExportLimits.bytesPerRecord + ExportFile.sealOverhead + 1)
        huge += [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
        huge += [UInt8](repeating: 0, count: 64)
        let error = expectStatus(SecStatus.decode) { _ = try ExportFile.open(huge, passphrase: secret("correct horse")) }
        #expect(error?.detail?.contains("impossible") == true)
    }

    @Test func malformedRecordsAreRefused() throws {
        // An item before any keychain, an attribute of the other class, a field running past the end.
        let item = ExportRecord.item(ExportedItem(keychain: "k", itemClass: .genericPassword, uuid: UUID(),
                                                  attributes: [.service: .text("s")], freeform: ["a": "b"], secret: Data([1, 2])))
        expectStatus(SecStatus.decode) { _ = try ExportRecord.decode(Data(item), keychain: nil) }
        guard case .item(let decoded) = try ExportRecord.decode(Data(item), keychain: "k") else { throw TestFailure("not an item") }
        #expect(decoded.attributes == [.service: .text("s")] && decoded.freeform == ["a": "b"] && decoded.secret == Data([1, 2]))
        for length in 0..<item.count {
            expectStatus(SecStatus.decode) { _ = try ExportRecord.decode(Data(item[0..<length]), keychain: "k") }
        }
        let inet = ExportRecord.item(ExportedItem(keychain: "k", itemClass: .internetPassword, uuid: UUID(),
                                                  attributes: [.service: .text("s")], freeform: [:], secret: Data()))
        expectStatus(SecStatus.decode) { _ = try ExportRecord.decode(Data(inet), keychain: "k") }
        let badCode = ExportRecord.item(ExportedItem(keychain: "k", itemClass: .internetPassword, uuid: UUID(),
                                                     attributes: [.protocol: .text("https")], freeform: [:], secret: Data()))
        let error = expectStatus(SecStatus.decode) { _ = try ExportRecord.decode(Data(badCode), keychain: "k") }
        #expect(error?.detail?.contains("four bytes") == true)
    }
}
