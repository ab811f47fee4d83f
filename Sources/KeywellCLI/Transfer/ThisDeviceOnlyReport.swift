import FoundationEssentials
import KeywellNativeClient

/// What every export says about the ThisDeviceOnly items it left out (docs/export-import.md,
/// "ThisDeviceOnly items"): they stay on this machine, so no portable file carries them.
enum ThisDeviceOnlyReport {
    /// Whether an item (its attributes) must stay on this machine.
    static func staysHere(_ item: WireDictionary) -> Bool {
        Accessibility.stored(item[AttributeKey.accessible]?.stringValue).isThisDeviceOnly
    }

    /// One line on standard output when any item was left out.
    static func write(_ context: CommandContext, leftOut: Int) {
        guard leftOut > 0 else { return }
        context.output.write("left out \(leftOut) ThisDeviceOnly item\(leftOut == 1 ? "" : "s") (\(AttributeKey.accessible) "
                             + "\(Accessibility.allCases.filter(\.isThisDeviceOnly).map(\.rawValue).joined(separator: "/"))): "
                             + "they stay on this machine\n")
    }
}
