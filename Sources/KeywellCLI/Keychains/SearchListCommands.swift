import KeywellNativeClient

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `list-keychains`, `default-keychain` and `login-keychain`: the per-user preferences.
///
/// Linux has no system-wide keychain, so the `system` and `common` domains are empty, and the
/// `dynamic` domain (smart cards) is empty too; the `user` domain is the daemon's search list.
enum SearchListCommands {
    enum Domain: String, CaseIterable {
        case user, system, common, dynamic

        /// `-d` takes any prefix of a domain name, the first in this order.
        static func parse(_ text: String) -> Domain? {
            allCases.first { $0.rawValue.hasPrefix(text) }
        }
    }

    private static func domain(_ invocation: Invocation, _ context: CommandContext) -> Result<Domain?, CommandExit> {
        guard let text = invocation.value("d") else { return .success(nil) }
        guard let domain = Domain.parse(text) else {
            context.diagnostics.error("Invalid domain: \(text)")
            return .failure(CommandExit(status: CommandStatus.usage))
        }
        return .success(domain)
    }

    /// `security`'s error line: with `-d`, the domain-variant function and the domain name
    /// (`SecKeychainSetDomainSearchList system: …`), else `<function>: …`.
    private static func failure(_ function: String, _ domainFunction: String, _ domain: Domain?, _ status: OSStatus,
                                _ context: CommandContext) {
        if let domain {
            context.diagnostics.error("\(domainFunction) \(domain.rawValue): \(SecStatus.message(for: status))")
        } else {
            context.diagnostics.perror(function, status)
        }
    }

    static func printPaths(_ names: [String], _ context: CommandContext) {
        for name in names { context.output.write("    \"\(context.naming.path(for: name))\"\n") }
    }

    static func listKeychains(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let domain: Domain?
        switch self.domain(invocation, context) {
        case .success(let parsed): domain = parsed
        case .failure(let exit): return exit.status
        }
        if invocation.has("s") {
            let names = invocation.operands.map(context.naming.daemonName)
            guard domain == nil || domain == .user else {
                failure("SecKeychainSetSearchList", "SecKeychainSetDomainSearchList", domain, SecStatus.invalidPrefsDomain, context)
                return CommandStatus.failure
            }
            do {
                try context.client.setSearchList(names)
            } catch {
                failure("SecKeychainSetSearchList", "SecKeychainSetDomainSearchList", domain, error.status, context)
                return CommandStatus.failure
            }
            return CommandStatus.success
        }
        guard invocation.operands.isEmpty else { return CommandStatus.usage }
        var names: [String] = []
        if domain == nil || domain == .user {
            do {
                names = try context.client.searchList()
            } catch {
                failure("SecKeychainCopySearchList", "SecKeychainCopyDomainSearchList", domain, error.status, context)
                context.diagnostics.hint(for: error, keychain: nil)
                return CommandStatus.failure
            }
        }
        if invocation.json {
            JSONOutput.write(.array(names.map { KeychainJSON.reference($0, context) }), to: context.output)
        } else {
            printPaths(names, context)
        }
        return CommandStatus.success
    }

    static func defaultKeychain(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let domain: Domain?
        switch self.domain(invocation, context) {
        case .success(let parsed): domain = parsed
        case .failure(let exit): return exit.status
        }
        if invocation.has("s") {
            guard invocation.operands.count <= 1 else { return CommandStatus.usage }
            // `-s` alone resolves to the current default: nothing changes (docs/cli.md "Keychain commands").
            guard let typed = invocation.operands.first else { return CommandStatus.success }
            guard domain == nil || domain == .user else {
                failure("SecKeychainSetDefault", "SecKeychainSetDomainDefault", domain, SecStatus.invalidPrefsDomain, context)
                return CommandStatus.failure
            }
            let name = context.naming.daemonName(for: typed)
            do {
                try context.client.setDefaultKeychain(name)
            } catch {
                var status = error.status
                if status == SecStatus.noSuchKeychain {
                    context.diagnostics.line("Will not set default: file \(context.naming.path(for: name)) does not exist")
                    status = SecStatus.wrPerm
                }
                failure("SecKeychainSetDefault", "SecKeychainSetDomainDefault", domain, status, context)
                return CommandStatus.failure
            }
            return CommandStatus.success
        }
        guard invocation.operands.isEmpty else { return CommandStatus.usage }
        let name: String
        if let domain, domain != .user {
            let status = domain == .dynamic ? SecStatus.invalidPrefsDomain : SecStatus.noDefaultKeychain
            context.diagnostics.error("SecKeychainCopyDomainDefault \(domain.rawValue): \(SecStatus.message(for: status))")
            return CommandStatus.failure
        }
        do {
            name = try context.client.defaultKeychain()
        } catch {
            if let domain {
                context.diagnostics.error("SecKeychainCopyDomainDefault \(domain.rawValue): \(error.message)")
            } else {
                context.diagnostics.perror("SecKeychainCopyDefault", error.status)
            }
            context.diagnostics.hint(for: error, keychain: nil)
            return CommandStatus.failure
        }
        if invocation.json {
            JSONOutput.write(KeychainJSON.reference(name, context), to: context.output)
        } else {
            printPaths([name], context)
        }
        return CommandStatus.success
    }

    static func loginKeychain(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        // macOS compiles the -s and -d handling out and returns 1 without a word [Q].
        if invocation.has("s") || invocation.has("d") { return CommandStatus.failure }
        guard invocation.operands.isEmpty else { return CommandStatus.usage }
        do {
            let name = try context.client.loginKeychain()
            if invocation.json {
                JSONOutput.write(KeychainJSON.reference(name, context), to: context.output)
            } else {
                printPaths([name], context)
            }
            return CommandStatus.success
        } catch {
            context.diagnostics.perror("SecKeychainCopyLogin", error.status)
            if error.status == SecStatus.noSuchKeychain {
                context.diagnostics.hint("there is no login keychain yet: log in through PAM with pam_keywell, or run `\(context.progname) create-keychain login`")
            } else {
                context.diagnostics.hint(for: error, keychain: nil)
            }
            return CommandStatus.failure
        }
    }
}
