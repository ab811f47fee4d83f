import Foundation
import KeywellCore
import XCTest

@testable import KeyringImport

/// gnome-keyring's plaintext key file, and libsecret's file format through a file the real
/// libsecret wrote (Tests/Fixtures/libsecret-v1.keyring: its file backend, password
/// "fixture pass", two items stored with secret_password_store_sync).
final class PlaintextAndLibsecretTests: XCTestCase {
    private func text(_ secret: SecretBytes) -> String {
        secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    func testPlaintextKeyFileWithEscapesBinarySecretAndUint32() throws {
        let file = """
            [keyring]
            display-name=Open\\skeyring
            ctime=1700000000
            mtime=1700000500
            lock-on-idle=false
            lock-after=false

            [3]
            item-type=0
            display-name=Note\\none
            secret=pa ss\\tword
            mtime=1700000300
            ctime=1700000200

            [3:attribute0]
            name=port
            type=uint32
            value=8080

            [3:attribute1]
            name=xdg:schema
            type=string
            value=org.example.Note

            [7]
            item-type=1
            display-name=binary
            binary-secret=00ff10
            mtime=5
            ctime=4
            """
        let contents = try GnomeKeyringText.read(Array(file.utf8), keyring: "open")
        XCTAssertEqual(contents.format, .gnomeKeyringPlaintext)
        XCTAssertEqual(contents.label, "Open keyring")
        XCTAssertEqual(contents.items.count, 2)
        let note = try XCTUnwrap(contents.items.first { $0.identity == "id:3" })
        XCTAssertEqual(note.label, "Note\none")
        XCTAssertEqual(text(note.secret), "pa ss\tword")
        XCTAssertEqual(note.attributes, ["port": "8080", "xdg:schema": "org.example.Note"])
        XCTAssertNil(note.schema)
        XCTAssertEqual(note.created, 1_700_000_200)
        XCTAssertEqual(note.modified, 1_700_000_300)
        let binary = try XCTUnwrap(contents.items.first { $0.identity == "id:7" })
        XCTAssertEqual(binary.secret.withUnsafeBytes { Array($0) }, [0x00, 0xff, 0x10])
        // The numeric type becomes the item's type, not an attribute.
        XCTAssertEqual(binary.attributes, [:])
        XCTAssertEqual(binary.schema, "org.gnome.keyring.NetworkPassword")
    }

    func testDamagedKeyFilesAreClearErrors() {
        for bad in ["[keyring\nx=1", "[keyring]\nno equals sign", "[3]\nsecret=x", "[keyring]\n[1]\nbinary-secret=zz\n"] {
            XCTAssertThrowsError(try GnomeKeyringText.read(Array(bad.utf8), keyring: "k"), bad)
        }
        XCTAssertThrowsError(try GnomeKeyringText.read([0x5b, 0xff, 0xfe], keyring: "k"))
    }

    private func fixture() throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/libsecret-v1.keyring")
        return Array(try Data(contentsOf: url))
    }

    func testFileWrittenByLibsecretReads() throws {
        let contents = try LibsecretFile.read(fixture(), keyring: "login", password: SecretBytes(copying: Array("fixture pass".utf8)))
        XCTAssertEqual(contents.format, .libsecretFile)
        let byService = Dictionary(uniqueKeysWithValues: contents.items.map { ($0.attributes["service"] ?? "", $0) })
        XCTAssertEqual(byService.count, 2)
        let mail = try XCTUnwrap(byService["mail"])
        XCTAssertEqual(mail.label, "Mail for alice")
        // This libsecret (0.20) stores no xdg:schema in its file backend.
        XCTAssertEqual(mail.attributes, ["service": "mail", "account": "alice"])
        XCTAssertEqual(text(mail.secret), "s3cret-alice")
        XCTAssertEqual(text(try XCTUnwrap(byService["web"]).secret), "pässword bob")
        XCTAssertGreaterThan(mail.created, 1_700_000_000)
        XCTAssertTrue(mail.identity.hasPrefix("attributes:"))
    }

    func testLibsecretWrongPasswordSaysSo() throws {
        XCTAssertThrowsError(try LibsecretFile.read(fixture(), keyring: "login", password: SecretBytes(copying: Array("nope".utf8)))) {
            XCTAssertEqual($0 as? KeyringReadError, .wrongPassword(keyring: "login"))
        }
    }

    func testLibsecretTruncationsAndFlipsAreClearErrors() throws {
        let file = try fixture()
        let password = SecretBytes(copying: Array("fixture pass".utf8))
        // Every truncation is an error (the key derivation is slow: a stride of prefixes, then the tail byte by byte).
        for length in Array(stride(from: 0, to: file.count - 64, by: 23)) + Array(file.count - 64..<file.count) {
            XCTAssertThrowsError(try LibsecretFile.read(Array(file[0..<length]), keyring: "k", password: password), "\(length)")
        }
        for index in stride(from: 18, to: file.count, by: 37) {
            var damaged = file
            damaged[index] ^= 0xa5
            _ = try? LibsecretFile.read(damaged, keyring: "k", password: password)
        }
    }
}
