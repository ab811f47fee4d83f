import KeywellSystem
#if canImport(Glibc)
import Glibc
#endif

extension LoginUnlockCommand {
    /// A user's passwd entry, through `getent passwd` rather than getpwnam(3): keywell is linked
    /// statically, and glibc's NSS modules (`systemd` in nsswitch.conf, LDAP, …) that a static
    /// getpwnam loads crash it as soon as the files module does not know the name. getent is
    /// dynamic, so every NSS source answers as it does for the PAM module.
    struct Account: Equatable {
        var name: String
        var uid: uid_t
        var home: String

        /// Bytes of getent's answer read at most: one passwd line is far shorter.
        static let maxAnswer = 4096
        static let getent = "/usr/bin/getent"

        /// nil when there is no such account (or getent cannot be run).
        static func find(name: String) -> Account? {
            // A name that cannot be a key of its own (getent takes several, and options).
            guard !name.isEmpty, name.utf8.count <= 256, !name.hasPrefix("-"),
                  !name.contains(where: { $0 == ":" || $0 == "," || $0.isWhitespace || $0.isNewline }) else { return nil }
            return lookup(name).flatMap { $0.name == name ? $0 : nil }
        }

        static func find(uid: uid_t) -> Account? {
            lookup(String(uid)).flatMap { $0.uid == uid ? $0 : nil }
        }

        /// `name:password:uid:gid:gecos:home:shell`
        static func parse(_ line: Substring) -> Account? {
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 7, !fields[0].isEmpty, let uid = uid_t(fields[2]), fields[5].hasPrefix("/") else { return nil }
            return Account(name: String(fields[0]), uid: uid, home: String(fields[5]))
        }

        private static func lookup(_ key: String) -> Account? {
            let child: SpawnedChild
            do {
                child = try ChildSpawner.spawn(SpawnRequest(executable: getent, arguments: ["passwd", "--", key],
                                                            environment: [:], standardOutput: .pipe))
            } catch {
                return nil
            }
            var answer = [UInt8]()
            if let output = child.standardOutput {
                // One passwd line is far shorter than the cap: an answer past it is none (nil).
                answer = output.closeAfter { (try? output.readAll(limit: maxAnswer)) ?? nil } ?? []
            }
            guard ChildSpawner.waitForExit(child.pid)?.succeeded == true else { return nil }
            let text = String(decoding: answer.prefix(maxAnswer), as: UTF8.self)
            guard let line = text.split(separator: "\n").first else { return nil }
            return parse(line)
        }
    }
}
