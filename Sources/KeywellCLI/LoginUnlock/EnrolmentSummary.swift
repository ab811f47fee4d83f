import FoundationEssentials
import KeywellProtocol
import KeywellSystem
#if canImport(Glibc)
import Glibc
#endif

extension LoginUnlockCommand {
    /// What `status` tells from the enrolment file keywelld writes (docs/login-unlock.md, "The
    /// files"): whether it is bound to the boot state, and whether a login found that state
    /// changed. Root reads it in the user's home, so no link is followed, only a regular file
    /// of at most `maxBytes` is read, and nothing but these two keys is shown.
    enum EnrolmentSummary: Equatable {
        case absent
        case unreadable(String)
        /// `bootStateChanged`: when a login found the bound PCRs changed (ISO 8601).
        case read(pcrs: LoginUnlockPCRs, bootStateChanged: String?)

        /// An enrolment is about 2 KiB (two TPM areas and a wrapped key, base64).
        static let maxBytes = 64 << 10

        private struct Fields: Decodable {
            var pcrs: LoginUnlockPCRs?
            var bootStateChanged: String?
        }

        static func load(_ path: String) -> EnrolmentSummary {
            let file: FileDescriptor
            do { file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) } catch {
                return error == .noEntry ? .absent : .unreadable("cannot open it: \(error)")
            }
            defer { try? file.close() }
            guard let info = try? file.status(), info.st_mode & S_IFMT == S_IFREG else { return .unreadable("not a regular file") }
            guard info.st_size <= off_t(maxBytes) else { return .unreadable("larger than \(maxBytes) bytes") }
            // Unreadable, or grown past the cap since fstat: nothing to decode.
            let bytes = (try? file.readAll(limit: maxBytes)) ?? []
            guard let fields = try? JSONDecoder().decode(Fields.self, from: Data(bytes)) else {
                return .unreadable("not an enrolment this version reads")
            }
            return .read(pcrs: fields.pcrs ?? .none, bootStateChanged: fields.bootStateChanged.map { String($0.prefix(40)) })
        }
    }
}
