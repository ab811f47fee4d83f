import KeywellProtocol

#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How keychain arguments become what the daemon takes, and daemon names become the paths
/// `security` prints.
///
/// - An absolute path is used as given; a relative path (one with a `/`) is taken from the
///   current folder, as Linux tools do (macOS would put it under ~/Library/Keychains).
/// - A bare name is a keychain in `$XDG_DATA_HOME/keywell/keychains`. A trailing `.keychain`
///   is dropped, so macOS scripts' `login.keychain` and `build.keychain` name the files
///   `login.keychain-db` and `build.keychain-db`, exactly as macOS's `-db` rule would.
struct KeychainNaming {
    static let fileExtension = ".keychain-db"
    static let macOSSuffix = ".keychain"

    let keychainsDirectory: String
    let currentDirectory: String

    /// From the process's environment, read with getenv(3) rather than through
    /// `ProcessInfo.environment`, whose whole dictionary costs more than the lookup it serves.
    init() {
        func absolute(_ key: String) -> String? {
            guard let value = getenv(key).map({ String(cString: $0) }), value.hasPrefix("/") else { return nil }
            return value
        }
        let home = absolute("HOME") ?? FileManager.default.homeDirectoryForCurrentUser.path
        let dataHome = absolute("XDG_DATA_HOME") ?? home + "/.local/share"
        keychainsDirectory = KeychainPath.normalized(dataHome + "/keywell/keychains") ?? dataHome + "/keywell/keychains"
        currentDirectory = FileManager.default.currentDirectoryPath
    }

    /// The name or path to send to the daemon for what the user typed.
    func daemonName(for argument: String) -> String {
        if argument.hasPrefix("/") { return KeychainPath.normalized(argument) ?? argument }
        if argument.contains("/") { return KeychainPath.normalized(currentDirectory + "/" + argument) ?? argument }
        if argument.hasSuffix(Self.macOSSuffix), argument.count > Self.macOSSuffix.count {
            return String(argument.dropLast(Self.macOSSuffix.count))
        }
        return argument
    }

    /// The file a daemon name stands for (what `list-keychains` and item blocks print).
    func path(for name: String) -> String {
        if name.hasPrefix("/") { return name }
        if name.hasSuffix(Self.fileExtension) { return keychainsDirectory + "/" + name }
        return keychainsDirectory + "/" + name + Self.fileExtension
    }

    /// What a person calls the keychain: the name for folder keychains, else the path.
    func displayName(for name: String) -> String {
        let prefix = keychainsDirectory + "/"
        if name.hasPrefix(prefix), name.hasSuffix(Self.fileExtension) {
            let short = String(name.dropFirst(prefix.count).dropLast(Self.fileExtension.count))
            if !short.contains("/") { return short }
        }
        return name
    }
}
