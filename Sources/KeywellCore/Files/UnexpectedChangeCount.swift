import GRDB

/// A write changed another number of rows than it meant to: SQL Keywell did not write (a trigger
/// that ignores or multiplies the change) is at work, so the transaction is rolled back rather
/// than reported done (docs/file-format.md, "What a keychain file may hold").
struct UnexpectedChangeCount: Error, CustomStringConvertible {
    let change: String
    let expected: Int
    let actual: Int

    var description: String {
        "\(change) changed \(actual) rows instead of \(expected): the file holds SQL Keywell did not write"
    }

    /// Throws unless the last statement on `db` changed exactly `expected` rows. `change` is
    /// built only for the error: a create checks several statements, and each text was a string
    /// built for nothing.
    static func check(_ db: Database, _ change: @autoclosure () -> String, expected: Int = 1) throws {
        let actual = db.changesCount
        guard actual == expected else { throw UnexpectedChangeCount(change: change(), expected: expected, actual: actual) }
    }
}
