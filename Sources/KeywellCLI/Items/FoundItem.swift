import KeywellProtocol
import KeywellSystem

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One item as a search returned it, with the keychain it was found in.
struct FoundItem {
    let itemClass: ItemClass
    /// The keychain as the daemon names it (a name, or an absolute path).
    let keychain: String
    let attributes: WireDictionary
    /// The secret, when it was asked for.
    var secret: SecretBytes?
    let persistentRef: Data?

    init(itemClass: ItemClass, keychain: String, result: WireDictionary, secret: SecretBytes?) {
        self.itemClass = itemClass
        self.keychain = keychain
        var attributes = result
        attributes[WireKey.valueData] = nil
        persistentRef = attributes.removeValue(forKey: WireKey.valuePersistentRef)?.dataValue
        self.attributes = attributes
        self.secret = secret
    }

    /// From one CopyMatching result; with `secret`, its `v_Data` is moved into wipeable bytes.
    init(itemClass: ItemClass, keychain: String, result: inout WireDictionary, secret: Bool) {
        var secretBytes: SecretBytes?
        if secret, var data = result.removeValue(forKey: WireKey.valueData)?.dataValue {
            secretBytes = SecretBytes(wiping: &data)
        } else if secret {
            secretBytes = SecretBytes(count: 0)
        }
        self.init(itemClass: itemClass, keychain: keychain, result: result, secret: secretBytes)
    }

    /// The item's access list, when the search asked for it (`r_Access`); nil when it did not or
    /// when the daemon sent something else.
    var access: AccessList? {
        attributes[WireKey.access].flatMap { try? AccessList(wire: $0) }
    }

    /// A text attribute's bytes (`acct`, `svce`, …), nil when absent.
    func bytes(_ key: String) -> [UInt8]? {
        switch attributes[key] {
        case .string(let text)?: Array(text.utf8)
        case .data(let data)?: [UInt8](data)
        case .integer(let number)?: Array(String(number).utf8)
        case .bool(let flag)?: Array((flag ? "1" : "0").utf8)
        case .strings(let list)?: Array(list.joined(separator: ",").utf8)
        case nil: nil
        }
    }

    func text(_ key: String) -> String? {
        bytes(key).map { String(decoding: $0, as: UTF8.self) }
    }
}
