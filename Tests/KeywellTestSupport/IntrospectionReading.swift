/// Tests hold served interfaces against the XML in dbus/ with the code generator's own reader
/// (`DBusInterface.parse(introspectionXML:)`), so that one reader is what both trust.
@_exported import DBusCodegen
