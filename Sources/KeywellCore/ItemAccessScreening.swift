import KeywellProtocol

/// How the engine lets access control judge the items a native call matched
/// (docs/access-control.md "Who is asked"): keywelld implements it for the calling application.
/// The engine reads each item's list in the snapshot it reads the item from, asks for verdicts,
/// and asks the person once per call about every item that needs it, before any secret leaves
/// or any change is made.
public protocol ItemAccessScreening: Sendable {
    /// Whether some verdicts may be `.hidden` (a sandboxed caller). Searches then apply
    /// `m_Limit` after screening, so hidden items do not take the places of visible ones.
    var mayHide: Bool { get }
    /// The verdict on one item; `item` is built only when the list alone does not decide.
    func verdict(_ list: AccessList, item: () -> AccessItem) -> AccessVerdict
    /// Asks the person about `items` (blocking) and returns when they may be used;
    /// `errSecAuthFailed` when refused, `errSecInteractionNotAllowed` when `interactionAllowed`
    /// is false.
    func ask(about items: [AccessItem], interactionAllowed: Bool) throws(KeychainError)
}
