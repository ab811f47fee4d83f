/// The error numbers in a pinentry's `ERR` replies, by which its answers are read (never by their
/// text; docs/access-control.md, "The question"): libgpg-error's code combined with
/// GPG_ERR_SOURCE_PINENTRY (5 << 24). keywelld reads them; the benchmarks' scripted pinentries
/// answer with them.
public enum PinentryErrorCode {
    private static let sourcePinentry = 5 << 24
    /// GPG_ERR_NOT_CONFIRMED (114), 83886194: the NOTOK button — Always Allow.
    public static let notConfirmed = sourcePinentry | 114
    /// GPG_ERR_CANCELED (99), 83886179: the Deny button, Escape, the window closed.
    public static let cancelled = sourcePinentry | 99
    /// GPG_ERR_TIMEOUT (62), 83886142: nobody answered within SETTIMEOUT.
    public static let timedOut = sourcePinentry | 62
}
