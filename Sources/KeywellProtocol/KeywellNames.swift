import CKeywellControl

/// Bus names, object paths and interface names of the native API (docs/native-api.md "Names").
/// The interface's name (`interface`) is generated from dbus/org.keywell.Keychain1.xml.
public enum KeywellNames {
    public static let busName = "org.keywell.Keychain"
    public static let objectPath = "/org/keywell/Keychain"
    public static let errorPrefix = "org.keywell.Keychain1.Error."
    public static let loginKeychain = "login"

    public static let secretsBusName = "org.freedesktop.secrets"
    public static let secretsObjectPath = "/org/freedesktop/secrets"

    /// The daemon's folder in the user's runtime folder (`$XDG_RUNTIME_DIR/keywell`), which
    /// also holds the PAM module's control socket (docs/control-protocol.md).
    public static let runtimeFolder = KW_CONTROL_FOLDER
    /// The native API without the bus: `$XDG_RUNTIME_DIR/keywell/native`, the same object and
    /// methods as on the bus, served straight to clients of this user (docs/native-api.md,
    /// "The direct socket").
    public static let directSocket = "native"
    /// The OpenSSH agent: `$XDG_RUNTIME_DIR/keywell/ssh-agent` (docs/ssh.md).
    public static let sshAgentSocket = "ssh-agent"
    /// The login unlock's enrolment in the user's data folder: `$XDG_DATA_HOME/keywell/login-unlock`
    /// (docs/login-unlock.md, "The files").
    public static let loginUnlockFile = "login-unlock"
    /// The environment variable naming the TPM: a TCTI configuration string (docs/login-unlock.md).
    public static let tpmEnvironment = "KEYWELL_TPM_TCTI"
}
