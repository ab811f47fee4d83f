import Foundation
import KeywellDBus
import KeywellProtocol

/// "ACL check on a trusted read" (docs/access-control.md "Cost"): the same trusted CopyMatching
/// with r_Data, of an item whose list names the caller and of one open to any application,
/// alternated on one connection; the median added is what checking the caller against a list
/// costs. Target: at most 10 µs.
enum AccessCheckRow {
    static let targetMicroseconds = 10.0

    static func measure(_ connection: DBusConnection, calls: Int) throws -> TargetVerdict {
        // This program's identity, as keywelld names it: the list of one item names it.
        guard let identity = try NativeCalls.call(connection, .whoAmI, []).first?.stringValue else {
            throw BenchmarkFailure("WhoAmI gave no identity")
        }
        let lists: [(account: String, list: DBusValue)] = [
            ("acl-bench-named", .stringArray([identity])), ("acl-bench-any", .string(WireKey.accessAnyApplication)),
        ]
        for (account, list) in lists {
            var item = NativeCalls.primaryKey(account, "acl-bench")
            _ = try? NativeCalls.call(connection, .delete, [.stringVariantDict(item)])
            item[WireKey.valueData] = .bytes(Array("secret".utf8))
            item[WireKey.access] = list
            _ = try NativeCalls.call(connection, .add, [.stringVariantDict(item)])
        }
        func read(_ account: String) throws -> Duration {
            var query = NativeCalls.primaryKey(account, "acl-bench")
            query[WireKey.returnData] = true
            let start = ContinuousClock.now
            _ = try NativeCalls.call(connection, .copyMatching, [.stringVariantDict(query)])
            return ContinuousClock.now - start
        }
        for _ in 0..<50 { _ = try read(lists[0].account); _ = try read(lists[1].account) }
        var named = LatencySamples(), any = LatencySamples()
        for _ in 0..<calls {
            named.append(try read(lists[0].account))
            any.append(try read(lists[1].account))
        }
        let added = (named.percentile(0.5) - any.percentile(0.5)).seconds * 1e6
        return TargetVerdict(name: "ACL check on a trusted read (median added)", figure: String(format: "%+.1f µs", added),
                             target: String(format: "≤ %.0f µs", targetMicroseconds), met: added <= targetMicroseconds)
    }
}
