import Foundation
import KeywellTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// One session with a login keychain, shared by the suites that only add and read items of
/// their own (unique service names), so the daemon and the bus start once.
enum SharedSessions {
    private static let loginSession: Result<CLISession, any Error> = {
        let result = Result { try CLISession.withLogin() }
        // A static is never deinitialised: stop the bus (and remove its folder) at exit.
        atexit { if case .success(let session) = SharedSessions.loginSession { session.bus.stop() } }
        return result
    }()

    static func login() throws -> CLISession { try loginSession.get() }

    /// A name nobody else in the process uses.
    static func unique(_ prefix: String) -> String { "\(prefix)-\(UUID().uuidString.prefix(8))" }
}

/// Item blocks as docs/cli.md "Item blocks" shows them, dates masked.
enum ExpectedBlock {
    static func generic(keychain: String, label: String, account: String, service: String,
                        kind: String = "<NULL>", generic: String = "<NULL>", comment: String = "<NULL>",
                        creator: String = "<NULL>", type: String = "<NULL>") -> String {
        """
        keychain: "\(keychain)"
        version: 512
        class: "genp"
        attributes:
            0x00000007 <blob>=\(label)
            0x00000008 <blob>=<NULL>
            "acct"<blob>=\(account)
            "cdat"<timedate>=<DATE>
            "crtr"<uint32>=\(creator)
            "cusi"<sint32>=<NULL>
            "desc"<blob>=\(kind)
            "gena"<blob>=\(generic)
            "icmt"<blob>=\(comment)
            "invi"<sint32>=<NULL>
            "mdat"<timedate>=<DATE>
            "nega"<sint32>=<NULL>
            "prot"<blob>=<NULL>
            "scrp"<sint32>=<NULL>
            "svce"<blob>=\(service)
            "type"<uint32>=\(type)

        """
    }

    static func internet(keychain: String, label: String, account: String, server: String,
                         authenticationType: String = "\"dflt\"", path: String = "<NULL>",
                         port: String = "0x00000000 ", protocolCode: String = "0x00000000 ",
                         securityDomain: String = "<NULL>", kind: String = "<NULL>", comment: String = "<NULL>",
                         creator: String = "<NULL>", type: String = "<NULL>") -> String {
        """
        keychain: "\(keychain)"
        version: 512
        class: "inet"
        attributes:
            0x00000007 <blob>=\(label)
            0x00000008 <blob>=<NULL>
            "acct"<blob>=\(account)
            "atyp"<blob>=\(authenticationType)
            "cdat"<timedate>=<DATE>
            "crtr"<uint32>=\(creator)
            "cusi"<sint32>=<NULL>
            "desc"<blob>=\(kind)
            "icmt"<blob>=\(comment)
            "invi"<sint32>=<NULL>
            "mdat"<timedate>=<DATE>
            "nega"<sint32>=<NULL>
            "path"<blob>=\(path)
            "port"<uint32>=\(port)
            "prot"<blob>=<NULL>
            "ptcl"<uint32>=\(protocolCode)
            "scrp"<sint32>=<NULL>
            "sdmn"<blob>=\(securityDomain)
            "srvr"<blob>=\(server)
            "type"<uint32>=\(type)

        """
    }
}
