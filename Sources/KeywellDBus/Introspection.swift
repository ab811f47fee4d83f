/// Writes introspection XML (the `org.freedesktop.DBus.Introspectable.Introspect` answer).
public enum Introspection {
    static let doctype = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">

        """

    /// The standard interfaces every exported object has (answered by this layer and libdbus).
    public static let standardInterfaces: [DBusInterface] = [
        DBusInterface(name: StandardInterface.introspectable, methods: [
            DBusMethod(name: "Introspect", outputs: [DBusArgument("xml_data", .string)]),
        ]),
        DBusInterface(name: StandardInterface.peer, methods: [
            DBusMethod(name: "Ping"),
            DBusMethod(name: "GetMachineId", outputs: [DBusArgument("machine_uuid", .string)]),
        ]),
        DBusInterface(name: StandardInterface.properties, methods: [
            DBusMethod(name: "Get", inputs: [DBusArgument("interface_name", .string), DBusArgument("property_name", .string)],
                       outputs: [DBusArgument("value", .variant)]),
            DBusMethod(name: "GetAll", inputs: [DBusArgument("interface_name", .string)],
                       outputs: [DBusArgument("props", .stringVariantDict)]),
            DBusMethod(name: "Set", inputs: [DBusArgument("interface_name", .string), DBusArgument("property_name", .string),
                                             DBusArgument("value", .variant)]),
        ], signals: [
            DBusSignalDescription(name: "PropertiesChanged", arguments: [
                DBusArgument("interface_name", .string), DBusArgument("changed_properties", .stringVariantDict),
                DBusArgument("invalidated_properties", .stringArray),
            ]),
        ]),
    ]

    /// A full document: the interfaces (standard ones first when `includeStandard`) and child nodes.
    public static func document(interfaces: [DBusInterface], children: [String], includeStandard: Bool = true) -> String {
        var xml = doctype + "<node>\n"
        for interface in (includeStandard ? standardInterfaces : []) + interfaces {
            xml += interface.introspectionXML(indent: "  ")
        }
        for child in children {
            xml += "  <node name=\"\(escape(child))\"/>\n"
        }
        xml += "</node>\n"
        return xml
    }

    static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            default: result.append(character)
            }
        }
        return result
    }
}

extension DBusInterface {
    /// This interface as an `<interface>` element.
    public func introspectionXML(indent: String = "") -> String {
        let e = Introspection.escape
        var xml = "\(indent)<interface name=\"\(e(name))\">\n"
        let inner = indent + "  "
        for method in methods {
            xml += "\(inner)<method name=\"\(e(method.name))\">\n"
            for arg in method.inputs { xml += argXML(arg, direction: "in", indent: inner + "  ") }
            for arg in method.outputs { xml += argXML(arg, direction: "out", indent: inner + "  ") }
            xml += annotationsXML(method.annotations, indent: inner + "  ")
            xml += "\(inner)</method>\n"
        }
        for signal in signals {
            xml += "\(inner)<signal name=\"\(e(signal.name))\">\n"
            for arg in signal.arguments { xml += argXML(arg, direction: nil, indent: inner + "  ") }
            xml += annotationsXML(signal.annotations, indent: inner + "  ")
            xml += "\(inner)</signal>\n"
        }
        for property in properties {
            if property.annotations.isEmpty {
                xml += "\(inner)<property name=\"\(e(property.name))\" type=\"\(e(property.signature.rawValue))\" access=\"\(property.access.rawValue)\"/>\n"
            } else {
                xml += "\(inner)<property name=\"\(e(property.name))\" type=\"\(e(property.signature.rawValue))\" access=\"\(property.access.rawValue)\">\n"
                xml += annotationsXML(property.annotations, indent: inner + "  ")
                xml += "\(inner)</property>\n"
            }
        }
        xml += annotationsXML(annotations, indent: inner)
        xml += "\(indent)</interface>\n"
        return xml
    }

    private func argXML(_ arg: DBusArgument, direction: String?, indent: String) -> String {
        let e = Introspection.escape
        var xml = "\(indent)<arg"
        if let name = arg.name { xml += " name=\"\(e(name))\"" }
        xml += " type=\"\(e(arg.signature.rawValue))\""
        if let direction { xml += " direction=\"\(direction)\"" }
        return xml + "/>\n"
    }

    private func annotationsXML(_ annotations: [DBusAnnotation], indent: String) -> String {
        annotations.map {
            "\(indent)<annotation name=\"\(Introspection.escape($0.name))\" value=\"\(Introspection.escape($0.value))\"/>\n"
        }.joined()
    }
}
