import Foundation
import KeywellCore
import XCTest

@testable import KeyringImport

/// KWallet's GPG wallet (docs/migration.md, "KWallet's wallet file"): the header read without gpg,
/// the plaintext as KWallet's GpgPersistHandler writes it, and the real gpg decrypting a wallet
/// sealed to a key made here in a throwaway GNUPGHOME (and failing, by name, for a key it lacks).
final class KWalletGPGTests: XCTestCase {
    static let header = KWalletFile.magic + [0, 1, 2, 0]

    static func qstring(_ text: String) -> [UInt8] {
        let units = text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
        return uint32(units.count) + units
    }

    static func uint32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    static func byteArray(_ bytes: [UInt8]) -> [UInt8] { uint32(bytes.count) + bytes }

    /// Folders `Passwords` (a password), `Net` (bytes) and `Form` (a map), as kwalletd streams them.
    static let values: [UInt8] =
        qstring("Passwords") + uint32(1) + qstring("mail") + uint32(1) + byteArray(qstring("pässwörd ✓"))
        + qstring("Net") + uint32(1) + qstring("blob") + uint32(2) + byteArray([0, 1, 0xfe, 0xff])
        + qstring("Form") + uint32(1) + qstring("login") + uint32(3)
        + byteArray(uint32(1) + qstring("user") + qstring("alice"))

    /// GpgPersistHandler's plaintext: the key's ID, the hash table, the values.
    static func plaintext(keyID: String = "0123456789ABCDEF") -> [UInt8] {
        qstring(keyID) + byteArray(uint32(3) + [UInt8](repeating: 7, count: 3 * (16 + 4 + 16))) + byteArray(values)
    }

    private func text(_ secret: SecretBytes) -> String { secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

    func testTheHeaderIsReadWithoutGPG() throws {
        XCTAssertEqual(try KWalletFile.checkStructure(Self.header + [0x85, 1, 2], keyring: "w"), .gpg)
        XCTAssertEqual(try KWalletFile.checkStructure(KWalletFile.magic + [0, 0, 2, 0, 0xc1], keyring: "w"), .gpg)
        for bad in [Self.header, Self.header + [0x05, 1], KWalletFile.magic + [0, 2, 2, 0, 0x85], KWalletFile.magic + [0, 1, 2, 1, 0x85]] {
            XCTAssertThrowsError(try KWalletFile.checkStructure(bad, keyring: "w")) { error in
                guard case .corrupt(let keyring, _)? = error as? KeyringReadError else { return XCTFail("\(error)") }
                XCTAssertEqual(keyring, "w")
            }
        }
        // A GPG wallet is never taken for a Blowfish one (no key derivation, no salt asked for).
        XCTAssertThrowsError(try KWalletFile.read(Self.header + [0x85, 1], salt: [1], keyring: "w",
                                                  password: SecretBytes(copying: [1]), modified: 0)) { error in
            guard case .corrupt(_, let reason)? = error as? KeyringReadError else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("GPG"), reason)
        }
    }

