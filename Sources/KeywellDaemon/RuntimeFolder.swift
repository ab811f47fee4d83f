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
        if mkdir(path, 0o700) != 0, errno != EEXIST {
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

    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    static func acquire(at path: String) throws(DaemonError) -> Outcome {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw DaemonError("cannot open \(path): \(Errno.current.description)") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            let reason = Errno.current.description
            defer { close(fd) }
            guard busy else { throw DaemonError("cannot lock \(path): \(reason)") }
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(fd, &buffer, buffer.count, 0)
            let text = count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : ""
            return .heldBy(pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        return .acquired(InstanceLock(descriptor: fd))
    }

    deinit { close(descriptor) }
}
