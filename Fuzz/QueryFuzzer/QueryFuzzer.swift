import Foundation
import KeywellProtocol

@testable import KeywellCore

/// Native-API dictionaries as the daemon hands them to the engine: every byte string becomes a
/// `WireDictionary` that the query parser must accept or refuse with a known status, the same way
/// every time.

let vocabularyKeys = [
    "class", "acct", "svce", "srvr", "ptcl", "port", "path", "sdmn", "atyp", "labl", "desc", "icmt", "crtr",
    "type", "gena", "invi", "nega", "agrp", "pdmn", "cdat", "mdat", "v_Data", "v_PersistentRef", "r_Data",
    "r_Attributes", "r_PersistentRef", "m_Limit", "m_CaseInsensitive", "m_SearchList", "u_Keychain",
]
let vocabularyValues = [
    "genp", "inet", "m_LimitOne", "m_LimitAll", "htps", "http", "dflt", "ak", "login", "", "é", "E\u{301}",
    "/abs/path.keychain-db", "../x", "aapl",
]

func wireValue(_ input: inout FuzzBytes, depth: Int = 0) -> WireValue {
    switch input.byte() % 5 {
    case 0: return .string(input.string(from: vocabularyValues))
    case 1: return .data(Data(input.bytes(Int(input.byte()))))
    case 2: return .bool(input.byte() & 1 == 1)
    case 3: return .integer(input.pick([0, 1, -1, 5, 65535, 65536, Int64.max, Int64.min, input.int64()]))
    default: return .strings((0..<Int(input.byte() % 6)).map { _ in input.string(from: vocabularyValues) })
    }
}

func wireDictionary(_ input: inout FuzzBytes) -> WireDictionary {
    var dictionary: WireDictionary = [:]
    for _ in 0..<Int(input.byte() % 16) {
        dictionary[input.string(from: vocabularyKeys)] = wireValue(&input)
    }
    return dictionary
}

/// A refusal must be a status Keywell knows (so clients and the CLI can explain it).
func checkRefusal(_ error: KeychainError) {
    guard SecStatus.name(for: error.status) != nil else {
        fatalError("unknown status \(error.status): \(error)")
    }
}

/// Parses twice and insists on the same outcome: the parser walks keys in a fixed order.
func parseConsistently<T>(_ parse: () throws(KeychainError) -> T) {
    var statuses: [OSStatus?] = []
    for _ in 0..<2 {
        do {
            _ = try parse()
            statuses.append(nil)
        } catch {
            checkRefusal(error)
            statuses.append(error.status)
        }
    }
    if statuses[0] != statuses[1] { fatalError("the same dictionary parsed two ways: \(statuses)") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var input = FuzzBytes(data, size)
    let dictionary = wireDictionary(&input)
    let changes = wireDictionary(&input)
    parseConsistently { () throws(KeychainError) in try QueryParser.parseAdd(dictionary) }
    for operation in [NativeMethod.copyMatching, .update, .delete] {
        parseConsistently { () throws(KeychainError) in try QueryParser.parseQuery(dictionary, for: operation) }
    }
    for itemClass in [ItemClass?.none, .genericPassword, .internetPassword] {
        parseConsistently { () throws(KeychainError) in try QueryParser.parseChanges(changes, itemClass: itemClass) }
    }
    // Persistent references arrive as raw bytes.
    if case .data(let bytes)? = dictionary["v_PersistentRef"] {
        parseConsistently { () throws(KeychainError) in try PersistentRef(parsing: bytes) }
    }
    return 0
}
