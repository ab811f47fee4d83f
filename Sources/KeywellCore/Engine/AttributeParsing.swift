import Foundation
import KeywellProtocol

extension ItemAttribute {
    /// Reads a wire value as this attribute (docs/native-api.md "Wire types"); a wrong type, or
    /// a `pdmn` that is not an `Accessibility` value, is `errSecParam`.
    package func parse(_ value: WireValue) throws(KeychainError) -> AttributeValue {
        let parsed = try parseByKind(value)
        if self == .accessibility, case .text(let text) = parsed { _ = try Accessibility.parse(text) }
        return parsed
    }

    private func parseByKind(_ value: WireValue) throws(KeychainError) -> AttributeValue {
        switch (kind, value) {
        case (.text, .string(let text)):
            return .text(text)
        case (.text, .data(let bytes)), (.fourCharCode, .data(let bytes)):
            guard let text = String(data: bytes, encoding: .utf8) else {
                throw .param("\(name) bytes are not UTF-8")
            }
            return kind == .text ? .text(text) : try fourCharCode(text)
        case (.fourCharCode, .string(let text)):
            return try fourCharCode(text)
        case (.fourCharCode, .integer(let number)) where self == .creator || self == .type:
            guard let code = UInt32(exactly: number) else { throw .param("\(name) must fit in 32 bits") }
            let bytes = withUnsafeBytes(of: code.bigEndian) { Array($0) }
            guard let text = String(bytes: bytes, encoding: .utf8) else {
                throw .param("\(name) 0x\(String(code, radix: 16)) is not four characters")
            }
            return .text(text)
        case (.integer, .integer(let number)):
            guard UInt32(exactly: number) != nil else { throw .param("\(name) must be between 0 and 4294967295") }
            return .integer(number)
        case (.bool, .bool(let flag)):
            return .bool(flag)
        case (.data, .data(let bytes)):
            return .data(bytes)
        case (.date, .integer(let milliseconds)):
            return .integer(milliseconds)
        default:
            throw .param("\(name) has the wrong type")
        }
    }

    private func fourCharCode(_ text: String) throws(KeychainError) -> AttributeValue {
        guard text.utf8.count == 4 else {
            throw .param("\(name) must be exactly four bytes, got \"\(text)\"")
        }
        return .text(text)
    }
}
