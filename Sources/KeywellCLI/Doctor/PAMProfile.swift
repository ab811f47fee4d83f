import FoundationEssentials

/// Whether PAM hands the login password to pam_keywell.so: the `/etc/pam.d` files that name it
/// on a line that is not a comment.
enum PAMProfile {
    static let folder = "/etc/pam.d"
    /// Files and bytes looked at: a PAM folder holds a few dozen small files.
    static let maximumFiles = 512
    static let maximumFileSize = 256 * 1024

    /// The files naming the module, sorted; empty when none does.
    static func filesNamingModule(in folder: String = folder) -> [String] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted().prefix(maximumFiles)
        return names.filter { name in
            let path = folder + "/" + name
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                  (attributes[.size] as? Int ?? Int.max) <= maximumFileSize,
                  let text = try? String(contentsOfFile: path, encoding: .utf8) else { return false }
            return text.split(separator: "\n").contains { line in
                let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                return content.contains("pam_keywell.so")
            }
        }
    }
}
