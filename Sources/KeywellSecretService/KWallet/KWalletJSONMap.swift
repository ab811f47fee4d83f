import Foundation
import KeywellProtocol

/// How a map entry's secret is kept: a compact JSON object of strings, as KWallet 6's Secret
/// Service bridge keeps it (docs/kwallet.md, "One item, four faces"), so either reads the other's.
enum KWalletJSONMap {
    static func encode(_ map: [String: String]) -> Data { Data(KWalletMapJSON.encode(map)) }

    /// Nil when the secret is not a JSON object; members that are not strings are left out.
    static func decode(_ data: Data) -> [String: String]? {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return object.compactMapValues { $0 as? String }
    }
}
