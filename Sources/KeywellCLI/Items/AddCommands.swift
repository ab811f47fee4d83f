import KeywellNativeClient
import KeywellProtocol
import KeywellSystem

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `add-generic-password` and `add-internet-password`.
enum AddCommands {
    static func addGeneric(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        add(.genericPassword, context, invocation)
    }

    static func addInternet(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        add(.internetPassword, context, invocation)
    }

    private enum PasswordChoice {
        case given(SecretBytes)
        case none
        case failed(Int32)
    }

    /// -w, then (generic only) -p, then -X hex, else a prompt when -w ended the line, else empty.
    private static func password(_ itemClass: ItemClass, _ context: CommandContext, _ invocation: Invocation,
                                 prompt: Bool) -> PasswordChoice {
        let passwordLetters: [Character] = itemClass == .genericPassword ? ["w", "p"] : ["w"]
        for letter in passwordLetters {
            if let option = invocation.arguments.option(letter), let value = option.value {
                let secret = SecretBytes(copying: value.utf8)
                context.scrubFromArgv(option)
                return .given(secret)
            }
        }
        if let option = invocation.arguments.option("X"), let hex = option.value {
            context.scrubFromArgv(option)
            guard let bytes = Hex.decode(hex) else {
                context.diagnostics.error("Unable to convert password data (-X must specify valid hex digits)")
                return .failed(CommandStatus.usage)
            }
            return .given(SecretBytes(copying: bytes))
        }
        guard prompt else { return .none }
        switch PasswordInput.readNew(prompt: "password data for new item: ", retypePrompt: "retype password for new item: ",
                                     attempts: 3, onMismatch: { context.diagnostics.line("passwords don't match") }) {
        case .password(let typed): return .given(typed)
        case .endOfInput: return .failed(CommandStatus.endOfInput)
        case .mismatch: return .failed(CommandStatus.failure)
        }
    }

    private static func add(_ itemClass: ItemClass, _ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let prompt = invocation.promptsForPassword
        guard let account = invocation.value("a"), let primary = invocation.value("s") else { return CommandStatus.usage }
        let operands = invocation.operands
        guard operands.count <= 1, operands.first != "" else { return CommandStatus.usage }
        let typedKeychain = operands.first

        var attributes: WireDictionary = [AttributeKey.account: .string(account), AttributeKey.label: .string(invocation.value("l") ?? primary)]
        do {
            if let creator = try ItemFilters.fourCharCode(invocation.value("c"), context) { attributes[AttributeKey.creator] = .string(creator) }
            if let type = try ItemFilters.fourCharCode(invocation.value("C"), context) { attributes[AttributeKey.type] = .string(type) }
            if itemClass == .internetPassword {
                attributes[AttributeKey.server] = .string(primary)
                attributes[AttributeKey.authenticationType] = .string(try ItemFilters.fourCharCode(invocation.value("t"), context) ?? "dflt")
                // Protocol 0 ("any") is the absence of one.
                if let code = try ItemFilters.fourCharCode(invocation.value("r"), context) { attributes[AttributeKey.`protocol`] = .string(code) }
            } else {
                attributes[AttributeKey.service] = .string(primary)
            }
        } catch {
            return CommandStatus.failure
        }
        if itemClass == .internetPassword {
            attributes[AttributeKey.port] = .integer(Int64(invocation.value("P").map { UInt16(truncatingIfNeeded: atoi($0)) } ?? 0))
            if let path = invocation.value("p") { attributes[AttributeKey.path] = .string(path) }
            if let domain = invocation.value("d") { attributes[AttributeKey.securityDomain] = .string(domain) }
        } else if let generic = invocation.value("G") {
            attributes[AttributeKey.generic] = .data(Data(generic.utf8))
        }
        if let kind = invocation.value("D") { attributes[AttributeKey.description] = .string(kind) }
        if let comment = invocation.value("j") { attributes[AttributeKey.comment] = .string(comment) }
        // -A: any application; -T (repeatable): those programs, "" adding none. Neither: the
        // daemon decides (docs/access-control.md, "Access lists on items").
        let access: AccessList?
        do {
            access = try accessList(invocation)
        } catch {
            context.diagnostics.error("SecTrustedApplicationCreateFromPath: \(error.detail ?? error.message)")
            return CommandStatus.failure
        }

        let secret: SecretBytes?
        switch password(itemClass, context, invocation, prompt: prompt) {
        case .given(let given): secret = given
        case .none: secret = nil
        case .failed(let status): return status
        }
        defer { secret?.wipe() }

        let keychain = typedKeychain.map(context.naming.daemonName)
        if invocation.has("U") {
            switch update(itemClass, attributes, access: access, secret: secret, keychain: keychain, context) {
            case .updated: return CommandStatus.success
            case .failed(let status): return status
            case .notFound: break
            }
        }

        let failurePrefix = itemClass == .genericPassword
            ? "SecKeychainItemCreateFromContent (\(typedKeychain ?? "<default>"))"
            : "SecKeychainAddInternetPassword \(typedKeychain ?? "<NULL>")"
        var request = attributes
        request[WireKey.class] = .string(itemClass.rawValue)
        if let keychain { request[WireKey.useKeychain] = .string(keychain) }
        if let access { request[WireKey.access] = access.wireValue }
        do {
            try (secret ?? SecretBytes(count: 0)).withData { data throws(KeychainError) in
                request[WireKey.valueData] = .data(data)
                defer { request[WireKey.valueData] = nil }
                try context.client.add(request)
            }
            return CommandStatus.success
        } catch {
            context.diagnostics.error("\(failurePrefix): \(error.message)")
            // No hint after the duplicate line: scripts match it exactly (`|| security add … -U`).
            if error.status != SecStatus.duplicateItem {
                context.diagnostics.hint(for: error, keychain: typedKeychain ?? defaultKeychainName(context))
            }
            return error.status
        }
    }

