import KeywellNativeClient

/// `--json` shapes for keychains. Field names are stable (documented in `--help`):
/// `name`, `path`, and for `show-keychain-info` also `locked`, `itemCount`, `lockOnSleep`, `lockOnScreenLock`,
/// `lockAfterSeconds` (null = never), `enforceAccess`, `isDefault`, `isLogin`.
enum KeychainJSON {
    static func reference(_ name: String, _ context: CommandContext) -> JSONValue {
        .object([
            ("name", .string(context.naming.displayName(for: name))),
            ("path", .string(context.naming.path(for: name))),
        ])
    }

    static func info(_ info: KeychainInfo, _ context: CommandContext) -> JSONValue {
        .object([
            ("name", .string(info.name)),
            ("path", .string(info.path)),
            ("locked", .bool(info.locked)),
            ("itemCount", .number(Int64(info.itemCount))),
            ("lockOnSleep", .bool(info.lockOnSleep)),
            ("lockOnScreenLock", .bool(info.lockOnScreenLock)),
            ("lockAfterSeconds", info.lockAfterSeconds == 0 ? .null : .number(Int64(info.lockAfterSeconds))),
            ("enforceAccess", .bool(info.enforceAccess)),
            ("isDefault", .bool(info.isDefault)),
            ("isLogin", .bool(info.isLogin)),
        ])
    }
}
