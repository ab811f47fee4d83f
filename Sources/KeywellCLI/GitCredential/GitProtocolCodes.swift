/// git's URL schemes as the four-character protocol codes of internet password items, the way
/// macOS's git-credential-osxkeychain keeps them; a scheme without a code is "any protocol".
enum GitProtocolCodes {
    static let codes: [String: String] = [
        "https": "htps", "http": "http", "ftp": "ftp ", "ftps": "ftps",
        "imap": "imap", "imaps": "imps", "smtp": "smtp", "pop3": "pop3", "pop3s": "pops",
        "ssh": "ssh ", "ldap": "ldap", "ldaps": "ldps", "nntp": "nntp", "nntps": "ntps",
        "irc": "irc ", "ircs": "ircs", "telnet": "teln", "socks": "sox ", "svn": "svn ",
        "smb": "smb ", "cifs": "cifs", "afp": "afp ", "rtsp": "rtsp", "ipp": "ipp ",
    ]

    static func code(for scheme: String?) -> String? {
        scheme.flatMap { codes[$0.lowercased()] }
    }
}
