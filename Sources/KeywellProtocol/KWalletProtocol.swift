/// KWallet's D-Bus names (KDE Frameworks' `org.kde.KWallet`, as kwalletd 5.103 declares it),
/// which keywelld serves so that KDE applications find a wallet (docs/kwallet.md).
public enum KWalletProtocol {
    // `interface` and the `Member` names are generated from dbus/org.kde.KWallet.xml (Generated/).
    /// KF5 clients call `org.kde.kwalletd5`, KF6 clients `org.kde.kwalletd6`; each has its object.
    public static let busNames = ["org.kde.kwalletd5", "org.kde.kwalletd6"]
    public static let objectPaths = ["/modules/kwalletd5", "/modules/kwalletd6"]
    /// The wallet KDE applications open by default (`localWallet`, `networkWallet`): the
    /// default keychain.
    public static let defaultWallet = "kdewallet"
    /// The free-form attributes an entry is stored under, as KWallet 6's Secret Service bridge
    /// and QtKeychain store them.
    public static let schema = "org.qt.keychain"
    public static let folderAttribute = "server"
    public static let keyAttribute = "user"
    public static let typeAttribute = "type"
}
