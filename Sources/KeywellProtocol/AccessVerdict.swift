/// What access control says about one caller and one item before anyone is asked.
public enum AccessVerdict: Sendable, Hashable {
    /// The item's list trusts the caller, or the person allowed this connection already.
    case allowed
    /// The caller is not on the list: using the item's secret needs the person's answer.
    case mustAsk
    /// A sandboxed caller the list does not name: for it the item does not exist.
    case hidden
}
