import Foundation
import KeywellProtocol

/// Where Keywell keeps its files (docs/native-api.md "Where things live").
public struct KeywellPaths: Sendable, Equatable {
    /// `$XDG_DATA_HOME/keywell/keychains`: the `<name>.keychain-db` files.
    public var keychainsDirectory: URL
    /// `$XDG_CONFIG_HOME/keywell`: the per-user settings file.
    public var configDirectory: URL
    /// `$XDG_RUNTIME_DIR/keywell`: sockets and pid (the daemon's).
    public var runtimeDirectory: URL

    public init(keychainsDirectory: URL, configDirectory: URL, runtimeDirectory: URL) {
        self.keychainsDirectory = keychainsDirectory.standardizedFileURL
        self.configDirectory = configDirectory.standardizedFileURL
        self.runtimeDirectory = runtimeDirectory.standardizedFileURL
    }

    /// The XDG locations. Relative XDG values are ignored, as the XDG spec says.
    public static func fromEnvironment(
        _ env: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeychainError) -> KeywellPaths {
        func absolute(_ key: String) -> String? {
            guard let value = env[key], value.hasPrefix("/") else { return nil }
            return value
        }
        func home() throws(KeychainError) -> String {
            if let home = absolute("HOME") { return home }
            if let entry = getpwuid(geteuid()), let dir = entry.pointee.pw_dir {
                let home = String(cString: dir)
                if home.hasPrefix("/") { return home }
            }
            throw KeychainError(SecStatus.notAvailable, detail: "cannot find the home folder: HOME is not set")
        }

        var dataHome = absolute("XDG_DATA_HOME")
        var configHome = absolute("XDG_CONFIG_HOME")
        if dataHome == nil || configHome == nil {
            let home = try home()
            dataHome = dataHome ?? home + "/.local/share"
            configHome = configHome ?? home + "/.config"
        }
        let runtimeDir = absolute("XDG_RUNTIME_DIR") ?? "/run/user/\(geteuid())"
        return KeywellPaths(
            keychainsDirectory: URL(fileURLWithPath: dataHome!).appendingPathComponent("keywell/keychains", isDirectory: true),
            configDirectory: URL(fileURLWithPath: configHome!).appendingPathComponent("keywell", isDirectory: true),
            runtimeDirectory: URL(fileURLWithPath: runtimeDir).appendingPathComponent(KeywellNames.runtimeFolder, isDirectory: true)
        )
    }
}
