import KeywellProtocol
import KeywellSystem

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
    /// The list texts already found to trust this caller by themselves, kept across reads for
    /// one connection; nil when the face keeps none (every read then judges its lists afresh).
    var trustingLists: TrustingLists? { get }
}

extension ItemAccessScreening {
    public var trustingLists: TrustingLists? { nil }
}

/// List texts (the stored `item.access` column) whose list trusts one caller, as a verdict of
/// `.allowed` by the list alone. A text names its list completely and a connection's identity
/// never changes, so an entry cannot go stale: an edited list is another text. Bounded; full,
/// it starts again.
public final class TrustingLists: Sendable {
    static let capacity = 32
    /// Byte for byte: a list naming "café" in other bytes names another program. `last` is the
    /// text last found here: the items a caller reads mostly share one list, kept as one copy by
    /// the checked rows, so the next read compares it in place (the same storage is the same
    /// bytes) instead of hashing it (docs/performance.md, "Reads with fewer steps").
    private let texts = Protected<(all: Set<ExactText>, last: String?)>(([], nil))

    public init() {}

    func contains(_ text: String) -> Bool {
        texts.withLock { texts in
            if let last = texts.last, last.isExactly(text) { return true }
            guard texts.all.contains(ExactText(text)) else { return false }
            texts.last = text
            return true
        }
    }

    func insert(_ text: String) {
        texts.withLock { texts in
            if texts.all.count >= Self.capacity { texts.all.removeAll(keepingCapacity: true) }
            texts.all.insert(ExactText(text))
            texts.last = text
        }
    }
}
