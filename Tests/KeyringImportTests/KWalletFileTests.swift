import Foundation
import KeywellCore
import XCTest

@testable import KeyringImport

/// KWallet's wallet file through one the real kwalletd5 wrote (Tests/Fixtures/kwallet/, made by
/// its make_fixture.py: password "kwallet fixture password", entries of each type).
final class KWalletFileTests: XCTestCase {
    static let password = "kwallet fixture password"

    private func fixture(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/kwallet/" + name)
        return Array(try Data(contentsOf: url))
    }

    private func read(_ bytes: [UInt8], password: String = KWalletFileTests.password) throws -> KeyringContents {
        try KWalletFile.read(bytes, salt: try fixture("kdewallet.salt"), keyring: "kdewallet",
                             password: SecretBytes(copying: Array(password.utf8)), modified: 1_700_000_000)
    }

    private func text(_ secret: SecretBytes) -> String {
        secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    func testTheRealKwalletdFileOpensWithEveryEntryType() throws {
        let contents = try read(try fixture("kdewallet.kwl"))
        XCTAssertEqual(contents.format, .kwallet)
        let byLabel = Dictionary(uniqueKeysWithValues: contents.items.map { ($0.label, $0) })
        XCTAssertEqual(Set(byLabel.keys), ["Passwords/mail@example.org", "Passwords/empty", "Network Management/wifi-key",
                                           "Form Data/https://example.org/login"])
        let mail = try XCTUnwrap(byLabel["Passwords/mail@example.org"])
        XCTAssertEqual(text(mail.secret), "pässwörd ✓")
        XCTAssertEqual(mail.attributes, ["xdg:schema": "org.qt.keychain", "server": "Passwords", "user": "mail@example.org",
                                         "type": "plaintext"])
        XCTAssertEqual(mail.modified, 1_700_000_000)
        XCTAssertEqual(text(try XCTUnwrap(byLabel["Passwords/empty"]).secret), "")
        let blob = try XCTUnwrap(byLabel["Network Management/wifi-key"])
        XCTAssertEqual(blob.attributes["type"], "base64")
        XCTAssertEqual(text(blob.secret), Data([0, 1, 0xfe, 0xff] + Array(" blob".utf8)).base64EncodedString())
        let map = try XCTUnwrap(byLabel["Form Data/https://example.org/login"])
        XCTAssertEqual(map.attributes["type"], "map")
        XCTAssertEqual(text(map.secret), #"{"login":"alice","password":"s3cret","ü":""}"#)
    }

    func testAWrongPasswordIsSaidSo() throws {
        XCTAssertThrowsError(try read(try fixture("kdewallet.kwl"), password: "not it")) { error in
            XCTAssertEqual(error as? KeyringReadError, .wrongPassword(keyring: "kdewallet"))
        }
    }

    func testTruncatedAndDamagedFilesAreRefused() throws {
        let file = try fixture("kdewallet.kwl")
        for cut in [0, 11, 13, 16, 20, 40, file.count - 25, file.count - 8, file.count - 1] {
            XCTAssertThrowsError(try read(Array(file[0..<cut])), "cut at \(cut)")
        }
        var flipped = file
        flipped[file.count - 30] ^= 0x40
        XCTAssertThrowsError(try read(flipped)) { XCTAssertEqual($0 as? KeyringReadError, .wrongPassword(keyring: "kdewallet")) }
        var version = file
        version[14] = 0
        XCTAssertThrowsError(try read(version)) { error in
            guard case .corrupt(let keyring, let reason)? = error as? KeyringReadError else { return XCTFail("\(error)") }
            XCTAssertEqual(keyring, "kdewallet")
            XCTAssertTrue(reason.contains("Blowfish"), reason)
        }
        var folders = file
        folders.replaceSubrange(16..<20, with: [0xff, 0xff, 0xff, 0xff])
        XCTAssertThrowsError(try read(folders)) { XCTAssertEqual($0 as? KeyringReadError, .tooLarge(keyring: "kdewallet", reason: "4294967295 folders")) }
        XCTAssertThrowsError(try KWalletFile.read(file, salt: [], keyring: "kdewallet", password: SecretBytes(copying: [1]), modified: 0))
    }

    func testHostileCountsAndLengthsInsideTheDataAreRefused() {
        func entries(_ bytes: [UInt8]) throws -> [KeyringItem] {
            try bytes.withUnsafeBytes { try KWalletFile.entries(ByteReader($0, keyring: "w"), modified: 0) }
        }
        let folder: [UInt8] = [0, 0, 0, 2, 0, 0x46]  // QString "F"
        XCTAssertThrowsError(try entries(folder + [0xff, 0xff, 0xff, 0xff])) { error in
            guard case .tooLarge? = error as? KeyringReadError else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try entries(folder + [0, 0, 0, 1, 0x7f, 0, 0, 0]))
        XCTAssertThrowsError(try entries([0, 0, 0, 3, 0, 0x46, 0]))
        // A map claiming more pairs than it has bytes for.
        let mapEntry: [UInt8] = [0, 0, 0, 2, 0, 0x6b, 0, 0, 0, 3, 0, 0, 0, 4, 0x10, 0, 0, 0]
        XCTAssertThrowsError(try entries(folder + [0, 0, 0, 1] + mapEntry))
        // An unknown type is left out, the next entry still read.
        let unknown: [UInt8] = [0, 0, 0, 2, 0, 0x75, 0, 0, 0, 9, 0, 0, 0, 1, 0x41]
        let password: [UInt8] = [0, 0, 0, 2, 0, 0x70, 0, 0, 0, 1, 0, 0, 0, 6, 0, 0, 0, 2, 0, 0x78]
        XCTAssertEqual(try entries(folder + [0, 0, 0, 2] + unknown + password).map(\.label), ["F/p"])
    }
}
