import Foundation
import KeywellCore
import XCTest

@testable import KeyringImport

/// Files the real gnome-keyring-daemon (42) wrote: Tests/Fixtures/gnome-keyring-login.keyring
/// (password "fixture pass", two items stored with secret-tool) and gnome-keyring-open.keyring
/// (a collection made with an empty password: the plaintext format, one item).
final class RealDaemonFileTests: XCTestCase {
    private let password = SecretBytes(copying: Array("fixture pass".utf8))

    private func fixture(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/\(name)")
        return Array(try Data(contentsOf: url))
    }

    private func text(_ secret: SecretBytes) -> String {
        secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    func testBinaryFileFromTheRealDaemon() throws {
        let contents = try KeyringFolder.open(fixture("gnome-keyring-login.keyring"), keyring: "login", password: password)
        XCTAssertEqual(contents.format, .gnomeKeyring)
        XCTAssertEqual(contents.items.count, 2)
        let app = try XCTUnwrap(contents.items.first { $0.label == "My app" })
        XCTAssertEqual(app.attributes, ["service": "myapp", "account": "alice"])
        XCTAssertEqual(app.schema, "org.freedesktop.Secret.Generic")
        XCTAssertEqual(text(app.secret), "app-secret")
        XCTAssertGreaterThan(app.created, 1_700_000_000)
        let unicode = try XCTUnwrap(contents.items.first { $0.label == "Ünïcode" })
        XCTAssertEqual(unicode.attributes["account"], "ünï")
        XCTAssertEqual(text(unicode.secret), "sëcret\nwith newline")
    }

    func testBinaryFileWrongPasswordAndEveryTruncation() throws {
        let file = try fixture("gnome-keyring-login.keyring")
        XCTAssertThrowsError(try KeyringFolder.open(file, keyring: "login", password: SecretBytes(copying: Array("x".utf8)))) {
            XCTAssertEqual($0 as? KeyringReadError, .wrongPassword(keyring: "login"))
        }
        for length in 0..<file.count {
            XCTAssertThrowsError(try GnomeKeyringBinary.read(Array(file[0..<length]), keyring: "login", password: password),
                                 "prefix of \(length) bytes")
        }
    }

    func testPlaintextFileFromTheRealDaemon() throws {
        let contents = try KeyringFolder.open(fixture("gnome-keyring-open.keyring"), keyring: "open", password: nil)
        XCTAssertEqual(contents.format, .gnomeKeyringPlaintext)
        XCTAssertEqual(contents.label, "open")
        let item = try XCTUnwrap(contents.items.first)
        XCTAssertEqual(item.label, "Open note")
        XCTAssertEqual(item.attributes, ["service": "note", "account": "erin"])
        XCTAssertEqual(text(item.secret), "note secret")
        XCTAssertEqual(item.identity, "id:1")
    }

    /// The writer's output read back by the reader equals what went in (the real daemon opening
    /// it is Tests/Integration/test_migrate_gnome_keyring.py's way-back check).
    func testRewritingTheRealFileKeepsEveryItem() throws {
        let original = try KeyringFolder.open(fixture("gnome-keyring-login.keyring"), keyring: "login", password: password)
        let rewritten = GnomeKeyringWriter.write(
            label: original.label, created: original.created, modified: original.modified,
            items: original.items.enumerated().map { index, item in
                GnomeKeyringWriter.Item(id: UInt32(index + 1), label: item.label, attributes: item.attributes, schema: item.schema,
                                        secret: item.secret, created: item.created, modified: item.modified)
            }, password: password)
        let again = try GnomeKeyringBinary.read(rewritten, keyring: "login", password: password)
        XCTAssertEqual(again.items.map(\.label), original.items.map(\.label))
        XCTAssertEqual(again.items.map(\.attributes), original.items.map(\.attributes))
        XCTAssertEqual(again.items.map(\.schema), original.items.map(\.schema))
        XCTAssertEqual(again.items.map { text($0.secret) }, original.items.map { text($0.secret) })
        XCTAssertEqual(again.items.map(\.modified), original.items.map(\.modified))
    }
}
