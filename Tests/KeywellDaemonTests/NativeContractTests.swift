import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// The contract (`NativeMethod`, `NativeSignal` in KeywellProtocol, generated from the shipped
/// dbus/org.keywell.Keychain1.xml) and the XML say the same, and what the XML lets run on the
/// D-Bus I/O thread is what the contract classes as reads.
@Suite struct NativeContractTests {
    static func shippedInterface() throws -> DBusInterface {
        let xml = try String(contentsOfFile: IntrospectionTests.interfaceXMLPath, encoding: .utf8)
        let interfaces = try DBusInterface.parse(introspectionXML: xml)
        return try #require(interfaces.first { $0.name == KeywellNames.interface })
    }

    static func arguments(_ list: [DBusArgument]) -> [String] {
        list.map { "\($0.name ?? "?"):\($0.signature.rawValue)" }
    }

    static func arguments(_ list: [NativeArgument]) -> [String] {
        list.map { "\($0.name):\($0.type)" }
    }

    @Test func everyMethodOfTheXMLIsInTheContractWithTheSameArguments() throws {
        let shipped = try Self.shippedInterface()
        #expect(shipped.methods.map(\.name) == NativeMethod.allCases.map(\.name))
        for method in shipped.methods {
            let contract = try #require(NativeMethod(name: method.name), "\(method.name) is not in NativeMethod")
            #expect(Self.arguments(method.inputs) == Self.arguments(contract.inputs), "\(method.name) in")
            #expect(Self.arguments(method.outputs) == Self.arguments(contract.outputs), "\(method.name) out")
        }
    }

    @Test func everySignalOfTheXMLIsInTheContract() throws {
        let shipped = try Self.shippedInterface()
        #expect(shipped.signals.map(\.name) == NativeSignal.allCases.map(\.name))
        for signal in shipped.signals {
            let contract = try #require(NativeSignal(rawValue: signal.name), "\(signal.name) is not in NativeSignal")
            #expect(Self.arguments(signal.arguments) == Self.arguments(contract.arguments), "\(signal.name)")
        }
    }

    @Test func theContractsTypesAreValidSignatures() throws {
        let methodTypes = NativeMethod.allCases.flatMap { $0.inputs + $0.outputs }.map(\.type)
        for type in methodTypes + NativeSignal.allCases.flatMap(\.arguments).map(\.type) {
            _ = try DBusSignature(validating: type)
        }
    }

    @Test func namesLeadBackToTheirMethod() {
        for method in NativeMethod.allCases { #expect(NativeMethod(name: method.name) == method) }
        #expect(NativeMethod(name: "copyMatching") == nil)
        #expect(NativeMethod(name: "") == nil)
    }

    /// Only reads that never wait (and `WhoAmI`, once the caller is known) may run on the I/O
    /// thread: the XML's placement annotation and `methodClass` agree.
    @Test func methodsOnTheIOThreadAreTheReads() throws {
        let shipped = try Self.shippedInterface()
        let marked = shipped.methods.filter { method in
            method.annotations.contains(DBusAnnotation(name: "org.keywell.Placement", value: "io-thread"))
        }.map(\.name)
        let reads = NativeMethod.allCases.filter { $0.methodClass == .read || $0.methodClass == .describesCaller }.map(\.name)
        #expect(marked == reads)
        #expect(!marked.contains(NativeMethod.add.name) && !marked.contains(NativeMethod.unlock.name))
    }
}
