import Glibc
import KeywellSystem

extension IdentityResolver {
    /// The identity a program at `path` has when it runs (symbolic links resolved; its file hashed
    /// now unless only root can replace it): what an access list names to trust it before it ever
    /// called, as `-T` does (docs/access-control.md, "Item access lists").
    public func identity(ofProgram path: String) throws(IdentityError) -> ApplicationIdentity {
        guard let resolved = realpath(path, nil) else { throw .process("\(path): \(Errno.current.description)") }
        let real = String(cString: resolved)
        free(resolved)
        let opened = open(real, O_RDONLY | O_CLOEXEC)
        guard opened >= 0 else { throw .process("\(real): \(Errno.current.description)") }
        let descriptor = FileDescriptor(rawValue: opened)
        defer { try? descriptor.close() }
        // A program only root can replace is named by its path alone, as `-T` names it.
        let sha256 = RootOnlyProgram.isRootOnly(descriptor, path: real) ? nil : try digests.sha256(of: descriptor)
        return ApplicationIdentity(.executable(path: real, sha256: sha256, script: nil))
    }
}
