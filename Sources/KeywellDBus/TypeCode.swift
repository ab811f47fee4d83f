import CDBus

/// D-Bus type codes as libdbus wants them (Int32). The C macros are casts that Swift does not import.
enum TypeCode {
    static let invalid: Int32 = 0
    static let byte = code("y")
    static let bool = code("b")
    static let int16 = code("n")
    static let uint16 = code("q")
    static let int32 = code("i")
    static let uint32 = code("u")
    static let int64 = code("x")
    static let uint64 = code("t")
    static let double = code("d")
    static let string = code("s")
    static let objectPath = code("o")
    static let signature = code("g")
    static let unixFD = code("h")
    static let array = code("a")
    static let variant = code("v")
    static let structure = code("r")
    static let dictEntry = code("e")

    private static func code(_ character: Unicode.Scalar) -> Int32 { Int32(UInt8(ascii: character)) }
}

/// Message types (DBUS_MESSAGE_TYPE_*).
enum MessageType {
    static let methodCall: Int32 = 1
    static let methodReturn: Int32 = 2
    static let error: Int32 = 3
    static let signal: Int32 = 4
}

/// libdbus allows 64 nested containers (variants included) in a message body; deeper bodies are
/// rejected by the receiver, which would drop the connection, so the encoder refuses them first.
let maximumContainerDepth = 64
