import Foundation
import KeywellProtocol
import KeywellSystem

/// `$XDG_RUNTIME_DIR/keywell`: the daemon's folder for its control socket and instance lock.
/// Mode 0700, owned by the user, a real folder (never a symlink someone planted).
struct RuntimeFolder {
    let path: String

    var controlSocketPath: String { path + "/" + ControlProtocol.socketName }
    var lockFilePath: String { path + "/keywelld.lock" }
    var directSocketPath: String { path + "/" + KeywellNames.directSocket }
    var sshAgentSocketPath: String { path + "/" + KeywellNames.sshAgentSocket }

    static func prepare(_ path: String) throws(DaemonError) -> RuntimeFolder {
        if mkdir(path, 0o700) != 0, Errno.current != .exists {
            throw DaemonError("cannot create \(path): \(Errno.current.description)")
        }
        switch PrivateFolderState.of(path) {
        case .privateToThisUser:
            break
        case .openToOthers:
            guard chmod(path, 0o700) == 0 else {
                throw DaemonError("cannot make \(path) private: \(Errno.current.description)")
            }
        case let state:
            throw DaemonError(state.problem(with: path) ?? path)
        }
        return RuntimeFolder(path: path)
    }
}

/// The single-instance lock: an `flock` on a file in the runtime folder, held for the process's
/// life (the kernel drops it when the process dies, however it dies). The file holds the pid.
final class InstanceLock {
    enum Outcome {
        case acquired(InstanceLock)
        /// Another daemon holds it; its pid when the file says.
        case heldBy(pid_t?)
    }

    private let descriptor: FileDescriptor

    private init(descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    static func acquire(at path: String) throws(DaemonError) -> Outcome {
        let file: FileDescriptor
        do throws(Errno) { file = try .open(path, O_RDWR | O_CREAT | O_NOFOLLOW, permissions: 0o600) } catch {
            throw DaemonError("cannot open \(path): \(error.description)")
        }
        guard flock(file.rawValue, LOCK_EX | LOCK_NB) == 0 else {
            let failure = Errno.current
            return try file.closeAfter { () throws(DaemonError) -> Outcome in
                guard failure == .wouldBlock else { throw DaemonError("cannot lock \(path): \(failure.description)") }
                var buffer = [UInt8](repeating: 0, count: 32)
                let count = (try? buffer.withUnsafeMutableBytes { try file.read(fromAbsoluteOffset: 0, into: $0) }) ?? 0
                let text = String(decoding: buffer[..<count], as: UTF8.self)
                return .heldBy(pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)))
            }
        }
        // Best effort: the lock is what counts; the pid is only for a second daemon's message.
        try? file.resize(to: 0)
        try? file.writeAll(toAbsoluteOffset: 0, "\(getpid())\n".utf8)
        return .acquired(InstanceLock(descriptor: file))
    }

    deinit { try? descriptor.close() }
}
