import Foundation
import KeywellDBus

extension DBusInterface {
    /// Reads the `<interface>` elements of an introspection document (the files in `dbus/`, or
    /// what a service answers to Introspect): the code generator reads `dbus/` with it, and tests
    /// hold served interfaces against the shipped XML. Nested `<node>` elements are ignored.
    /// Names and signatures are validated. keywelld never reads XML: it serves the tables the
    /// generator wrote (docs/dbus-layer.md, "Interfaces from XML").
    public static func parse(introspectionXML xml: String) throws(DBusError) -> [DBusInterface] {
        var parser = IntrospectionParser(Array(xml.utf8))
        return try parser.parse()
    }
}

extension DBusMethod {
    /// The arguments `CodegenJob.secretStringsAnnotation` marks, by index: `In<n>` and `Out<n>`
    /// (Qt's numbering, as its `QtTypeName` annotations use), separated by spaces. A marked input
    /// must be an `s` (decoded into locked memory as it is read); a marked output an `s` or a type
    /// that can hold one. The reader of dbus/ sets `secretStrings` from it, so that a table the
    /// generator wrote and one read back from introspection are equal.
    func markedSecretStrings() throws(DBusError) -> DBusSecretStrings {
        guard let annotation = annotations.first(where: { $0.name == CodegenJob.secretStringsAnnotation }) else {
            return DBusSecretStrings()
        }
        var marked = DBusSecretStrings()
        let refuse = { (why: String) -> DBusError in
            .invalidArgs("\(name): \(CodegenJob.secretStringsAnnotation) \(annotation.value.debugDescription): \(why)")
        }
        for word in annotation.value.split(separator: " ") {
            if word.hasPrefix("In"), let index = Int(word.dropFirst(2)), inputs.indices.contains(index) {
                guard inputs[index].signature == "s" else { throw refuse("In\(index) is not an s") }
                if !marked.inputs.contains(index) { marked.inputs.append(index) }
            } else if word.hasPrefix("Out"), let index = Int(word.dropFirst(3)), outputs.indices.contains(index) {
                let signature = outputs[index].signature.rawValue
                guard signature.contains("s") || signature.contains("v") else { throw refuse("Out\(index) holds no string") }
                if !marked.outputs.contains(index) { marked.outputs.append(index) }
            } else {
                throw refuse("\(word) names no argument (In<n> or Out<n>)")
            }
        }
        guard !marked.inputs.isEmpty || !marked.outputs.isEmpty else { throw refuse("names no argument") }
        return marked
    }
}

/// A small reader for the introspection subset of XML: elements, attributes, comments,
/// processing instructions and DOCTYPE; no DTD expansion.
private struct IntrospectionParser {
    private let bytes: [UInt8]
    private var index = 0

    private var interfaces: [DBusInterface] = []
    private var interface: DBusInterface?
    private enum Member { case method(DBusMethod), signal(DBusSignalDescription), property(DBusProperty) }
    private var member: Member?
    private var nodeDepth = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func parse() throws(DBusError) -> [DBusInterface] {
        while let start = find(UInt8(ascii: "<"), from: index) {
            index = start
            if hasPrefix("<!--") {
                guard let end = find("-->") else { throw invalid("unterminated comment") }
                index = end + 3
            } else if hasPrefix("<?") {
                guard let end = find("?>") else { throw invalid("unterminated processing instruction") }
                index = end + 2
            } else if hasPrefix("<!") {
                guard let end = find(UInt8(ascii: ">"), from: index) else { throw invalid("unterminated declaration") }
                index = end + 1
            } else if hasPrefix("</") {
                guard let end = find(UInt8(ascii: ">"), from: index) else { throw invalid("unterminated end tag") }
                let name = String(decoding: bytes[(index + 2)..<end], as: UTF8.self).trimmingSpaces()
                index = end + 1
                try close(name)
            } else {
                guard let end = find(UInt8(ascii: ">"), from: index) else { throw invalid("unterminated tag") }
                var body = Array(bytes[(index + 1)..<end])
                index = end + 1
                let selfClosing = body.last == UInt8(ascii: "/")
                if selfClosing { body.removeLast() }
                let (name, attributes) = try parseTag(body)
                try open(name, attributes)
                if selfClosing { try close(name) }
            }
        }
        if interface != nil { throw invalid("unterminated <interface>") }
        return interfaces
    }

