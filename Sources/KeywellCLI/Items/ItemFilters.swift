import KeywellProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The attribute filters `find-*` and `delete-*` build from their options, with `security`'s
/// shortcuts: a generic search with both -a and -s looks at nothing else, and an internet
/// search with all seven primary-key parts looks at those only [Q].
enum ItemFilters {
    /// Prints the four-character-code error and gives exit 1 when a code is malformed.
    struct CodeFailure: Error {}

    static func fourCharCode(_ text: String?, _ context: CommandContext) throws(CodeFailure) -> String? {
        guard let text else { return nil }
        switch FourCharCode.parse(text) {
        case .success(let code): return code
        case .failure(let error):
            for line in error.lines { context.diagnostics.line(line) }
            throw CodeFailure()
        }
    }

    static func text(_ value: String) -> WireValue { .string(value) }

    static func generic(_ invocation: Invocation, _ context: CommandContext) throws(CodeFailure) -> WireDictionary {
        let creator = try fourCharCode(invocation.value("c"), context)
        let type = try fourCharCode(invocation.value("C"), context)
        if let account = invocation.value("a"), let service = invocation.value("s") {
            return [AttributeKey.account: text(account), AttributeKey.service: text(service)]
        }
        var filters: WireDictionary = [:]
        if let account = invocation.value("a") { filters[AttributeKey.account] = text(account) }
        if let service = invocation.value("s") { filters[AttributeKey.service] = text(service) }
        if let creator { filters[AttributeKey.creator] = text(creator) }
        if let type { filters[AttributeKey.type] = text(type) }
        if let kind = invocation.value("D") { filters[AttributeKey.description] = text(kind) }
        if let generic = invocation.value("G") { filters[AttributeKey.generic] = .data(Array(generic.utf8).asData) }
        if let comment = invocation.value("j") { filters[AttributeKey.comment] = text(comment) }
        if let label = invocation.value("l") { filters[AttributeKey.label] = text(label) }
        return filters
    }

    static func internet(_ invocation: Invocation, _ context: CommandContext) throws(CodeFailure) -> WireDictionary {
        let creator = try fourCharCode(invocation.value("c"), context)
        let type = try fourCharCode(invocation.value("C"), context)
        let protocolCode = try fourCharCode(invocation.value("r"), context)
        let authenticationType = try fourCharCode(invocation.value("t"), context)
        // Port 0 (also what atoi makes of a non-number) is no filter.
        let port = invocation.value("P").map { UInt16(truncatingIfNeeded: atoi($0)) }.flatMap { $0 == 0 ? nil : $0 }

        let account = invocation.value("a"), domain = invocation.value("d"), server = invocation.value("s")
        let path = invocation.value("p")
        if let account, let domain, let server, let protocolCode, let authenticationType, let port, let path {
            return [
                AttributeKey.account: text(account), AttributeKey.securityDomain: text(domain), AttributeKey.server: text(server), AttributeKey.`protocol`: text(protocolCode),
                AttributeKey.authenticationType: text(authenticationType), AttributeKey.port: .integer(Int64(port)), AttributeKey.path: text(path),
            ]
        }
        var filters: WireDictionary = [:]
        if let account { filters[AttributeKey.account] = text(account) }
        if let domain { filters[AttributeKey.securityDomain] = text(domain) }
        if let server { filters[AttributeKey.server] = text(server) }
        if let protocolCode { filters[AttributeKey.`protocol`] = text(protocolCode) }
        if let authenticationType { filters[AttributeKey.authenticationType] = text(authenticationType) }
        if let port { filters[AttributeKey.port] = .integer(Int64(port)) }
        if let path { filters[AttributeKey.path] = text(path) }
        if let creator { filters[AttributeKey.creator] = text(creator) }
        if let type { filters[AttributeKey.type] = text(type) }
        if let kind = invocation.value("D") { filters[AttributeKey.description] = text(kind) }
        if let comment = invocation.value("j") { filters[AttributeKey.comment] = text(comment) }
        if let label = invocation.value("l") { filters[AttributeKey.label] = text(label) }
        return filters
    }
}

extension Array where Element == UInt8 {
    var asData: Data { Data(self) }
}
