// Apple's kSec* constants, with Apple's string values: the same strings travel as the keys of
// the native D-Bus API (docs/native-api.md), so a query written for Apple platforms means the same here.
// Those the daemon knows are defined as the contract's values (`AttributeKey`, `WireKey` in
// KeywellProtocol; docs/native-api.md, "The contract"); the rest only the client knows.

// Classes
public let kSecClass: CFString = WireKey.`class`
public let kSecClassGenericPassword: CFString = WireKey.classGenericPassword
public let kSecClassInternetPassword: CFString = WireKey.classInternetPassword
// Keywell stores passwords only: these exist so that code naming them compiles; the daemon
// answers errSecNoSuchClass for them.
public let kSecClassCertificate: CFString = "cert"
public let kSecClassKey: CFString = "keys"
public let kSecClassIdentity: CFString = "idnt"

// Attributes
public let kSecAttrAccount: CFString = AttributeKey.account
/// An item's access list (a `SecAccess`), on `SecItemAdd` and `SecItemUpdate`.
public let kSecAttrAccess: CFString = WireKey.access
public let kSecAttrService: CFString = AttributeKey.service
public let kSecAttrGeneric: CFString = AttributeKey.generic
public let kSecAttrServer: CFString = AttributeKey.server
public let kSecAttrProtocol: CFString = AttributeKey.`protocol`
public let kSecAttrPort: CFString = AttributeKey.port
public let kSecAttrPath: CFString = AttributeKey.path
public let kSecAttrSecurityDomain: CFString = AttributeKey.securityDomain
public let kSecAttrAuthenticationType: CFString = AttributeKey.authenticationType
public let kSecAttrLabel: CFString = AttributeKey.label
public let kSecAttrDescription: CFString = AttributeKey.description
public let kSecAttrComment: CFString = AttributeKey.comment
public let kSecAttrCreator: CFString = AttributeKey.creator
public let kSecAttrType: CFString = AttributeKey.type
public let kSecAttrIsInvisible: CFString = AttributeKey.invisible
public let kSecAttrIsNegative: CFString = AttributeKey.negative
public let kSecAttrAccessGroup: CFString = AttributeKey.accessGroup
public let kSecAttrAccessible: CFString = AttributeKey.accessible
public let kSecAttrCreationDate: CFString = AttributeKey.creationDate
public let kSecAttrModificationDate: CFString = AttributeKey.modificationDate
public let kSecAttrSynchronizable: CFString = AttributeKey.synchronizable
/// A kSecAttrSynchronizable value for queries: both kinds (every Keywell item is non-synchronizable).
public let kSecAttrSynchronizableAny: CFString = "syna"

// Values, return types, match options, use options
public let kSecValueData: CFString = WireKey.valueData
public let kSecValueRef: CFString = "v_Ref"
public let kSecValuePersistentRef: CFString = WireKey.valuePersistentRef
public let kSecReturnData: CFString = WireKey.returnData
public let kSecReturnAttributes: CFString = WireKey.returnAttributes
public let kSecReturnRef: CFString = "r_Ref"
public let kSecReturnPersistentRef: CFString = WireKey.returnPersistentRef
public let kSecMatchLimit: CFString = WireKey.matchLimit
public let kSecMatchLimitOne: CFString = WireKey.matchLimitOne
public let kSecMatchLimitAll: CFString = WireKey.matchLimitAll
public let kSecMatchCaseInsensitive: CFString = WireKey.matchCaseInsensitive
public let kSecMatchSearchList: CFString = WireKey.matchSearchList
public let kSecUseKeychain: CFString = WireKey.useKeychain
// Whether a call may ask the person about an item whose access list does not trust the caller
// (docs/native-api.md "Access control"); kSecUseNoAuthenticationUI true means Fail.
public let kSecUseAuthenticationUI: CFString = WireKey.useAuthenticationUI
public let kSecUseAuthenticationUIAllow: CFString = WireKey.useAuthenticationUIAllow
public let kSecUseAuthenticationUIFail: CFString = WireKey.useAuthenticationUIFail
public let kSecUseAuthenticationUISkip: CFString = WireKey.useAuthenticationUISkip
public let kSecUseNoAuthenticationUI: CFString = "u_NoAuthUI"
// Apple's switch between its two keychain implementations, and its own prompt text. Keywell has
// one implementation and words of its own: the client accepts these keys and drops them.
public let kSecUseDataProtectionKeychain: CFString = "nleg"
public let kSecUseOperationPrompt: CFString = "u_OpPrompt"

// kSecAttrAccessible values
public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
public let kSecAttrAccessibleAlways: CFString = "dk"
public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"
public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = "dku"

// kSecAttrProtocol values (four-character codes)
public let kSecAttrProtocolFTP: CFString = "ftp "
public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
public let kSecAttrProtocolHTTP: CFString = "http"
public let kSecAttrProtocolIRC: CFString = "irc "
public let kSecAttrProtocolNNTP: CFString = "nntp"
public let kSecAttrProtocolPOP3: CFString = "pop3"
public let kSecAttrProtocolSMTP: CFString = "smtp"
public let kSecAttrProtocolSOCKS: CFString = "sox "
public let kSecAttrProtocolIMAP: CFString = "imap"
public let kSecAttrProtocolLDAP: CFString = "ldap"
public let kSecAttrProtocolAppleTalk: CFString = "atlk"
public let kSecAttrProtocolAFP: CFString = "afp "
public let kSecAttrProtocolTelnet: CFString = "teln"
public let kSecAttrProtocolSSH: CFString = "ssh "
public let kSecAttrProtocolFTPS: CFString = "ftps"
public let kSecAttrProtocolHTTPS: CFString = "htps"
public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
public let kSecAttrProtocolSMB: CFString = "smb "
public let kSecAttrProtocolRTSP: CFString = "rtsp"
public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
public let kSecAttrProtocolDAAP: CFString = "daap"
public let kSecAttrProtocolEPPC: CFString = "eppc"
public let kSecAttrProtocolIPP: CFString = "ipp "
public let kSecAttrProtocolNNTPS: CFString = "ntps"
public let kSecAttrProtocolLDAPS: CFString = "ldps"
public let kSecAttrProtocolTelnetS: CFString = "tels"
public let kSecAttrProtocolIMAPS: CFString = "imps"
public let kSecAttrProtocolIRCS: CFString = "ircs"
public let kSecAttrProtocolPOP3S: CFString = "pops"

// kSecAttrAuthenticationType values
public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"
