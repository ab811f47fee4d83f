import KeywellCore
import XCTest

@testable import KeyringImport

/// The binary reader against files the writer makes (the real gnome-keyring-daemon reads and
/// writes them in Tests/Integration/test_migrate_gnome_keyring.py), and against damaged ones.
final class GnomeKeyringBinaryTests: XCTestCase {
    private let password = SecretBytes(copying: Array("correct horse".utf8))

    private func sample(items count: Int = 2) -> [UInt8] {
        let items = (0..<count).map { index in
            GnomeKeyringWriter.Item(
                id: UInt32(index + 1), label: "Item \(index)",
                attributes: ["xdg:schema": "org.example.Test", "service": "svc\(index)", "account": "ä\(index)"],
                schema: nil, secret: SecretBytes(copying: Array("secret-\(index)".utf8)),
                created: 1_700_000_000 + Int64(index), modified: 1_700_000_100 + Int64(index))
        }
        return GnomeKeyringWriter.write(label: "Login", created: 1_600_000_000, modified: 1_600_000_500, items: items,
                                        password: password)
    }

    private func text(_ secret: SecretBytes) -> String {
        secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    func testWrittenFileReadsBackWithEveryField() throws {
        let contents = try GnomeKeyringBinary.read(sample(), keyring: "login", password: password)
        XCTAssertEqual(contents.format, .gnomeKeyring)
        XCTAssertEqual(contents.label, "Login")
        XCTAssertEqual(contents.items.count, 2)
        let second = contents.items[1]
        XCTAssertEqual(second.identity, "id:2")
        XCTAssertEqual(second.label, "Item 1")
        XCTAssertEqual(second.attributes, ["xdg:schema": "org.example.Test", "service": "svc1", "account": "ä1"])
        XCTAssertEqual(text(second.secret), "secret-1")
        XCTAssertEqual(second.created, 1_700_000_001)
        XCTAssertEqual(second.modified, 1_700_000_101)
        XCTAssertEqual(second.contentType, "text/plain")
    }

    func testWrongPasswordSaysSo() {
        XCTAssertThrowsError(try GnomeKeyringBinary.read(sample(), keyring: "login", password: SecretBytes(copying: Array("nope".utf8)))) {
            XCTAssertEqual($0 as? KeyringReadError, .wrongPassword(keyring: "login"))
            XCTAssertEqual(String(describing: $0), "wrong password for keyring login")
        }
    }

    func testEveryTruncationIsAClearError() {
        let file = sample()
        for length in 0..<file.count {
            XCTAssertThrowsError(try GnomeKeyringBinary.read(Array(file[0..<length]), keyring: "k", password: password),
                                 "prefix of \(length) bytes") { error in
                guard let error = error as? KeyringReadError else { return XCTFail("\(error)") }
                switch error {
                case .corrupt, .unrecognized: break
                default: XCTFail("prefix of \(length) bytes: \(error)")
                }
            }
        }
    }

    func testEveryFlippedByteIsRefusedOrReadWithoutCrashing() {
        let file = sample(items: 1)
        for index in 0..<file.count {
            var damaged = file
            damaged[index] ^= 0x5a
            // A flip in the clear part may still read (e.g. a label); the point is no crash and no huge allocation.
            _ = try? GnomeKeyringBinary.read(damaged, keyring: "k", password: password)
        }
    }

    func testHostileCountsAreRefusedBeforeAllocating() throws {
        var file = sample(items: 1)
        // The item count sits after magic(16) + version(4) + label + times(16) + flags, timeout, iterations (12) + salt(8) + reserved(16).
        let labelLength = 4 + "Login".utf8.count
        let countOffset = 20 + labelLength + 16 + 12 + 8 + 16
        file.replaceSubrange(countOffset..<countOffset + 4, with: [0xff, 0xff, 0xff, 0xf0])
        XCTAssertThrowsError(try GnomeKeyringBinary.read(file, keyring: "k", password: password)) {
            guard case .tooLarge? = $0 as? KeyringReadError else { return XCTFail("\($0)") }
        }
        var iterations = sample(items: 1)
        let iterationsOffset = 20 + labelLength + 16 + 8
        iterations.replaceSubrange(iterationsOffset..<iterationsOffset + 4, with: [0xff, 0xff, 0xff, 0xff])
        XCTAssertThrowsError(try GnomeKeyringBinary.read(iterations, keyring: "k", password: password)) {
            guard case .tooLarge? = $0 as? KeyringReadError else { return XCTFail("\($0)") }
        }
    }

    func testOversizedFileIsRefused() {
        let huge = GnomeKeyringBinary.magic + [UInt8](repeating: 0, count: KeyringLimits.maximumFileSize)
        XCTAssertThrowsError(try GnomeKeyringBinary.read(huge, keyring: "k", password: password)) {
            guard case .tooLarge? = $0 as? KeyringReadError else { return XCTFail("\($0)") }
        }
    }

    func testFormatDetection() {
        XCTAssertEqual(KeyringFolder.format(of: sample()), .gnomeKeyring)
        XCTAssertEqual(KeyringFolder.format(of: Array("[keyring]\ndisplay-name=x\n".utf8)), .gnomeKeyringPlaintext)
        XCTAssertNil(KeyringFolder.format(of: Array("hello".utf8)))
        XCTAssertThrowsError(try KeyringFolder.open(sample(), keyring: "k", password: nil)) {
            XCTAssertEqual($0 as? KeyringReadError, .needsPassword(keyring: "k"))
        }
    }
}
