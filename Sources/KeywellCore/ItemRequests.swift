import Foundation
import KeywellProtocol

/// Which of `r_Data`, `r_Attributes`, `r_PersistentRef` a call asked for.
struct ReturnRequest: Equatable, Sendable {
    var data = false
    var attributes = false
    var persistentRef = false
    /// `r_Access`: the item's access list.
    var access = false
    /// `r_SSAttributes` (with `r_Attributes`): the free-form rows too.
    var secretServiceAttributes = false

    var isEmpty: Bool { !data && !attributes && !persistentRef && !access }
}

/// Where a call looks for items.
enum KeychainScope: Equatable, Sendable {
    /// `u_Keychain`: this keychain only; it must exist.
    case keychain(String)
    /// `m_SearchList`: these, in order, skipping missing ones.
    case list([String])
    /// The user's search list.
    case searchList
}

/// A parsed `Add` dictionary.
struct NewItem: Sendable {
    var itemClass: ItemClass
    var attributes: [ItemAttribute: AttributeValue]
    var secret: Data
    /// `u_Keychain`, else the default keychain.
    var keychain: String?
    var returns: ReturnRequest
    /// `acls`, when given; else `AccessList.forNewItem` decides.
    var access: AccessList?
}

/// `u_AuthUI`: what a call does with items whose access list does not trust its caller.
enum UserInteraction: Sendable {
    /// Ask the person (`u_AuthUIA`, the default).
    case allow
    /// `errSecInteractionNotAllowed` instead of asking (`u_AuthUIF`).
    case fail
    /// Leave those items out (`u_AuthUIS`).
    case skip
}

/// A parsed `CopyMatching`, `Update` or `Delete` query.
struct ItemQuery: Sendable {
    var filter: ItemFilter
    var persistentRef: PersistentRef?
    var returns = ReturnRequest()
    var limit = MatchLimit.one
    var scope = KeychainScope.searchList
    var interaction = UserInteraction.allow
}

/// A parsed `Update` attributes dictionary.
struct ItemChanges: Sendable {
    var attributes: [ItemAttribute: AttributeValue] = [:]
    /// A new secret, when `v_Data` is given.
    var secret: Data?
    /// A new access list, when `acls` is given.
    var access: AccessList?
}
