import KeywellProtocol

/// The tables of a keychain file (format version 3; docs/file-format.md).
///
/// `keychain` holds one row: identity, the wrapped master key, the lock settings and the
/// header's MAC. `item.mac` is each item's integrity MAC (`ItemIntegrity`), `item.access` its
/// access list (`ItemAccessColumn`).
/// `item` holds one row per item: every attribute as given, plus `<attr>_n` (NFC, for exact
/// matches and uniqueness) and `<attr>_f` (NFC case-folded, for `m_CaseInsensitive`) for text
/// attributes, and `port_n`. Primary-key parts an item lacks are "" / 0 in those columns, so
/// the partial unique indexes enforce each class's primary key.
/// `item_attribute` holds free-form string attributes (for the Secret Service).
enum KeychainSchema {
    /// A column a later format added to a table that files of an older format already have:
    /// part of the CREATE statement of newer files, added by `alterStatement` to older ones.
    struct AddedColumn: Sendable {
        let table: String
        let definition: String

        var alterStatement: String { "ALTER TABLE \(table) ADD COLUMN \(definition)" }
    }

    /// The statements that make a new keychain file.
    static var statements: [String] {
        statements(including: addedInVersion2 + addedInVersion3 + [screenLockColumn])
    }

    /// The statements that made a file of format 1 extended by `added`, in that order: what a
    /// Keywell of that time wrote (`KeychainSchemaCheck` replays them).
    static func statements(including added: [AddedColumn]) -> [String] {
        func addedColumns(_ table: String) -> [String] { added.filter { $0.table == table }.map(\.definition) }
        return [
            createTable("keychain", keychainColumnDefinitions + addedColumns("keychain")),
            createTable("item", itemColumnDefinitions + addedColumns("item")),
            index("item_genp_key", unique: true, class: .genericPassword, ["svce_n", "acct_n", "agrp_n"]),
            index("item_inet_key", unique: true, class: .internetPassword,
                  ["srvr_n", "acct_n", "sdmn_n", "ptcl_n", "atyp_n", "port_n", "path_n", "agrp_n"]),
            index("item_genp_folded", unique: false, class: .genericPassword, ["svce_f", "acct_f"]),
            index("item_inet_folded", unique: false, class: .internetPassword, ["srvr_f", "acct_f"]),
            "CREATE INDEX item_label ON item (labl_n)",
            """
            CREATE TABLE item_attribute (
                item_id INTEGER NOT NULL REFERENCES item(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                value TEXT NOT NULL,
                PRIMARY KEY (item_id, name)
            ) WITHOUT ROWID
            """,
            "CREATE INDEX item_attribute_lookup ON item_attribute (name, value)",
        ]
    }

    /// The keychain's label (`KeychainStore.writeLabel`), made the first time one is set: any
    /// file of any format may have it or not.
    static let labelTable = "CREATE TABLE IF NOT EXISTS keychain_metadata (name TEXT PRIMARY KEY, value TEXT NOT NULL)"

    /// Sync between machines (docs/sync.md, "What the keychain keeps"): settings, each synced
    /// item's version, and the losing versions merges kept. Made by `sync enable` or `sync join`:
    /// any file of any format may have them or not, and older Keywell versions ignore them.
    static let syncTables = [
        "CREATE TABLE IF NOT EXISTS sync_setting (name TEXT PRIMARY KEY, value BLOB NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS sync_item (
            tag BLOB PRIMARY KEY,
            fingerprint BLOB,
            modified INTEGER NOT NULL,
            machine BLOB NOT NULL,
            base_modified INTEGER,
            base_machine BLOB,
            deleted INTEGER NOT NULL,
            identity BLOB NOT NULL
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE IF NOT EXISTS sync_conflict (
            id INTEGER PRIMARY KEY,
            label TEXT NOT NULL,
            service TEXT NOT NULL,
            account TEXT NOT NULL,
            modified INTEGER NOT NULL,
            machine TEXT NOT NULL,
            secret BLOB NOT NULL
        )
        """,
    ]

    /// Added within format 2 (files made before have it off): written with the first header
    /// that needs it (`KeychainDatabase.writeHeader`).
    static let screenLockColumn = AddedColumn(table: "keychain", definition: "lock_on_screen_lock INTEGER NOT NULL DEFAULT 0")

    /// Format 1 → 2: the MAC columns (filled by `KeychainUpgrade` in the same transaction).
    static let addedInVersion2 = [
        AddedColumn(table: "item", definition: "mac BLOB"),
        AddedColumn(table: "keychain", definition: "settings_mac BLOB"),
    ]

    /// Format 2 → 3: access lists (NULL = any application) and the keychain's `enforceAccess`
    /// (off for files that predate it). Item MACs stay valid: "any" adds nothing to them.
    static let addedInVersion3 = [
        AddedColumn(table: "item", definition: "access TEXT"),
        AddedColumn(table: "keychain", definition: "enforce_access INTEGER NOT NULL DEFAULT 0"),
    ]

    private static func createTable(_ name: String, _ columns: [String]) -> String {
        "CREATE TABLE \(name) (\n    " + columns.joined(separator: ",\n    ") + "\n)"
    }

    /// Format 1's header: identity, the wrapped master key and the lock settings.
    private static let keychainColumnDefinitions = [
        "id INTEGER PRIMARY KEY CHECK (id = 1)",
        "format_version INTEGER NOT NULL",
        "uuid BLOB NOT NULL",
        "kdf_salt BLOB NOT NULL",
        "kdf_ops_limit INTEGER NOT NULL",
        "kdf_mem_limit INTEGER NOT NULL",
        "wrap_nonce BLOB NOT NULL",
        "wrapped_key BLOB NOT NULL",
        "lock_on_sleep INTEGER NOT NULL",
        "lock_after_seconds INTEGER NOT NULL",
    ]

    /// Format 1's item columns.
    private static var itemColumnDefinitions: [String] {
        var columns = [
            "id INTEGER PRIMARY KEY",
            "uuid BLOB NOT NULL UNIQUE",
            "class TEXT NOT NULL",
        ]
        for attribute in ItemAttribute.allCases {
            columns.append("\"\(attribute.name)\" \(sqlType(attribute.kind))")
        }
        for column in ItemTable.matchColumns {
            columns.append("\(column.name) \(column.isNumeric ? "INTEGER" : "TEXT")")
        }
        columns.append("secret BLOB NOT NULL")
        return columns
    }

    private static func sqlType(_ kind: AttributeKind) -> String {
        switch kind {
        case .text, .fourCharCode: "TEXT"
        case .integer, .bool, .date: "INTEGER"
        case .data: "BLOB"
        }
    }

    /// Partial indexes: queries name the class as a literal so SQLite can use them.
    private static func index(_ name: String, unique: Bool, class itemClass: ItemClass, _ columns: [String]) -> String {
        "CREATE \(unique ? "UNIQUE " : "")INDEX \(name) ON item (\(columns.joined(separator: ", "))) "
            + "WHERE class = '\(itemClass.rawValue)'"
    }
}
