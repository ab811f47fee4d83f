import Foundation
import KeywellCore
import KeywellProtocol

/// KWallet's wallets in `$XDG_DATA_HOME/kwalletd` (`~/.local/share/kwalletd`): `NAME.kwl`, with
/// the PBKDF2 salt in `NAME.salt` beside it (docs/migration.md, "What is imported, and where").
public struct KWalletFolder: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    public init(dataHome: String) { self.init(path: dataHome + "/kwalletd") }

    /// The wallet KDE opens by default; it goes into the default keychain.
    public static let defaultWallet = KWalletProtocol.defaultWallet

    public struct Source: Sendable, Equatable {
        /// The wallet's name: the file name without `.kwl`.
        public let name: String
        public let path: String
        public var saltPath: String { String(path.dropLast(".kwl".count)) + ".salt" }
    }

    /// Every `*.kwl` file (regular files only, symlinks skipped), sorted, at most
    /// `KeyringFolder.maximumFiles`.
    public func sources() -> [Source] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        var found: [Source] = []
        for name in names.sorted() where name.hasSuffix(".kwl") && name.count > ".kwl".count {
            guard found.count < KeyringFolder.maximumFiles else { break }
            let full = path + "/" + name
            var info = stat()
            guard lstat(full, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            found.append(Source(name: String(name.dropLast(".kwl".count)), path: full))
        }
        return found
    }

    /// Opens a wallet read from `source`: a Blowfish wallet with `password` and its salt file,
    /// read here under the same caps; a GPG wallet with `gpg` (nil: gpg may not be run now, as
    /// at login, and the wallet waits for `keywell migrate`).
    public static func open(_ bytes: [UInt8], source: Source, password: SecretBytes?, modified: Int64,
                            gpg: KWalletGPG?) throws(KeyringReadError) -> KeyringContents {
        if try KWalletFile.checkStructure(bytes, keyring: source.name) == .gpg {
            guard let gpg else { throw .needsPassword(keyring: source.name) }
            return try KWalletFile.readGPG(bytes, keyring: source.name, modified: modified) { message throws(KeyringReadError) in
                try gpg.decrypt(message, keyring: source.name)
            }
        }
        guard let password else { throw .needsPassword(keyring: source.name) }
        var info = stat()
        guard lstat(source.saltPath, &info) == 0 else {
            throw .corrupt(keyring: source.name, reason: "its salt file \(source.saltPath) is missing")
        }
        guard info.st_size <= KeyringLimits.maximumSaltSize else {
            throw .tooLarge(keyring: source.name, reason: "its salt file is over \(KeyringLimits.maximumSaltSize) bytes")
        }
        let salt = try KeyringFolder.contents(of: source.saltPath, keyring: source.name)
        return try KWalletFile.read(bytes, salt: salt, keyring: source.name, password: password, modified: modified)
    }
}
