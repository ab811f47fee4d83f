import KeywellDBus
import KeywellProtocol

extension NativeCalls {
    /// CopyMatching with attributes and data: each match as account → secret bytes plus its
    /// other attributes, or [] for ItemNotFound.
    static func matches(_ connection: DBusConnection, _ query: [String: DBusValue]) throws -> [[String: [UInt8]]] {
        let request = query.merging([WireKey.returnData: true, WireKey.returnAttributes: true, WireKey.matchLimit: .string(WireKey.matchLimitAll)]) { $1 }
        let reply: [DBusValue]
        do {
            reply = try call(connection, .copyMatching, [.stringVariantDict(request)])
        } catch let error as DBusError where error.name.hasSuffix(".ItemNotFound") {
            return []
        }
        guard let items = reply.first?.asStringVariantDictArray() else {
            throw BenchmarkFailure("CopyMatching: odd reply \(reply)")
        }
        return items.map { item in
            var fields: [String: [UInt8]] = [:]
            for (key, value) in item {
                let plain = value.unwrappingVariants
                if let bytes = plain.bytesValue { fields[key] = bytes } else if let text = plain.stringValue { fields[key] = Array(text.utf8) }
            }
            return fields
        }
    }
}
