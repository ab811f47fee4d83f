import KeywellNativeClient
import KeywellSystem

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `keywell git-credential get|store|erase`: git's credential helper protocol over internet
/// password items (installed as `git-credential-keywell`, so `credential.helper=keywell`).
///
/// Items are kept as git-credential-osxkeychain keeps them on macOS: protocol → `ptcl`, host →
/// `srvr` (label too), port → `port`, path → `path`, username → `acct`. Standard output carries
/// `username=`/`password=` lines and nothing else; problems go to stderr.
enum GitCredentialCommand {
    /// The name git runs the helper by; keywell started under it is `keywell git-credential`
    /// (docs/cli.md), so no shell script sits between git and keywell.
    static let programName = "git-credential-keywell"

    /// `ownsInput`: git started the program under the helper's name, so standard input holds the
    /// request and nothing else (`CredentialRequest.read`).
    static func run(_ context: CommandContext, _ invocation: Invocation, ownsInput: Bool = false) -> Int32 {
        // git passes the action as the one argument.
        guard invocation.words.count == 2 else {
            context.diagnostics.error("git-credential: needs exactly one action (get, store or erase)")
            if let spec = CommandTable.match("git-credential") { StandardStreams.error.write(HelpCommand.usageLines(spec)) }
            return CommandStatus.usage
        }
        let operation = invocation.words[1]
        // Only for this command (interactive mode shares the context).
        let diagnostics = context.diagnostics
        context.diagnostics = diagnostics.hintingAnywhere
        defer { context.diagnostics = diagnostics }
        let helper = GitCredentialHelper(context: context)
        let act: (GitCredentialHelper) -> (CredentialRequest) -> Int32
        switch operation {
        case "get": act = GitCredentialHelper.get
        case "store": act = GitCredentialHelper.store
        case "erase": act = GitCredentialHelper.erase
        default: return CommandStatus.success  // gitcredentials(7): ignore unknown actions
        }
        // keywelld takes the connection while the request is read and parsed.
        context.client.connectAhead()
        guard let request = CredentialRequest.read(ownsInput: ownsInput) else {
            context.diagnostics.error("git-credential \(operation): the request is over \(CredentialRequest.maxBytes) bytes")
            return CommandStatus.failure
        }
        return act(helper)(request)
    }
}

struct GitCredentialHelper {
    let context: CommandContext

    /// The attributes that identify the credential (without the account unless given).
    private func filters(_ request: CredentialRequest) -> WireDictionary? {
        guard let host = request.host, !host.isEmpty else { return nil }
        var filters: WireDictionary = [AttributeKey.server: .string(host)]
        if let code = GitProtocolCodes.code(for: request.protocolName) { filters[AttributeKey.`protocol`] = .string(code) }
        if let port = request.port { filters[AttributeKey.port] = .integer(Int64(port)) }
        if let path = request.path, !path.isEmpty { filters[AttributeKey.path] = .string(path) }
        if let username = request.username { filters[AttributeKey.account] = .string(username) }
        return filters
    }

    private func report(_ error: KeychainError, _ action: String, keychain: String? = nil) -> Int32 {
        context.diagnostics.error("git-credential \(action): \(error.message)")
        context.diagnostics.hint(for: error.status, keychain: keychain)
        return CommandStatus.failure
    }

    func get(_ request: CredentialRequest) -> Int32 {
        guard let filters = filters(request) else { return CommandStatus.success }
        let search = ItemSearch(context: context)
        do throws(ItemSearch.Failure) {
            let item = try search.firstInSearchList(.internetPassword, filters, secret: true)
            defer { item.secret?.wipe() }
            var answer: [UInt8] = []
            if let account = item.bytes(AttributeKey.account) { answer += Array("username=".utf8) + account + [0x0A] }
            answer += Array("password=".utf8)
            // Printing the secret is the command's job; `answer` is wiped right after.
            answer.reserveCapacity(answer.count + (item.secret?.count ?? 0) + 1)
            item.secret?.withUnsafeBytes { answer += $0 }
            answer.append(0x0A)
            context.output.writeSecret(answer)
            answer.withUnsafeMutableBytes { SecretMemory.wipe($0) }
            return CommandStatus.success
        } catch where error.status == SecStatus.itemNotFound {
            return CommandStatus.success  // nothing stored: git asks the next helper or the user
        } catch {
            return report(KeychainError(error.status), "get", keychain: error.keychain)
        }
    }