    func testThePlaintextReadsAsEveryEntryType() throws {
        let plain = Self.plaintext()
        let contents = try KWalletFile.readGPG(Self.header + [0x85, 0], keyring: "w", modified: 9) { _ throws(KeyringReadError) in
            SecretBytes(copying: plain)
        }
        let byLabel = Dictionary(uniqueKeysWithValues: contents.items.map { ($0.label, $0) })
        XCTAssertEqual(Set(byLabel.keys), ["Passwords/mail", "Net/blob", "Form/login"])
        XCTAssertEqual(text(try XCTUnwrap(byLabel["Passwords/mail"]).secret), "pässwörd ✓")
        XCTAssertEqual(text(try XCTUnwrap(byLabel["Net/blob"]).secret), "AAH+/w==")
        XCTAssertEqual(text(try XCTUnwrap(byLabel["Form/login"]).secret), #"{"user":"alice"}"#)
        XCTAssertEqual(byLabel["Form/login"]?.attributes["type"], "map")
        XCTAssertEqual(contents.items.first?.modified, 9)
        // Truncated anywhere, or with bytes after the values: damaged, by name.
        for cut in [0, 3, 10, plain.count - 1] {
            XCTAssertThrowsError(try KWalletFile.readGPG(Self.header + [0x85], keyring: "w", modified: 0) { _ throws(KeyringReadError) in
                SecretBytes(copying: plain[0..<cut])
            }, "cut at \(cut)")
        }
        XCTAssertThrowsError(try KWalletFile.readGPG(Self.header + [0x85], keyring: "w", modified: 0) { _ throws(KeyringReadError) in
            SecretBytes(copying: plain + [0])
        })
    }

    // MARK: The real gpg

    private var home = ""

    override func setUpWithError() throws {
        home = try XCTUnwrap(String(validatingCString: mkdtemp(strdup("/tmp/kwgpg-XXXXXX"))))
    }

    override func tearDown() {
        _ = try? run("/usr/bin/gpgconf", ["--homedir", home, "--kill", "gpg-agent"])
        try? FileManager.default.removeItem(atPath: home)
    }

    @discardableResult
    private func run(_ program: String, _ arguments: [String], input: [UInt8] = []) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = ["GNUPGHOME": home, "PATH": "/usr/bin:/bin"]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        try stdin.fileHandleForWriting.write(contentsOf: input)
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "\(program) \(arguments)")
        return Array(output)
    }

    /// A wallet sealed by the real gpg to a key without a passphrase, made in `home`.
    private func sealedWallet() throws -> [UInt8] {
        try run("/usr/bin/gpg", ["--batch", "--pinentry-mode", "loopback", "--passphrase", "",
                                 "--quick-gen-key", "Keywell Test <kwallet@example.org>", "default", "default", "never"])
        let message = try run("/usr/bin/gpg", ["--batch", "--trust-model", "always", "-r", "kwallet@example.org", "--encrypt"],
                              input: Self.plaintext())
        return Self.header + message
    }

    func testTheRealGPGOpensAWalletSealedToItsKey() throws {
        let wallet = try sealedWallet()
        let gpg = KWalletGPG(environment: ["GNUPGHOME": home, "PATH": "/usr/bin:/bin", "SECRET_IN_ENV": "not passed"])
        XCTAssertNil(gpg.environment["SECRET_IN_ENV"])
        let source = KWalletFolder.Source(name: "gpgwallet", path: home + "/gpgwallet.kwl")
        let contents = try KWalletFolder.open(wallet, source: source, password: nil, modified: 5, gpg: gpg)
        XCTAssertEqual(contents.items.map(\.label).sorted(), ["Form/login", "Net/blob", "Passwords/mail"])
        // At login no gpg runs: the wallet waits for `keywell migrate`.
        XCTAssertThrowsError(try KWalletFolder.open(wallet, source: source, password: nil, modified: 5, gpg: nil)) {
            XCTAssertEqual($0 as? KeyringReadError, .needsPassword(keyring: "gpgwallet"))
        }
    }

    func testAKeyGPGLacksOrAMissingGPGIsSaidByName() throws {
        let wallet = try sealedWallet()
        let source = KWalletFolder.Source(name: "gpgwallet", path: home + "/gpgwallet.kwl")
        let elsewhere = home + "/other"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        let lacking = KWalletGPG(environment: ["GNUPGHOME": elsewhere, "PATH": "/usr/bin:/bin"])
        XCTAssertThrowsError(try KWalletFolder.open(wallet, source: source, password: nil, modified: 0, gpg: lacking)) { error in
            guard case .cannotDecrypt(let keyring, let reason)? = error as? KeyringReadError else { return XCTFail("\(error)") }
            XCTAssertEqual(keyring, "gpgwallet")
            XCTAssertTrue(reason.contains("No secret key") || reason.contains("decryption failed"), reason)
        }
        _ = try? run("/usr/bin/gpgconf", ["--homedir", elsewhere, "--kill", "gpg-agent"])
        let missing = KWalletGPG(executable: "/nonexistent/gpg", environment: ["GNUPGHOME": home])
        XCTAssertThrowsError(try KWalletFolder.open(wallet, source: source, password: nil, modified: 0, gpg: missing)) { error in
            guard case .cannotDecrypt(let keyring, let reason)? = error as? KeyringReadError else { return XCTFail("\(error)") }
            XCTAssertEqual(keyring, "gpgwallet")
            XCTAssertTrue(reason.contains("gpg is needed"), reason)
        }
    }

    /// What comes back is capped: a program whose output never ends (`cat /dev/zero`) in gpg's
    /// place is stopped at the wallet-file cap and named as over it.
    func testOutputOverTheCapIsRefused() throws {
        let program = home + "/endless"
        try "#!/bin/sh\nexec cat /dev/zero\n".write(toFile: program, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: program)
        let endless = KWalletGPG(executable: program, environment: [:])
        let message: [UInt8] = [0x85, 1, 2]
        XCTAssertThrowsError(try message.withUnsafeBytes { try endless.decrypt($0, keyring: "huge") }) { error in
            guard case .tooLarge(let keyring, let reason)? = error as? KeyringReadError else { return XCTFail("\(error)") }
            XCTAssertEqual(keyring, "huge")
            XCTAssertTrue(reason.contains("\(KeyringLimits.maximumFileSize)"), reason)
        }
    }
}
