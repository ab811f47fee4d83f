/// What one caller may ask of keywelld in one call, and keep it holding, on both D-Bus faces.
/// Every cap sits far above what real clients do, so that only hostile or broken input meets it;
/// input over a cap is refused with a clear error before any work (docs/secret-service.md,
/// "Limits", has the table and the reasons).
public enum ServiceLimits {
    // MARK: Any incoming call

    /// Values decoded from one incoming call's arguments (a byte array counts as one): bounds
    /// the memory an `as` of empty strings (8 bytes each on the wire, 16 million in a message of
    /// the bus's 128 MiB) would take once decoded. Above every list cap below.
    public static let decodedValuesPerCall = 1 << 20

    /// Bytes of one incoming message on the direct socket; libdbus drops a connection that sends
    /// a bigger one before reading it whole. Above any valid call (a native `Add` at every cap
    /// is about 2 MiB) and above a 50 MB value, which still gets its clear refusal below. The
    /// bus connection keeps the bus's own cap (128 MiB): a lower one there would make libdbus
    /// drop keywelld off the bus whenever any client sent a bigger message
    /// (docs/secret-service.md, "Limits").
    public static let bytesPerMessage = 64 << 20

    /// How long a handler works on a call before it gives up: the default timeout of a D-Bus
    /// call, after which the caller has stopped waiting. Long calls check it (and whether the
    /// caller is still on the bus) as they go.
    public static let callDeadline: Duration = .seconds(25)

    // MARK: Any value (both faces and the direct socket)

    /// Bytes of one secret: `v_Data`, a Secret Service secret, a keychain password. An SSH or
    /// GPG key, a certificate chain or a kubeconfig is a few KiB; gnome-keyring has no cap but
    /// the bus's message size, and macOS keeps items in SQLite rows just as Keywell does.
    public static let bytesPerSecret = 1 << 20

    /// Bytes of an item's label (`labl`, `Item.Label`): names people read, a URL at most.
    public static let bytesPerLabel = 16 << 10

    /// Bytes of any other item value: a string or byte attribute (`gena`, `icmt`, `svce`, …), a
    /// Secret Service attribute's value or `Item.Type`, a string in a list value.
    public static let bytesPerAttributeValue = 16 << 10

    /// Bytes of a Secret Service attribute's name, a native dictionary key, a property's name.
    public static let bytesPerAttributeName = 1 << 10

    /// Bytes of a keychain's name or path, or any other path or name a call takes (a backup's
    /// path, an alias): Linux's PATH_MAX.
    public static let bytesPerKeychainName = 4096

    /// Bytes of a keychain's label (`Collection.Label`).
    public static let bytesPerKeychainLabel = 1024

    // MARK: Secret Service

    /// Object paths in one `GetSecrets`, `Unlock` or `Lock`: all the items of a huge keychain
    /// (a 7 MiB message); the work is linear in it.
    public static let objectPathsPerCall = 100_000

    /// Attributes in one `SearchItems` query or one item (`CreateItem`, the `Attributes`
    /// property). libsecret's schemas have at most 32.
    public static let attributesPerItem = 128

    /// Entries in a `CreateItem` or `CreateCollection` properties dictionary (three are known;
    /// unknown ones are ignored).
    public static let propertiesPerCall = 64

    /// Bytes of a Diffie-Hellman public key in `OpenSession` (1024-bit group: 128).
    public static let sessionKeyBytes = 1024

    /// Open sessions of one bus connection. libsecret opens one per connection; secretstorage
    /// one per item object it reads a secret through, so a script walking a big keychain on one
    /// connection may hold thousands.
    public static let sessionsPerConnection = 4_096

    /// Prompts of one bus connection not completed yet. Each waits for a person, so a client
    /// has one or two; an Unlock prompt keeps the paths it will report (up to
    /// `objectPathsPerCall` of them).
    public static let promptsPerConnection = 16

    // MARK: Another Secret Service, as its client (`keywell migrate --from-secret-service`)

    /// Collections taken from the service being migrated from: people have a handful. Its items
    /// per collection are capped by `objectPathsPerCall`, attributes per item by
    /// `attributesPerItem`; a service that answers with more is refused with a clear error.
    public static let migrationCollections = 1_024

    /// Items whose secrets one `GetSecrets` asks the service being migrated from for.
    public static let migrationSecretsPerCall = 500

    /// Paths a collection's `Items` may list and still go out with every item made or deleted
    /// (about 8 KiB of message). A longer list goes out at most once per
    /// `longItemsListInterval`: each send scans the keychain and is as big as it. Only bursts
    /// see the difference: a change a second apart from the last one still sends at once.
    public static let itemsSentWithEveryChange = 100

    /// Items of a collection that each get `ItemChanged` and their own `Locked` when it locks or
    /// unlocks, as gnome-keyring sends them. A bigger collection sends only its own signals
    /// (`CollectionChanged`, `Locked`): one lock of a 100,000-item keychain would otherwise queue
    /// 200,000 messages and leave their heap behind (docs/secret-service.md, "Big collections").
    public static let itemsSignalledOnLockChange = 100

    /// How often a longer `Items` list goes out while its collection keeps changing: a 100,000-item
    /// keychain written in a loop sends one 7 MiB message a second, not one per write.
    public static let longItemsListInterval: Duration = .seconds(1)

    // MARK: Native API (org.keywell.Keychain1)

    /// Keys in one attribute or query dictionary: about 35 exist.
    public static let dictionaryEntries = 64

    /// Keychains in one list (`SetSearchList`, `m_SearchList`) and strings in one `as` value.
    public static let keychainListLength = 1024

    // MARK: Secret portal (org.freedesktop.impl.portal.Secret)

    /// `RetrieveSecret` calls in progress at once. Each may wait for an unlock dialog (one is
    /// shown at a time, the others wait behind it); apps ask once at start.
    public static let portalCallsInProgress = 16

    /// How long handing a secret over waits for room in the app's pipe before giving up.
    public static let portalWritePatience: Duration = .seconds(5)
}

/// Caps of one export file (docs/export-import.md, "Caps"): an import holds the whole file in
/// memory before its one transaction, so these bound what a file can make the daemon hold.
public enum ExportLimits {
    /// Items in one export file.
    public static let itemsPerFile = 100_000
    /// Bytes of one export file.
    public static let bytesPerFile = 256 << 20
    /// Bytes of one record (an item, its attributes and its secret) before encryption.
    public static let bytesPerRecord = 4 << 20
}

/// Caps of the KWallet face (docs/kwallet.md, "Limits"): what one entry, map or client may make
/// keywelld hold. A call over a cap fails before anything is written.
public enum KWalletLimits {
    /// Bytes of one entry's value (a password's UTF-8, a binary entry, a map's QDataStream
    /// bytes): an export record's cap, so that every entry can be exported.
    public static let entryBytes = ExportLimits.bytesPerRecord
    /// Pairs in one map entry (form data, account settings: tens).
    public static let mapEntries = 10_000
    /// Bytes of a folder or key name: label `folder/key` fits the engine's 1,024-byte label.
    public static let nameBytes = 511
    /// Handles open at once (one per wallet and application id); kwalletd keeps 20 wallets.
    public static let openHandles = 4_096
    /// Empty folders made by `createFolder` kept in memory, per keychain (a folder with an entry
    /// is its entries').
    public static let emptyFolders = 1_024
}
