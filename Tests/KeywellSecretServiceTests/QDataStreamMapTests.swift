import Foundation
import KeywellProtocol
import KeywellSystem
import Testing

@testable import KeywellSecretService

/// KWallet's map entries: Qt's QDataStream `QMap<QString, QString>`, byte for byte
/// (docs/kwallet.md, "Maps").
@Suite struct QDataStreamMapTests {
    /// `{"a": "b"}` as Qt writes it: count 1, "a" (2 bytes of UTF-16BE), "b".
    static let oneGoodPair: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 2, 0, 0x61, 0, 0, 0, 2, 0, 0x62]

    @Test func readsWhatQtWrites() throws {
        #expect(try QDataStreamMap.decode(Self.oneGoodPair) == ["a": "b"])
        #expect(try QDataStreamMap.decode([0, 0, 0, 0]) == [:])
    }

    @Test func qt5WritesFromTheGreatestKeyQt6FromTheLeast() {
        let map = ["a": "1", "b": "2"]
        let qt5 = QDataStreamMap.encode(map, order: .qt5Descending)
        let qt6 = QDataStreamMap.encode(map, order: .qt6Ascending)
        #expect(Array(qt5[4..<8]) == [0, 0, 0, 2] && qt5[9] == 0x62)
        #expect(qt6[9] == 0x61)
        #expect(qt5.count == 4 + 2 * (4 + 2 + 4 + 2))
    }

    /// Keys order as QString orders them: by UTF-16 code unit, so U+FF5E comes before an
    /// astral character (whose surrogates are 0xD8xx) only by code unit, not by scalar.
    @Test func keysOrderByUTF16CodeUnits() throws {
        let map = ["\u{FF5E}": "x", "\u{1F600}": "y"]
        let bytes = QDataStreamMap.encode(map, order: .qt6Ascending)
        #expect(bytes[8] == 0xD8, "the astral key (0xD83D…) comes first")
        #expect(try QDataStreamMap.decode(bytes) == map)
    }

    @Test func roundTripsTextOfEveryKind() throws {
        let map = ["": "", "user name": "bob", "ünï": "çødé\n\u{0}", "emoji": "\u{1F511}"]
        for order in [QDataStreamMap.Order.qt5Descending, .qt6Ascending] {
            #expect(try QDataStreamMap.decode(QDataStreamMap.encode(map, order: order)) == map)
        }
    }

    @Test func nullStringsReadAsEmpty() throws {
        #expect(try QDataStreamMap.decode([0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) == ["": ""])
    }

    @Test func aRepeatedKeyKeepsItsLastValueAsQtReads() throws {
        let twice: [UInt8] = [0, 0, 0, 2, 0, 0, 0, 2, 0, 0x61, 0, 0, 0, 2, 0, 0x31, 0, 0, 0, 2, 0, 0x61, 0, 0, 0, 2, 0, 0x32]
        #expect(try QDataStreamMap.decode(twice) == ["a": "2"])
    }

    @Test func malformedMapsAreRefusedWithTheReason() {
        #expect(throws: QDataStreamMap.Failure.truncated) { try QDataStreamMap.decode([0, 0]) }
        #expect(throws: QDataStreamMap.Failure.truncated) { try QDataStreamMap.decode([0, 0, 0, 1, 0, 0, 0, 2, 0]) }
        #expect(throws: QDataStreamMap.Failure.truncated) { try QDataStreamMap.decode([0, 0, 0, 1, 0x7F, 0, 0, 0]) }
        #expect(throws: QDataStreamMap.Failure.oddStringLength(3)) { try QDataStreamMap.decode([0, 0, 0, 1, 0, 0, 0, 3, 0, 0x61, 0]) }
        #expect(throws: QDataStreamMap.Failure.trailingBytes(1)) { try QDataStreamMap.decode(Self.oneGoodPair + [0]) }
        let lone: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 2, 0xD8, 0x00, 0, 0, 0, 0]
        #expect(throws: QDataStreamMap.Failure.invalidUTF16) { try QDataStreamMap.decode(lone) }
    }

    @Test func capsHoldBeforeAnyWork() {
        let many = UInt32(KWalletLimits.mapEntries + 1)
        let header: [UInt8] = [UInt8(many >> 24), UInt8(many >> 16 & 0xFF), UInt8(many >> 8 & 0xFF), UInt8(many & 0xFF)]
        #expect(throws: QDataStreamMap.Failure.tooManyPairs(many)) { try QDataStreamMap.decode(header) }
        let huge = [UInt8](repeating: 0, count: KWalletLimits.entryBytes + 1)
        #expect(throws: QDataStreamMap.Failure.tooLarge(huge.count)) { try QDataStreamMap.decode(huge) }
    }

    @Test func aPasswordIsOneQString() throws {
        #expect(QDataStreamMap.encodeString("ab") == [0, 0, 0, 4, 0, 0x61, 0, 0x62])
        #expect(try QDataStreamMap.decodeString([0, 0, 0, 4, 0, 0x61, 0, 0x62]) == "ab")
    }

    /// A password kept in locked memory makes the very QString its `String` made, and back
    /// (docs/kwallet.md, "Passwords in memory"): non-ASCII, astral (a surrogate pair), empty.
    @Test(arguments: ["ab", "pässwörd ✓", "日本語 🔑🔑", "", "\u{1}\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff}"])
    func aSecretPasswordIsTheSameQString(_ text: String) throws {
        let secret = SecretBytes(copying: Array(text.utf8))
        let encoded = QDataStreamMap.encodeString(secret: secret)
        #expect(encoded == QDataStreamMap.encodeString(text))
        #expect(try QDataStreamMap.decodeSecretString(encoded) == secret)
        let entry = try KWalletEntry.fromRaw(encoded, kind: .password)
        #expect(entry == .password(secret))
        #expect(entry.secret == Data(text.utf8), "stored as the password's UTF-8, as before")
        #expect(entry.rawValue(order: .qt5Descending) == encoded)
    }

    @Test func aSecretQStringIsRefusedAsAStringIs() throws {
        let loneSurrogate: [UInt8] = [0, 0, 0, 2, 0xd8, 0x00]
        #expect(throws: QDataStreamMap.Failure.invalidUTF16) { try QDataStreamMap.decodeSecretString(loneSurrogate) }
        #expect(throws: QDataStreamMap.Failure.oddStringLength(3)) { try QDataStreamMap.decodeSecretString([0, 0, 0, 3, 0, 0x61, 0]) }
        #expect(throws: QDataStreamMap.Failure.trailingBytes(1)) { try QDataStreamMap.decodeSecretString([0, 0, 0, 2, 0, 0x61, 0]) }
        #expect(try QDataStreamMap.decodeSecretString([0xff, 0xff, 0xff, 0xff]).count == 0, "a null QString is empty")
    }

    /// A stored secret that is not UTF-8 (written through another face) reads as a password as
    /// `String(decoding:as:)` read it: each ill-formed sequence a U+FFFD.
    @Test(arguments: [[0x61, 0xff, 0x62], [0xc3], [0xe2, 0x9c], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x94, 0x61], [0xc0, 0xaf], [0x61, 0x62]])
    func anIllFormedSecretReadsAsBefore(_ bytes: [UInt8]) throws {
        let entry = try #require(KWalletEntry(kind: .password, typeAttribute: "plaintext", secret: Data(bytes)))
        let expected = String(decoding: bytes, as: UTF8.self)
        #expect(entry == .password(SecretBytes(copying: Array(expected.utf8))))
    }
}

/// Map secrets as compact JSON, as KWallet 6's bridge keeps them.
@Suite struct KWalletJSONMapTests {
    @Test func writesCompactSortedJSONWithQtsEscapes() {
        let json = String(decoding: KWalletJSONMap.encode(["b": "2", "a": "q\"\\/\n\u{1}é"]), as: UTF8.self)
        #expect(json == #"{"a":"q\"\\/\n\u0001é","b":"2"}"#)
    }

    @Test func readsWhatItWritesAndRefusesWhatIsNotAnObject() {
        let map = ["user": "bob", "x": "\u{1F511}\t"]
        #expect(KWalletJSONMap.decode(KWalletJSONMap.encode(map)) == map)
        #expect(KWalletJSONMap.decode(Data("[1]".utf8)) == nil)
        #expect(KWalletJSONMap.decode(Data("not json".utf8)) == nil)
        #expect(KWalletJSONMap.decode(Data(#"{"a":"b","n":1}"#.utf8)) == ["a": "b"])
    }
}
