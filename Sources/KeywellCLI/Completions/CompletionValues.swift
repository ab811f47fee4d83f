/// The values completion scripts offer, shared by the three shells.
enum CompletionValues {
    static let protocols = [
        "ftp ", "ftpa", "http", "irc ", "nntp", "pop3", "smtp", "sox ", "imap", "ldap", "atlk", "afp ",
        "teln", "ssh ", "ftps", "htps", "htpx", "htsx", "ftpx", "cifs", "smb ", "rtsp", "rtsx", "daap",
        "eppc", "ipp ", "ntps", "ldps", "tels", "imps", "ircs", "pops", "cvsp", "svn ",
    ]
    static let authenticationTypes = ["ntlm", "msna", "dpaa", "rpaa", "http", "httd", "form", "dflt"]
    static let domains = ["user", "system", "common", "dynamic"]

    /// Shell code (POSIX sh, also valid in bash and zsh) that prints the keychain names: the
    /// files in the keychains folder, without asking the daemon.
    static let keychainListing =
        #"for f in "${XDG_DATA_HOME:-$HOME/.local/share}"/keywell/keychains/*.keychain-db; do [ -e "$f" ] && basename "$f" .keychain-db; done"#

    static func words(for completion: ValueCompletion) -> [String]? {
        switch completion {
        case .protocols: protocols.map { $0.trimmingTrailingSpaces }
        case .authenticationTypes: authenticationTypes
        case .domains: domains
        case .commands: CommandTable.all.map(\.name)
        case .words(let words): words
        case .none, .keychains, .files: nil
        }
    }
}

extension String {
    /// Codes like `ftp ` end in a space, which shells cannot offer as a word; users type the
    /// quotes themselves, so the completion offers the letters.
    var trimmingTrailingSpaces: String {
        var text = self
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }
}
