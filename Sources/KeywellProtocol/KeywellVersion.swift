/// The release both programs report (`keywell --version`, `keywelld --version`, the control
/// socket's ping answer). Defined once so a release changes one line.
public enum KeywellVersion {
    public static let string = "0.1.0"
}
