import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSystem

/// The keyring files of `$XDG_DATA_HOME/keyrings` (gnome-keyring's folder; libsecret's file
/// backend and oo7 use its `v1/` folder) and the `default` file naming the default keyring.
public struct KeyringFolder: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// `$XDG_DATA_HOME/keyrings`, next to Keywell's own `$XDG_DATA_HOME/keywell`.
    public init(dataHome: String) { self.init(path: dataHome + "/keyrings") }

    /// At most this many files are looked at (docs/migration.md, "Limits").
    public static let maximumFiles = 256

    public struct Source: Sendable, Equatable {
        /// The keyring's name: the file name without `.keyring`.
        public let name: String
        public let path: String
        /// In `v1/`.
        public let isVersion1Folder: Bool
    }

    /// Every `*.keyring` file (regular files only, symlinks skipped), sorted by path.
    public func sources() -> [Source] {
        var found: [Source] = []
        for (folder, v1) in [(path, false), (path + "/v1", true)] {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }
            for name in names.sorted() where name.hasSuffix(".keyring") && name.count > ".keyring".count {
                guard found.count < Self.maximumFiles else { return found }
                let full = folder + "/" + name
                var info = stat()
                guard lstat(full, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                found.append(Source(name: String(name.dropLast(".keyring".count)), path: full, isVersion1Folder: v1))
            }
        }
        return found
    }

    /// The keyring the `default` file names (gnome-keyring writes the bare name), if any.
    public func defaultKeyring() -> String? {
        guard let handle = FileHandle(forReadingAtPath: path + "/default") else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 4096),
              let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
              !text.isEmpty, !text.contains("/")
        else { return nil }
        return text
    }

    /// Reads a whole keyring file, refusing one over the size cap before reading it.
    public static func contents(of path: String, keyring: String) throws(KeyringReadError) -> [UInt8] {
        let file: FileDescriptor
        do { file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW) } catch {
            throw .corrupt(keyring: keyring, reason: "cannot open \(path): \(error.description)")
        }
        return try file.closeAfter { () throws(KeyringReadError) in
            guard let info = try? file.status(), info.st_mode & S_IFMT == S_IFREG else { throw .unrecognized(keyring: keyring) }
            let tooLarge = KeyringReadError.tooLarge(keyring: keyring, reason: "the file is over \(KeyringLimits.maximumFileSize) bytes")
            guard info.st_size <= KeyringLimits.maximumFileSize else { throw tooLarge }
            // The cap holds while reading too: a file that grew past it since fstat is refused alike.
            let read: [UInt8]?
            do throws(Errno) { read = try file.readAll(limit: Int(KeyringLimits.maximumFileSize)) } catch {
                throw .corrupt(keyring: keyring, reason: "cannot read \(path): \(error.description)")
            }
            guard let bytes = read else { throw tooLarge }
            return bytes
        }
    }

    /// Opens a keyring file in whichever format it is. Plaintext files need no password.
    public static func open(_ bytes: [UInt8], keyring: String, password: SecretBytes?) throws(KeyringReadError) -> KeyringContents {
        if GnomeKeyringBinary.matches(bytes) {
            guard let password else { throw .needsPassword(keyring: keyring) }
            return try GnomeKeyringBinary.read(bytes, keyring: keyring, password: password)
        }
        if LibsecretFile.matches(bytes) {
            guard let password else { throw .needsPassword(keyring: keyring) }
            return try LibsecretFile.read(bytes, keyring: keyring, password: password)
        }
        if GnomeKeyringText.matches(bytes) { return try GnomeKeyringText.read(bytes, keyring: keyring) }
        throw .unrecognized(keyring: keyring)
    }

    public static func format(of bytes: [UInt8]) -> KeyringFormat? {
        if GnomeKeyringBinary.matches(bytes) { return .gnomeKeyring }
        if LibsecretFile.matches(bytes) { return .libsecretFile }
        if GnomeKeyringText.matches(bytes) { return .gnomeKeyringPlaintext }
        return nil
    }
}