    /// -A wins over -T, as on macOS; each non-empty -T path becomes its program's identity now.
    private static func accessList(_ invocation: Invocation) throws(KeychainError) -> AccessList? {
        if invocation.has("A") { return .anyApplication }
        let paths = invocation.arguments.values("T")
        guard !paths.isEmpty else { return nil }
        guard paths.count <= AccessList.maxApplications else {
            throw .param("at most \(AccessList.maxApplications) -T options")
        }
        var identities: [String] = []
        for path in paths where !path.isEmpty { identities.append(try ExecutableIdentity.of(path: path)) }
        return try AccessList.validated(identities)
    }

    private enum UpdateOutcome {
        case updated, notFound, failed(Int32)
    }

    /// `-U`: change the first existing item with the same key, in the given keychain or, with
    /// none given, anywhere in the search list. The label is always reset (to -l or the
    /// service/server), other attributes only when given, the password and access list only when given.
    private static func update(_ itemClass: ItemClass, _ attributes: WireDictionary, access: AccessList?, secret: SecretBytes?,
                               keychain: String?, _ context: CommandContext) -> UpdateOutcome {
        let search = ItemSearch(context: context)
        var filters: WireDictionary
        if itemClass == .genericPassword {
            filters = [AttributeKey.account: attributes[AttributeKey.account]!, AttributeKey.service: attributes[AttributeKey.service]!]
        } else {
            // All seven key parts set: those alone; otherwise everything given, label included,
            // so an item with a custom label is not found and the add then fails [Q].
            let keyParts = [AttributeKey.account, AttributeKey.securityDomain, AttributeKey.server, AttributeKey.`protocol`, AttributeKey.authenticationType, AttributeKey.port, AttributeKey.path]
            let allSet = keyParts.allSatisfy { key in
                guard let value = attributes[key] else { return false }
                return value != .integer(0) && value != .string("")
            }
            filters = allSet ? attributes.filter { keyParts.contains($0.key) } : attributes
            if filters[AttributeKey.port] == .integer(0) { filters[AttributeKey.port] = nil }
        }
        let found: FoundItem
        do {
            let scope = try keychain.map { [$0] } ?? context.client.searchList()
            found = try search.first(itemClass, filters, scope: scope, secret: false)
        } catch let failure as ItemSearch.Failure where failure.status == SecStatus.itemNotFound {
            return .notFound
        } catch {
            let status = (error as? ItemSearch.Failure)?.status ?? (error as? KeychainError)?.status ?? SecStatus.param
            context.diagnostics.perror("SecKeychainSearchCopyNext", status)
            let failure = error as? ItemSearch.Failure
            context.diagnostics.hint(for: status, detail: failure?.detail, keychain: failure?.keychain)
            return .failed(status)
        }
        guard let ref = found.persistentRef else { return .notFound }
        var changes = attributes
        // -A / -T replace the item's list; without them it keeps its own.
        if let access { changes[WireKey.access] = access.wireValue }
        do {
            try (secret ?? SecretBytes(count: 0)).withData { data throws(KeychainError) in
                if secret != nil { changes[WireKey.valueData] = .data(data) }
                defer { changes[WireKey.valueData] = nil }
                try context.client.update([WireKey.valuePersistentRef: .data(ref)], attributes: changes)
            }
            return .updated
        } catch {
            context.diagnostics.perror("SecKeychainItemModifyContent", error.status)
            context.diagnostics.hint(for: error, keychain: context.naming.displayName(for: found.keychain))
            return .failed(error.status)
        }
    }

    private static func defaultKeychainName(_ context: CommandContext) -> String? {
        (try? context.client.defaultKeychain()).map(context.naming.displayName)
    }
}
