import KeywellProtocol
import KeywellSystem

/// One keychain file and the name outputs give it: its name for a file in the keychains folder,
/// its absolute path for any other file. Two locations are the same only byte for byte, as the
/// kernel tells files apart (`ExactText`).
struct KeychainLocation: Hashable, Sendable {
    let path: String
    let displayName: String

    var isInKeychainsFolder: Bool { !displayName.hasPrefix("/") }
    var directory: String { String(path[..<path.lastIndex(of: "/")!]).ifEmpty("/") }
    /// The key of tables of open files.
    var key: ExactText { ExactText(path) }

    static func == (left: KeychainLocation, right: KeychainLocation) -> Bool {
        left.path.isExactly(right.path) && left.displayName.isExactly(right.displayName)
    }

    func hash(into hasher: inout Hasher) { hasher.combine(key) }
}

/// Turns the names and paths callers give into `KeychainLocation`s (docs/native-api.md "Names and paths").
struct KeychainResolver: Sendable {
    static let fileExtension = ".keychain-db"
    static let maximumNameLength = 200

    /// The keychains folder, absolute and without a trailing slash.
    let keychainsDirectory: String

    init(keychainsDirectory: String) {
        self.keychainsDirectory = KeychainPath.normalized(keychainsDirectory) ?? keychainsDirectory
    }

    /// A name (`login`) or an absolute path; anything else is `errSecParam`.
    func location(for nameOrPath: String) throws(KeychainError) -> KeychainLocation {
        if nameOrPath.hasPrefix("/") {
            guard let path = KeychainPath.normalized(nameOrPath), path != "/", path.utf8.count <= 4096 else {
                throw .param("not a usable keychain path: \(nameOrPath)")
            }
            return location(forPath: path)
        }
        var name = nameOrPath
        // A name given with the file extension means the same file.
        if name.hasSuffix(Self.fileExtension), Self.isValidName(String(name.dropLast(Self.fileExtension.count))) {
            name.removeLast(Self.fileExtension.count)
        }
        guard Self.isValidName(name) else {
            throw .param("invalid keychain name \"\(nameOrPath)\": use 1–200 letters, digits, spaces, '.', '_' or '-', not starting with '.'")
        }
        return KeychainLocation(path: keychainsDirectory + "/" + name + Self.fileExtension, displayName: name)
    }

    /// The location of an absolute, normalised path: named when it is a keychain file in the folder.
    func location(forPath path: String) -> KeychainLocation {
        let slash = path.lastIndex(of: "/")!
        let folder = String(path[..<slash])
        let file = String(path[path.index(after: slash)...])
        if folder.isExactly(keychainsDirectory), file.hasSuffix(Self.fileExtension) {
            let name = String(file.dropLast(Self.fileExtension.count))
            if Self.isValidName(name) { return KeychainLocation(path: path, displayName: name) }
        }
        return KeychainLocation(path: path, displayName: path)
    }

    static func isValidName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard (1...maximumNameLength).contains(bytes.count), bytes.first != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: " "), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }
}

extension String {
    fileprivate func ifEmpty(_ replacement: String) -> String { isEmpty ? replacement : self }
}