    /// Adds the credential to the default keychain, or replaces the password of the item that
    /// already holds this protocol, host, port, path and user.
    func store(_ request: CredentialRequest) -> Int32 {
        guard var attributes = filters(request), request.username != nil,
              let password = request.password else { return CommandStatus.success }
        attributes[AttributeKey.label] = attributes[AttributeKey.server]
        attributes[AttributeKey.authenticationType] = .string("dflt")
        let secret = SecretBytes(copying: password.utf8)
        defer { secret.wipe() }
        do {
            try secret.withData { data throws(KeychainError) in
                var request = attributes
                request[WireKey.class] = .string(ItemClass.internetPassword.rawValue)
                request[WireKey.valueData] = .data(data)
                defer { request[WireKey.valueData] = nil }
                try context.client.add(request)
            }
            return CommandStatus.success
        } catch where error.status == SecStatus.duplicateItem {
            return replacePassword(attributes, secret)
        } catch {
            return report(error, "store")
        }
    }

    private func replacePassword(_ attributes: WireDictionary, _ secret: SecretBytes) -> Int32 {
        do {
            let keychain = try context.client.defaultKeychain()
            var query = attributes
            query[WireKey.class] = .string(ItemClass.internetPassword.rawValue)
            query[WireKey.useKeychain] = .string(keychain)
            query[WireKey.returnAttributes] = .bool(true)
            query[WireKey.returnPersistentRef] = .bool(true)
            query[WireKey.matchLimit] = .string(WireKey.matchLimitAll)
            query[AttributeKey.label] = nil
            // The query matches any port or path when the request has none; only the item
            // whose key parts are exactly these is the duplicate.
            let same = try context.client.copyMatching(query).filter { Self.sameKey($0, attributes) }
            for item in same {
                guard let ref = item[WireKey.valuePersistentRef]?.dataValue else { continue }
                try secret.withData { data throws(KeychainError) in
                    var changes: WireDictionary = [WireKey.valueData: .data(data), AttributeKey.label: attributes[AttributeKey.label]!]
                    defer { changes[WireKey.valueData] = nil }
                    try context.client.update([WireKey.valuePersistentRef: .data(ref)], attributes: changes)
                }
            }
            return CommandStatus.success
        } catch {
            return report(error, "store")
        }
    }

    /// Same primary key: a missing port is 0, a missing path or security domain is empty.
    static func sameKey(_ item: WireDictionary, _ wanted: WireDictionary) -> Bool {
        func number(_ value: WireValue?) -> Int64 { value?.integerValue ?? 0 }
        func text(_ value: WireValue?) -> String {
            switch value {
            case .string(let string)?: string
            case .data(let data)?: String(decoding: data, as: UTF8.self)
            default: ""
            }
        }
        return number(item[AttributeKey.port]) == number(wanted[AttributeKey.port])
            && text(item[AttributeKey.path]) == text(wanted[AttributeKey.path])
            && text(item[AttributeKey.`protocol`]) == text(wanted[AttributeKey.`protocol`])
            && text(item[AttributeKey.securityDomain]) == text(wanted[AttributeKey.securityDomain])
            && text(item[AttributeKey.account]) == text(wanted[AttributeKey.account])
    }

    /// Deletes the matching items; when git says which password failed, only items holding
    /// that password, so a newer password stored meanwhile survives.
    func erase(_ request: CredentialRequest) -> Int32 {
        guard var query = filters(request) else { return CommandStatus.success }
        query[WireKey.class] = .string(ItemClass.internetPassword.rawValue)
        do {
            guard let password = request.password else {
                try context.client.delete(query)
                return CommandStatus.success
            }
            let expected = SecretBytes(copying: password.utf8)
            defer { expected.wipe() }
            query[WireKey.returnData] = .bool(true)
            query[WireKey.returnPersistentRef] = .bool(true)
            query[WireKey.matchLimit] = .string(WireKey.matchLimitAll)
            var matches = try context.client.copyMatching(query)
            defer {
                for index in matches.indices { matches[index][WireKey.valueData] = nil }
            }
            for index in matches.indices {
                guard var data = matches[index].removeValue(forKey: WireKey.valueData)?.dataValue,
                      let ref = matches[index][WireKey.valuePersistentRef]?.dataValue else { continue }
                let stored = SecretBytes(wiping: &data)
                if stored.matches(expected) {
                    try context.client.delete([WireKey.valuePersistentRef: .data(ref)])
                }
            }
            return CommandStatus.success
        } catch where error.status == SecStatus.itemNotFound {
            return CommandStatus.success
        } catch {
            return report(error, "erase")
        }
    }
}
