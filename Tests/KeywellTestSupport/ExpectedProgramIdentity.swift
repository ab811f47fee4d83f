import Foundation

/// The `exe:` identity keywelld and `-T` give the program at a path (docs/access-control.md,
/// "Programs only root can replace"), worked out apart from Keywell's code: realpath(1), the
/// owners and modes FileManager reports, sha256sum(1).
public enum ExpectedProgramIdentity {
    public static func of(_ path: String) throws -> String {
        let real = try ChildProcess.run("/usr/bin/realpath", arguments: [path], environment: [:], timeout: .seconds(60))
            .standardOutputText.trimmingCharacters(in: .newlines)
        if isRootOnly(real) { return "exe:\(real)" }
        let sum = try ChildProcess.run("/usr/bin/sha256sum", arguments: [real], environment: [:], timeout: .seconds(60))
            .standardOutputText.prefix(64)
        return "exe:\(real);sha256=\(sum)"
    }

    /// A regular file, then every folder up to /, each owned by root and writable by neither
    /// group nor others (a symbolic link on the way is neither a file nor a folder).
    public static func isRootOnly(_ real: String) -> Bool {
        var current = real
        var wanted = FileAttributeType.typeRegular
        while true {
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: current),
                  attributes[.type] as? FileAttributeType == wanted,
                  (attributes[.ownerAccountID] as? NSNumber)?.intValue == 0,
                  let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue, mode & 0o022 == 0
            else { return false }
            if current == "/" { return true }
            current = (current as NSString).deletingLastPathComponent
            wanted = .typeDirectory
        }
    }
}
