import KeywellNativeClient
import KeywellProtocol
import KeywellSystem

/// `find-generic-password`, `find-internet-password`, `delete-generic-password`,
/// `delete-internet-password`.
enum FindDeleteCommands {
    static func findGeneric(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        find(.genericPassword, context, invocation)
    }

    static func findInternet(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        find(.internetPassword, context, invocation)
    }

    static func deleteGeneric(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        delete(.genericPassword, context, invocation)
    }

    static func deleteInternet(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        delete(.internetPassword, context, invocation)
    }

    private static func filters(_ itemClass: ItemClass, _ context: CommandContext, _ invocation: Invocation) -> WireDictionary? {
        do {
            return itemClass == .genericPassword
                ? try ItemFilters.generic(invocation, context)
                : try ItemFilters.internet(invocation, context)
        } catch {
            return nil
        }
    }

    /// The first match, or the exit status after printing what `security` prints.
    private static func search(_ itemClass: ItemClass, _ filters: WireDictionary, secret: Bool,
                               _ context: CommandContext, _ invocation: Invocation) -> Result<FoundItem, CommandExit> {
        let search = ItemSearch(context: context)
        do throws(ItemSearch.Failure) {
            if invocation.operands.isEmpty {
                return .success(try search.firstInSearchList(itemClass, filters, secret: secret))
            }
            let scope: [String]
            do {
                scope = try search.scope(invocation.operands)
            } catch {
                throw ItemSearch.Failure(status: error.status, keychain: nil)
            }
            return .success(try search.first(itemClass, filters, scope: scope, secret: secret))
        } catch {
            // A secret that cannot be read prints nothing in `security` [C C6]; only our hint.
            if error.status != SecStatus.interactionNotAllowed {
                context.diagnostics.perror("SecKeychainSearchCopyNext", error.status)
            }
            if error.status != SecStatus.itemNotFound {
                context.diagnostics.hint(for: error.status, detail: error.detail, keychain: error.keychain)
            } else if let typed = invocation.operands.first(where: { error.missing.contains(context.naming.daemonName(for: $0)) }) {
                missingKeychainHint(typed, itemClass, context)
            }
            return .failure(CommandExit(status: error.status))
        }
    }

    /// `find-generic-password myapp`: a forgotten `-s` makes the service a keychain name, which
    /// `security` skips in silence. People get told.
    private static func missingKeychainHint(_ typed: String, _ itemClass: ItemClass, _ context: CommandContext) {
        let what = itemClass == .genericPassword ? "service" : "server"
        context.diagnostics.hint("no keychain \"\(typed)\" exists (names after the options are keychains); "
            + "to search for the \(what) \"\(typed)\", use -s \(ShellQuoting.quote(typed))")
    }

    private static func find(_ itemClass: ItemClass, _ context: CommandContext, _ invocation: Invocation) -> Int32 {
        guard let filters = filters(itemClass, context, invocation) else { return CommandStatus.failure }
        let passwordOnly = invocation.has("w")
        let wantsSecret = passwordOnly || invocation.has("g")
        let item: FoundItem
        switch search(itemClass, filters, secret: wantsSecret, context, invocation) {
        case .success(let found): item = found
        case .failure(let exit): return exit.status
        }
        defer { item.secret?.wipe() }
        if passwordOnly, !invocation.json {
            (item.secret ?? SecretBytes(count: 0)).withArray { context.output.writeSecret(passwordLine($0)) }
            return CommandStatus.success
        }
        // Only the printed forms need the keychain's path (and so the keychains folder).
        let path = context.naming.path(for: item.keychain)
        if invocation.json {
            JSONOutput.write(ItemJSON.item(item, keychainPath: path, includeSecret: wantsSecret), to: context.output)
            return CommandStatus.success
        }
        context.output.write(ItemRendering.block(item, keychainPath: path))
        if wantsSecret {
            // -g puts the password on stderr, after the block on stdout [C C2, C11].
            context.output.flush()
            (item.secret ?? SecretBytes(count: 0)).withArray {
                StandardStreams.error.write(Array("password: ".utf8) + Array(PrintBuffer.render($0).utf8) + [0x0A])
            }
        }
        return CommandStatus.success
    }

    /// `-w`: the password and a newline; if any byte is not printable ASCII, the whole
    /// password as lowercase hex instead (`security`'s `do_password_item_printing`).
    static func passwordLine(_ secret: [UInt8]) -> [UInt8] {
        let printable = secret.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
        return (printable ? secret : Array(LowercaseHex.string(secret).utf8)) + [0x0A]
    }

    private static func delete(_ itemClass: ItemClass, _ context: CommandContext, _ invocation: Invocation) -> Int32 {
        guard !invocation.has("g") else { return CommandStatus.usage }
        guard let filters = filters(itemClass, context, invocation) else { return CommandStatus.failure }
        guard !filters.isEmpty else { return CommandStatus.usage }
        let item: FoundItem
        switch search(itemClass, filters, secret: false, context, invocation) {
        case .success(let found): item = found
        case .failure(let exit): return exit.status
        }
        context.output.write(ItemRendering.block(item, keychainPath: context.naming.path(for: item.keychain)))
        context.output.flush()
        var status = CommandStatus.success
        do throws(KeychainError) {
            guard let ref = item.persistentRef else { throw KeychainError(SecStatus.invalidItemRef) }
            // Only the item shown, even when others match too (macOS deletes the first match).
            try context.client.delete([WireKey.valuePersistentRef: .data(ref)])
        } catch {
            context.diagnostics.perror("SecKeychainItemDelete", error.status)
            context.diagnostics.hint(for: error, keychain: context.naming.displayName(for: item.keychain))
            status = error.status
        }
        // macOS says so even when the deletion failed; the exit status tells the truth [Q].
        context.diagnostics.line("password has been deleted.")
        return status
    }
}
