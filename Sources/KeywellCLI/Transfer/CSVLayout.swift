/// The CSV column layouts of browsers and password managers (docs/export-import.md, "CSV"):
/// Keywell writes Chromium's (`name,url,username,password,note`) and reads any of these by
/// their header names, in any order and case:
///
/// - Chromium: `name,url,username,password,note`
/// - Firefox: `url,username,password,httpRealm,formActionOrigin,guid,timeCreated,timeLastUsed,timePasswordChanged`
/// - Bitwarden: `folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp`
/// - KeePassXC: `Group,Title,Username,Password,URL,Notes` (then TOTP, Icon, Last Modified, Created)
struct CSVLayout: Equatable {
    static let exportHeader = ["name", "url", "username", "password", "note"]

    var name: Int?
    var url: Int?
    var username: Int?
    var password: Int
    var note: Int?
    /// Firefox's `httpRealm`: an internet password's security domain.
    var realm: Int?
    /// Bitwarden's `type`: only `login` rows are passwords (the others are notes or cards).
    var type: Int?
    /// Firefox's `timePasswordChanged` (milliseconds since 1970): what `--newer` compares.
    var changed: Int?

    nonisolated(unsafe) private static let names: [String: WritableKeyPath<CSVLayout, Int?>] = [
        "name": \.name, "title": \.name,
        "url": \.url, "login_uri": \.url,
        "username": \.username, "login_username": \.username,
        "note": \.note, "notes": \.note,
        "httprealm": \.realm,
        "type": \.type,
        "timepasswordchanged": \.changed,
    ]

    /// The layout a header line describes; nil when it has no password column, or neither a
    /// name nor a URL column.
    init?(header: [String]) {
        var layout = CSVLayout(password: -1)
        for (index, title) in header.enumerated() {
            let key = title.lowercased()
            if key == "password" || key == "login_password" {
                layout.password = index
            } else if let path = Self.names[key], layout[keyPath: path] == nil {
                layout[keyPath: path] = index
            }
        }
        guard layout.password >= 0, layout.name != nil || layout.url != nil else { return nil }
        self = layout
    }

    private init(password: Int) { self.password = password }
}
