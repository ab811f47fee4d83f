import Foundation
import KeywellProtocol

extension NewItem {
    /// The stored form: a fresh UUID, the defaults every item has, dates, and the sealed secret.
    func makeItem(keychain: UUID, key: SecretBytes, now: Date) -> KeychainItem {
        var attributes = self.attributes
        attributes[.accessGroup] = attributes[.accessGroup] ?? .text(KeychainItem.defaultAccessGroup)
        attributes[.accessibility] = attributes[.accessibility] ?? .text(KeychainItem.defaultAccessibility)
        let milliseconds = AttributeValue.integer(millisecondsSince1970(now))
        attributes[.creationDate] = milliseconds
        attributes[.modificationDate] = milliseconds
        var item = KeychainItem(rowID: nil, uuid: .timeOrdered(at: now), itemClass: itemClass, attributes: attributes, sealedSecret: Data())
        item.sealedSecret = ItemSealing.seal(secret, for: item, keychain: keychain, key: key)
        return item
    }
}

extension ItemChanges {
    /// `item` with these changes and a new `mdat`. The secret is sealed again when it changes or
    /// when the identity it is bound to changes.
    func apply(to item: KeychainItem, keychain: UUID, key: SecretBytes, now: Date) throws(KeychainError) -> KeychainItem {
        var updated = item
        for (attribute, value) in attributes {
            guard attribute.belongs(to: item.itemClass) else {
                throw QueryParser.noSuchAttribute(attribute, item.itemClass)
            }
            updated.attributes[attribute] = value
        }
        updated.attributes[.modificationDate] = .integer(millisecondsSince1970(now))
        let identityChanged = item.itemClass.primaryKey.contains { item.keyValue($0) != updated.keyValue($0) }
        if secret != nil || identityChanged {
            var plaintext: Data
            if let secret {
                plaintext = secret
            } else {
                plaintext = try ItemSealing.open(item, keychain: keychain, key: key)
            }
            updated.sealedSecret = ItemSealing.seal(plaintext, for: updated, keychain: keychain, key: key)
        }
        return updated
    }
}
