import CProcessPinning
import Foundation
import KeywellSystem

/// One process held fast while it is examined: a pidfd, and its `/proc/<pid>` folder opened
/// once. Everything is read through that folder's descriptor, which keeps naming the same
/// process even if it dies and its pid is given to another (reads then fail instead of reading
/// the newcomer).
final class ProcessPin {
    let pid: pid_t
    private let pidfd: FileDescriptor
    private let folder: FileDescriptor

    /// `pidfd`, when the bus handed one over, is owned by the pin from here on.
    init(pid: pid_t, pidfd given: FileDescriptor?) throws(IdentityError) {
        guard pid > 0 else {
            if let given { try? given.close() }
            throw .process("the bus reported no process id")
        }
        let pidfd = given?.rawValue ?? keywell_pidfd_open(pid)
        guard pidfd >= 0 else { throw Errno.current == .noSuchProcess ? .raced : .process("pidfd_open: \(Self.errorText())") }
        let folder: FileDescriptor
        do { folder = try FileDescriptor.open("/proc/\(pid)", O_RDONLY | O_DIRECTORY) } catch {
            close(pidfd)
            throw error == .noEntry ? .raced : .process("/proc/\(pid): \(error.description)")
        }
        self.pid = pid
        self.pidfd = FileDescriptor(rawValue: pidfd)
        self.folder = folder
        // Alive now, after the folder was opened: the folder is the pidfd's process.
        try checkAlive()
    }

    deinit {
        try? folder.close()
        try? pidfd.close()
    }

    /// Throws `raced` once the pinned process has exited.
    func checkAlive() throws(IdentityError) {
        guard keywell_pidfd_is_alive(pidfd.rawValue) == 0 else { throw .raced }
    }

    /// Opens `/proc/<pid>/<name>` (`exe`, `root`, `cwd`, `cmdline`).
    func open(_ name: String, flags: Int32) throws(IdentityError) -> FileDescriptor {
        let descriptor = openat(folder.rawValue, name, flags | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else { throw .process("/proc/\(pid)/\(name): \(Self.errorText())") }
        return FileDescriptor(rawValue: descriptor)
    }

    /// Up to `limit` bytes of `/proc/<pid>/<name>`; `truncated` when there was more.
    func read(_ name: String, limit: Int) throws(IdentityError) -> (bytes: [UInt8], truncated: Bool) {
        let descriptor = try open(name, flags: O_RDONLY)
        defer { try? descriptor.close() }
        return try Self.read(descriptor, limit: limit)
    }

    static func read(_ file: FileDescriptor, limit: Int) throws(IdentityError) -> (bytes: [UInt8], truncated: Bool) {
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var total = 0
        while total < bytes.count {
            let read = bytes.withUnsafeMutableBytes { buffer in
                Result { () throws(Errno) in try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...])) }
            }
            let count: Int
            do { count = try read.get() } catch { throw .process("read: \(error.description)") }
            if count == 0 { break }
            total += count
        }
        return (Array(bytes[..<min(total, limit)]), total > limit)
    }

    /// The path of an open file as this process sees it (symlinks resolved by the kernel); a
    /// file deleted or replaced since it was opened loses the kernel's " (deleted)" mark, since
    /// that path is what it was run as.
    static func path(of descriptor: FileDescriptor) throws(IdentityError) -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = buffer.withUnsafeMutableBufferPointer {
            $0.baseAddress!.withMemoryRebound(to: CChar.self, capacity: $0.count) {
                readlink("/proc/self/fd/\(descriptor.rawValue)", $0, Int(PATH_MAX))
            }
        }
        guard length > 0 else { throw .process("readlink: \(errorText())") }
        guard length < Int(PATH_MAX) else { throw .process("the file's path is too long") }
        // Identity strings are read by people and split at ';': a path that is not UTF-8 (two
        // such paths could print alike), holds a control character or a ';' cannot be named.
        guard var path = String(validating: buffer[..<length], as: UTF8.self),
              !path.unicodeScalars.contains(where: { $0 == ";" || $0.value < 0x20 || $0.value == 0x7f }) else {
            throw .process("the file's path cannot be named unambiguously (not UTF-8, a control character or ';')")
        }
        var status = stat()
        if fstat(descriptor.rawValue, &status) == 0, status.st_nlink == 0, path.hasSuffix(" (deleted)") {
            path.removeLast(" (deleted)".count)
        }
        guard path.hasPrefix("/") else { throw .process("the file has no path (\(path))") }
        return path
    }

    static func errorText() -> String { Errno.current.description }
}