    private mutating func open(_ name: String, _ attributes: [String: String]) throws(DBusError) {
        switch name {
        case "node":
            nodeDepth += 1
        case "interface" where nodeDepth <= 1:
            guard interface == nil else { throw invalid("nested <interface>") }
            let interfaceName = try required("name", attributes)
            try NameValidation.interface(interfaceName)
            interface = DBusInterface(name: interfaceName)
        case "method" where interface != nil:
            let memberName = try required("name", attributes)
            try NameValidation.member(memberName)
            member = .method(DBusMethod(name: memberName))
        case "signal" where interface != nil:
            let memberName = try required("name", attributes)
            try NameValidation.member(memberName)
            member = .signal(DBusSignalDescription(name: memberName))
        case "property" where interface != nil:
            let propertyName = try required("name", attributes)
            let signature = try DBusSignature(validating: try required("type", attributes))
            guard signature.isSingleCompleteType else { throw invalid("property \(propertyName) has type \(signature)") }
            guard let access = DBusProperty.Access(rawValue: try required("access", attributes)) else {
                throw invalid("property \(propertyName) has an unknown access")
            }
            member = .property(DBusProperty(name: propertyName, signature: signature, access: access))
        case "arg" where member != nil:
            let signature = try DBusSignature(validating: try required("type", attributes))
            guard signature.isSingleCompleteType else { throw invalid("argument type \(signature) is not one complete type") }
            let arg = DBusArgument(attributes["name"], signature)
            switch member {
            case .method(var method):
                if attributes["direction"] == "out" { method.outputs.append(arg) } else { method.inputs.append(arg) }
                member = .method(method)
            case .signal(var signal):
                signal.arguments.append(arg)
                member = .signal(signal)
            default:
                throw invalid("<arg> inside a property")
            }
        case "annotation":
            let annotation = DBusAnnotation(name: try required("name", attributes), value: attributes["value"] ?? "")
            switch member {
            case .method(var method): method.annotations.append(annotation); member = .method(method)
            case .signal(var signal): signal.annotations.append(annotation); member = .signal(signal)
            case .property(var property): property.annotations.append(annotation); member = .property(property)
            case nil: interface?.annotations.append(annotation)
            }
        default:
            break  // other elements (doc comments, nested nodes' contents) are skipped
        }
    }

    private mutating func close(_ name: String) throws(DBusError) {
        switch name {
        case "node": nodeDepth -= 1
        case "interface":
            if let finished = interface, nodeDepth <= 1 {
                interfaces.append(finished)
                interface = nil
            }
        case "method", "signal", "property":
            guard let finished = member else { return }
            switch finished {
            case .method(var method):
                do {
                    method.secretStrings = try method.markedSecretStrings()
                } catch {
                    throw invalid(error.message)
                }
                interface?.methods.append(method)
            case .signal(let signal): interface?.signals.append(signal)
            case .property(let property): interface?.properties.append(property)
            }
            member = nil
        default: break
        }
    }

    private func parseTag(_ body: [UInt8]) throws(DBusError) -> (String, [String: String]) {
        var position = 0
        func skipSpaces() { while position < body.count, isSpace(body[position]) { position += 1 } }
        let nameStart = position
        while position < body.count, !isSpace(body[position]) { position += 1 }
        let name = String(decoding: body[nameStart..<position], as: UTF8.self)
        var attributes: [String: String] = [:]
        while true {
            skipSpaces()
            guard position < body.count else { break }
            let keyStart = position
            while position < body.count, body[position] != UInt8(ascii: "="), !isSpace(body[position]) { position += 1 }
            let key = String(decoding: body[keyStart..<position], as: UTF8.self)
            skipSpaces()
            guard position < body.count, body[position] == UInt8(ascii: "=") else { throw invalid("attribute \(key) without a value") }
            position += 1
            skipSpaces()
            guard position < body.count, body[position] == UInt8(ascii: "\"") || body[position] == UInt8(ascii: "'") else {
                throw invalid("unquoted attribute \(key)")
            }
            let quote = body[position]
            position += 1
            let valueStart = position
            while position < body.count, body[position] != quote { position += 1 }
            guard position < body.count else { throw invalid("unterminated attribute \(key)") }
            attributes[key] = unescape(String(decoding: body[valueStart..<position], as: UTF8.self))
            position += 1
        }
        return (name, attributes)
    }

    private func unescape(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacingAll("&lt;", "<").replacingAll("&gt;", ">").replacingAll("&quot;", "\"")
            .replacingAll("&apos;", "'").replacingAll("&amp;", "&")
    }

    private func required(_ key: String, _ attributes: [String: String]) throws(DBusError) -> String {
        guard let value = attributes[key] else { throw invalid("missing attribute \(key)") }
        return value
    }

    private func invalid(_ what: String) -> DBusError { .invalidArgs("Invalid introspection XML: \(what)") }

    private func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    private func hasPrefix(_ prefix: String) -> Bool {
        let p = Array(prefix.utf8)
        return index + p.count <= bytes.count && Array(bytes[index..<(index + p.count)]) == p
    }

    private func find(_ byte: UInt8, from start: Int) -> Int? {
        var i = start
        while i < bytes.count {
            if bytes[i] == byte { return i }
            i += 1
        }
        return nil
    }

    private func find(_ text: String) -> Int? {
        let p = Array(text.utf8)
        var i = index
        while i + p.count <= bytes.count {
            if bytes[i] == p[0], Array(bytes[i..<(i + p.count)]) == p { return i }
            i += 1
        }
        return nil
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        String(self.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }

    fileprivate func replacingAll(_ target: String, _ replacement: String) -> String {
        guard contains(target) else { return self }
        return components(separatedBy: target).joined(separator: replacement)
    }
}
