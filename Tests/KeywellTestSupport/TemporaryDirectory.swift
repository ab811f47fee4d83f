import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under /tmp (mode 0700), removed with everything in it by `remove()` or
/// when the object goes away. Paths stay short, so unix socket paths inside it fit in
/// sockaddr_un's 108 bytes.
// @unchecked: `removed` is only touched under `lock`.
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String
    private let lock = NSLock()
    private var removed = false

    public init(prefix: String = "keywell") throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let result = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestSupportError("mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        path = String(cString: result)
    }

    deinit { remove() }

    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// `path/component/…` (nothing is created).
    public func subpath(_ components: String...) -> String {
        components.reduce(path) { $0 + "/" + $1 }
    }

    /// Creates `relative` (and its parents) with `mode`; returns its absolute path.
    @discardableResult
    public func createDirectory(_ relative: String, mode: mode_t = 0o700) throws -> String {
        let full = path + "/" + relative
        try FileManager.default.createDirectory(atPath: full, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: NSNumber(value: mode)])
        chmod(full, mode)  // createDirectory's attributes are subject to the umask
        return full
    }

    /// Writes `contents` to `relative` (parents created); returns its absolute path.
    @discardableResult
    public func write(_ contents: String, to relative: String, mode: mode_t = 0o600) throws -> String {
        try write(Array(contents.utf8), to: relative, mode: mode)
    }

    @discardableResult
    public func write(_ bytes: [UInt8], to relative: String, mode: mode_t = 0o600) throws -> String {
        let full = path + "/" + relative
        let parent = (full as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        // A program file is written while no child can be starting (SpawnGate).
        let written = mode & 0o111 == 0
            ? FileManager.default.createFile(atPath: full, contents: Data(bytes))
            : SpawnGate.withLock { FileManager.default.createFile(atPath: full, contents: Data(bytes)) }
        guard written else { throw TestSupportError("Cannot write \(full)") }
        chmod(full, mode)
        return full
    }

    /// Deletes the directory tree. Idempotent.
    public func remove() {
        let shouldRemove = lock.withLock { () -> Bool in
            defer { removed = true }
            return !removed
        }
        if shouldRemove { try? FileManager.default.removeItem(atPath: path) }
    }
}

/// A failure inside the test support itself (spawning, files), with a readable message.
public struct TestSupportError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
