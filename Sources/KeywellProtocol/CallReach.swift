/// What a call reaches, for the one rule of who may call what (docs/access-control.md,
/// "Sandboxed callers"): every method of every face Keywell serves has exactly one reach, and a
/// sandboxed caller (`flatpak:`, `snap:`) or one that cannot be identified may make only calls
/// that reach items or itself.
///
/// ```swift
/// NativeMethod.copyMatching.reach                   // .items
/// NativeMethod.setDefaultKeychain.reach             // .shared("set the default keychain")
/// SecretServiceProtocol.reach(interface: SecretServiceProtocol.serviceInterface,
///                             member: SecretServiceProtocol.Member.setAlias)
/// ```
public enum CallReach: Sendable, Hashable {
    /// Items, each judged by its own access list: a sandboxed caller finds only the items whose
    /// lists name it, and makes items that trust it alone.
    case items
    /// The caller itself (`WhoAmI`) or what it opened (its sessions and prompts).
    case caller
    /// What every program of the user shares: keychains, their passwords, lock state and
    /// settings, the default keychain and the search list, aliases, backups and files on the
    /// host. `action` completes "… cannot": "create a keychain".
    case shared(action: String)
}

extension NativeMethod {
    /// The method's reach: only the four item calls and `WhoAmI` are open to a sandboxed caller.
    public var reach: CallReach {
        switch self {
        case .add, .copyMatching, .update, .delete: .items
        case .whoAmI: .caller
        case .createKeychain: .shared(action: "create a keychain")
        case .deleteKeychain: .shared(action: "delete a keychain")
        case .listKeychains: .shared(action: "list the user's keychains")
        case .getSearchList: .shared(action: "read the search list")
        case .setSearchList: .shared(action: "set the search list")
        case .getDefaultKeychain: .shared(action: "read which keychain is the default")
        case .setDefaultKeychain: .shared(action: "set the default keychain")
        case .getLoginKeychain: .shared(action: "read which keychain is the login keychain")
        case .unlock: .shared(action: "unlock a keychain")
        case .lock, .lockAll: .shared(action: "lock the user's keychains")
        case .changePassword: .shared(action: "change a keychain's password")
        case .getInfo: .shared(action: "read a keychain's settings")
        case .setSettings: .shared(action: "change a keychain's settings")
        case .backupKeychain: .shared(action: "back up a keychain")
        case .restoreKeychain: .shared(action: "restore a keychain")
        case .migrateKeyrings, .getMigrationStatus: .shared(action: "migrate keyrings")
        case .exportGnomeKeyring, .exportKeychains: .shared(action: "export keychains")
        case .inspectExport, .importExport: .shared(action: "import an export file")
        case .setSessionDisplay: .shared(action: "set the display keywelld's dialogs go to")
        case .getAccessStatus: .shared(action: "read how access questions are shown and what Always Allow granted")
        case .syncEnable, .syncStatus, .syncConflicts, .syncConflictSecret, .syncDisable, .syncRekey:
            .shared(action: "manage a keychain's sync between machines")
        }
    }
}

extension WireKey {
    /// Keys of an item call that only an unconfined caller may send, with what each would do: a
    /// sandboxed caller's items go to the default keychain, come from the search list and trust
    /// that caller alone, and no keychain name or host path is taken from it.
    public static let refusedFromSandboxes: [String: String] = [
        useKeychain: "name a keychain",
        matchSearchList: "name the keychains to search",
        access: "set an access list",
    ]
}

extension SecretServiceProtocol {
    /// The reach of a Secret Service call: what changes collections, aliases, lock state or
    /// master passwords is shared; searching, reading, storing and unlocking items (Unlock asks
    /// the person) reach items; sessions and prompts are the caller's own.
    public static func reach(interface: String?, member: String) -> CallReach {
        // By interface first, then member: every call pays this, and a tuple's patterns compared
        // the interface name once per case.
        switch interface {
        case gnomeKeyringInternalInterface?:
            return .shared(action: "use gnome-keyring's private interface")
        case serviceInterface?:
            switch member {
            case Member.createCollection: return .shared(action: "create a collection")
            case Member.lock, Member.lockService: return .shared(action: "lock the user's keychains")
            case Member.setAlias: return .shared(action: "change which collection an alias names")
            case Member.openSession: return .caller
            default: return .items
            }
        case collectionInterface?:
            return member == Member.delete ? .shared(action: "delete a collection") : .items
        case sessionInterface?, promptInterface?:
            return .caller
        default:
            return .items
        }
    }

    /// The reach of setting a property: a collection's `Label` is every app's.
    public static func reach(settingProperty name: String, interface: String) -> CallReach {
        interface == collectionInterface ? .shared(action: "rename a collection") : .items
    }
}

extension KWalletProtocol {
    /// The reach of a KWallet call (overloads differ by `signature`). Wallets are keychains:
    /// locking one for every application, deleting one, changing its password and listing or
    /// managing them are shared; opening (which asks the person when locked) and every call on
    /// entries reach items, each judged by its own access list.
    public static func reach(member: String, signature: String) -> CallReach {
        switch member {
        case KWalletProtocol.Member.close where signature == "sb", KWalletProtocol.Member.closeAllWallets:
            return .shared(action: "lock the user's keychains")
        case KWalletProtocol.Member.deleteWallet:
            return .shared(action: "delete a keychain")
        case KWalletProtocol.Member.changePassword:
            return .shared(action: "change a keychain's password")
        case KWalletProtocol.Member.pamOpen:
            return .shared(action: "unlock a keychain")
        case KWalletProtocol.Member.wallets, KWalletProtocol.Member.users, KWalletProtocol.Member.disconnectApplication,
             KWalletProtocol.Member.reconfigure:
            return .shared(action: "list or manage the user's wallets")
        default:
            return .items
        }
    }
}
