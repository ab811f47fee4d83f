/// The SHA-256 PCRs a login unlock may be bound to (`keywell login-unlock enable --pcrs 0,7`,
/// docs/login-unlock.md "Binding to the boot state"). Parsed by the CLI before it asks for
/// anything, and again by keywelld from the request, so both give the same clear error.
public struct LoginUnlockPCRs: Sendable, Equatable, Codable {
    /// PCR indices 0-23: the PC Client platform's PCRs, a 3-byte selection in the TPM.
    public static let indices = 0...23
    /// PCRs one binding may name: what one TPM2_PCR_Read returns. More adds nothing useful
    /// (the boot chain is measured into 0-9) and only more ways for an update to break it.
    public static let maxCount = 8
    /// Characters of the option's text: far above "0,1,2,3,4,5,6,7" with spaces.
    public static let maxTextLength = 64

    /// The long option of `keywell login-unlock enable`.
    public static let option = "pcrs"

    /// Not bound: the default.
    public static let none = LoginUnlockPCRs(checkedMask: 0)

    /// Bit i for PCR i.
    public let mask: UInt32

    public struct Problem: Error, Sendable, Equatable {
        public var text: String
    }

    private init(checkedMask: UInt32) { mask = checkedMask }

    /// From the bit mask a stored enrolment or the C side holds.
    public init(mask: UInt32) throws(Problem) {
        guard mask >> UInt32(Self.indices.upperBound + 1) == 0, mask.nonzeroBitCount <= Self.maxCount else {
            throw Problem(text: "a PCR binding names at most \(Self.maxCount) PCRs, each \(Self.indices.lowerBound)-\(Self.indices.upperBound)")
        }
        self.mask = mask
    }

    /// From the list as typed: decimal indices separated by commas (`0,7`, `7`). Empty means
    /// not bound; a repeated index counts once.
    public init(parsing text: String) throws(Problem) {
        guard text.utf8.count <= Self.maxTextLength else {
            throw Problem(text: "--\(Self.option): the list is longer than \(Self.maxTextLength) characters")
        }
        let trimmed = text.filter { $0 != " " }
        guard !trimmed.isEmpty else {
            self = .none
            return
        }
        var mask: UInt32 = 0
        for word in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            guard !word.isEmpty, word.utf8.count <= 2, word.allSatisfy(\.isASCII), word.allSatisfy(\.isNumber),
                  let index = Int(word), Self.indices.contains(index) else {
                throw Problem(text: "--\(Self.option): \"\(word.prefix(8))\" is not a PCR index "
                              + "(\(Self.indices.lowerBound)-\(Self.indices.upperBound), separated by commas, e.g. 7 or 0,7)")
            }
            mask |= 1 << UInt32(index)
        }
        guard mask.nonzeroBitCount <= Self.maxCount else {
            throw Problem(text: "--\(Self.option): at most \(Self.maxCount) PCRs")
        }
        self.mask = mask
    }

    public var isBound: Bool { mask != 0 }

    /// The indices in ascending order.
    public var list: [Int] { Self.indices.filter { mask & (1 << UInt32($0)) != 0 } }

    /// `0,7`: the form the option takes and the request carries; empty when not bound.
    public var text: String { list.map(String.init).joined(separator: ",") }

    public init(from decoder: any Decoder) throws {
        let list = try decoder.singleValueContainer().decode([Int].self)
        guard list.count <= Self.maxCount, list.allSatisfy(Self.indices.contains) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a PCR list"))
        }
        mask = list.reduce(0) { $0 | 1 << UInt32($1) }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(list)
    }
}
