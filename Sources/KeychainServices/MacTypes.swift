// MacTypes names that Apple's Security headers use in Swift and Linux's Swift lacks.

/// The MacTypes `Boolean` (an unsigned char) as Swift imports it in C structs such as
/// `SecKeychainSettings`: a Bool literal works, `.boolValue` reads it.
public struct DarwinBoolean: ExpressibleByBooleanLiteral, Equatable, Hashable, Sendable, CustomStringConvertible {
    private var value: UInt8

    public init(_ value: Bool) { self.value = value ? 1 : 0 }
    public init(booleanLiteral value: Bool) { self.init(value) }

    public var boolValue: Bool { value != 0 }
    public var description: String { boolValue.description }

    public static func == (lhs: DarwinBoolean, rhs: DarwinBoolean) -> Bool { lhs.boolValue == rhs.boolValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(boolValue) }
}

extension Bool {
    public init(_ value: DarwinBoolean) { self = value.boolValue }
}
