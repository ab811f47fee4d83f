import Foundation
import KeywellProtocol

// Access lists on items with Apple's legacy SecAccess / SecTrustedApplication calls
// (docs/access-control.md, "Access lists on items"). An access holds one list: the applications
// trusted to use an item, or any application. Keywell stores and returns it; prompting
// applications that are not on it is for keywelld to do.

/// Apple's `SecTrustedApplicationRef`: one application identity (`exe:<path>[;sha256=<hex>]` for
/// a program made from a path).
// @unchecked: immutable; NSObject keeps the compiler from seeing it.
public final class SecTrustedApplication: NSObject, @unchecked Sendable {
    /// The identity string, as `dump-keychain -a` prints it.
    public let identity: String

    init(identity: String) {
        self.identity = identity
    }

    public override func isEqual(_ object: Any?) -> Bool { (object as? SecTrustedApplication)?.identity == identity }
    public override var hash: Int { identity.hashValue }
    public override var description: String { "<SecTrustedApplication \(identity)>" }
}

/// Apple's `SecAccessRef`: an item's access list, the value of `kSecAttrAccess`.
// @unchecked: immutable; NSObject keeps the compiler from seeing it.
public final class SecAccess: NSObject, @unchecked Sendable {
    let list: AccessList
    /// What Apple's access descriptor names (shown as the entry's description); Keywell does not store it.
    public let descriptor: String

    init(list: AccessList, descriptor: String = "") {
        self.list = list
        self.descriptor = descriptor
    }

    /// An access that trusts any application (what `keywell add-generic-password -A` stores).
    public static func anyApplication(descriptor: String = "") -> SecAccess {
        SecAccess(list: .anyApplication, descriptor: descriptor)
    }

    /// The applications trusted, in order; nil when any application is.
    public var trustedApplications: [SecTrustedApplication]? {
        list.applications?.map(SecTrustedApplication.init(identity:))
    }

    public override func isEqual(_ object: Any?) -> Bool { (object as? SecAccess)?.list == list }
    public override var hash: Int { list.hashValue }
}

/// Apple's `SecKeychainItemRef` for the legacy item calls: an item by its persistent reference.
// @unchecked: immutable; NSObject keeps the compiler from seeing it.
public final class SecKeychainItem: NSObject, @unchecked Sendable {
    /// The item's `kSecValuePersistentRef`.
    public let persistentReference: Data

    init(persistentReference: Data) {
        self.persistentReference = persistentReference
    }

    public override func isEqual(_ object: Any?) -> Bool { (object as? SecKeychainItem)?.persistentReference == persistentReference }
    public override var hash: Int { persistentReference.hashValue }
}

/// Makes a trusted application from a program's path: `exe:<real path>` for a program only root
/// can replace, else `exe:<real path>;sha256=<hash now>` (docs/access-control.md).
/// A nil path is the calling program (`/proc/self/exe`). A missing or unreadable file is
/// errSecParam.
///
/// ```swift
/// var app: SecTrustedApplication?
/// let status = SecTrustedApplicationCreateFromPath("/usr/bin/git", &app)
/// ```
public func SecTrustedApplicationCreateFromPath(
    _ path: UnsafePointer<CChar>?, _ app: UnsafeMutablePointer<SecTrustedApplication?>
) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let identity: String
        if let path {
            identity = try ExecutableIdentity.of(path: String(cString: path))
        } else {
            identity = try ExecutableIdentity.ofThisProgram()
        }
        app.pointee = SecTrustedApplication(identity: identity)
    }
}

/// Makes an access for a new item. `trustedlist` holds `SecTrustedApplication`s: nil trusts
/// only the calling program, as on macOS; an empty array trusts none. At most
/// `AccessList.maxApplications` (64) applications, else errSecParam. For any application,
/// `SecAccess.anyApplication()`.
///
/// ```swift
/// var git: SecTrustedApplication?
/// _ = SecTrustedApplicationCreateFromPath("/usr/bin/git", &git)
/// var access: SecAccess?
/// let status = SecAccessCreate("Git credentials" as CFString, [git!] as CFArray, &access)
/// let query = [kSecClass: kSecClassGenericPassword, kSecAttrService: "git", kSecAttrAccount: "me",
///              kSecValueData: Data("token".utf8), kSecAttrAccess: access!] as CFDictionary
/// SecItemAdd(query, nil)
/// ```
public func SecAccessCreate(
    _ descriptor: CFString, _ trustedlist: CFArray?, _ accessRef: UnsafeMutablePointer<SecAccess?>
) -> OSStatus {
    osStatus { () throws(KeychainError) in
        var identities: [String] = []
        if let trustedlist {
            let elements = trustedlist as [AnyObject]
            guard elements.count <= AccessList.maxApplications else {
                throw .param("an access list holds at most \(AccessList.maxApplications) applications")
            }
            for element in elements {
                guard let app = element as? SecTrustedApplication else {
                    throw .param("the trusted list holds something that is not a SecTrustedApplication")
                }
                identities.append(app.identity)
            }
        } else {
            identities = [try ExecutableIdentity.ofThisProgram()]
        }
        accessRef.pointee = SecAccess(list: try AccessList.validated(identities), descriptor: String(describing: descriptor))
    }
}

/// Finds the item a persistent reference names (`kSecValuePersistentRef`), for the legacy item
/// calls. errSecItemNotFound when it names none.
///
/// ```swift
/// var item: SecKeychainItem?
/// let status = SecKeychainItemCopyFromPersistentReference(reference as CFData, &item)
/// ```
public func SecKeychainItemCopyFromPersistentReference(
    _ persistentItemRef: CFData, _ itemRef: UnsafeMutablePointer<SecKeychainItem?>
) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let reference = persistentItemRef as Data
        _ = try KeywellClient.default.copyMatching([WireKey.valuePersistentRef: .data(reference)])
        itemRef.pointee = SecKeychainItem(persistentReference: reference)
    }
}

/// Copies an item's access list.
///
/// ```swift
/// var access: SecAccess?
/// if SecKeychainItemCopyAccess(item, &access) == errSecSuccess {
///     print(access!.trustedApplications?.map(\.identity) ?? ["any application"])
/// }
/// ```
public func SecKeychainItemCopyAccess(_ itemRef: SecKeychainItem, _ access: UnsafeMutablePointer<SecAccess?>) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let matches = try KeywellClient.default.copyMatching(
            [WireKey.valuePersistentRef: .data(itemRef.persistentReference), WireKey.returnAccess: .bool(true)])
        guard let value = matches.first?[WireKey.access] else {
            throw KeychainError(SecStatus.invalidItemRef, detail: "the daemon returned no access list")
        }
        access.pointee = SecAccess(list: try AccessList(wire: value))
    }
}

/// Replaces an item's access list.
///
/// ```swift
/// let status = SecKeychainItemSetAccess(item, SecAccess.anyApplication())
/// ```
public func SecKeychainItemSetAccess(_ itemRef: SecKeychainItem, _ access: SecAccess) -> OSStatus {
    osStatus { () throws(KeychainError) in
        try KeywellClient.default.update(
            [WireKey.valuePersistentRef: .data(itemRef.persistentReference)], attributes: [WireKey.access: access.list.wireValue])
    }
}
