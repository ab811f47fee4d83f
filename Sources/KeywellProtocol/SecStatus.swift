/// Apple's status type: 0 is success, negative values are `errSec…` codes.
public typealias OSStatus = Int32

/// OSStatus values and Apple's message texts (the comments in SecBase.h), as the CLI prints them;
/// defined once for the engine, the daemon's D-Bus error names and every client.
///
/// Apple's counterpart is the `errSec…` constants and `SecCopyErrorMessageString`.
///
/// ```swift
/// let error = KeychainError(SecStatus.itemNotFound)
/// SecStatus.name(for: error.status)          // "ItemNotFound"
/// SecStatus.message(for: -25300)             // "The specified item could not be found in the keychain."
/// SecStatus.status(forName: "AuthFailed")    // -25293
/// ```
public enum SecStatus {
    public static let success: OSStatus = 0
    public static let unimplemented: OSStatus = -4
    public static let diskFull: OSStatus = -34
    public static let io: OSStatus = -36
    public static let param: OSStatus = -50
    public static let wrPerm: OSStatus = -61
    public static let allocate: OSStatus = -108
    public static let userCanceled: OSStatus = -128
    public static let notAvailable: OSStatus = -25291
    public static let readOnly: OSStatus = -25292
    public static let authFailed: OSStatus = -25293
    public static let noSuchKeychain: OSStatus = -25294
    public static let invalidKeychain: OSStatus = -25295
    public static let duplicateKeychain: OSStatus = -25296
    public static let duplicateCallback: OSStatus = -25297
    public static let invalidCallback: OSStatus = -25298
    public static let duplicateItem: OSStatus = -25299
    public static let itemNotFound: OSStatus = -25300
    public static let bufferTooSmall: OSStatus = -25301
    public static let dataTooLarge: OSStatus = -25302
    public static let noSuchAttr: OSStatus = -25303
    public static let invalidItemRef: OSStatus = -25304
    public static let invalidSearchRef: OSStatus = -25305
    public static let noSuchClass: OSStatus = -25306
    public static let noDefaultKeychain: OSStatus = -25307
    public static let interactionNotAllowed: OSStatus = -25308
    public static let readOnlyAttr: OSStatus = -25309
    public static let wrongSecVersion: OSStatus = -25310
    public static let keySizeNotAllowed: OSStatus = -25311
    public static let noStorageModule: OSStatus = -25312
    public static let noCertificateModule: OSStatus = -25313
    public static let noPolicyModule: OSStatus = -25314
    public static let interactionRequired: OSStatus = -25315
    public static let dataNotAvailable: OSStatus = -25316
    public static let dataNotModifiable: OSStatus = -25317
    public static let createChainFailed: OSStatus = -25318
    public static let invalidPrefsDomain: OSStatus = -25319
    public static let inDarkWake: OSStatus = -25320
    public static let noAccessForItem: OSStatus = -25243
    public static let decode: OSStatus = -26275
    public static let missingEntitlement: OSStatus = -34018

    /// (status, error name without `errSec`, message) for every code Keywell knows.
    static let table: [(OSStatus, String, String)] = [
        (success, "Success", "No error."),
        (unimplemented, "Unimplemented", "Function or operation not implemented."),
        (diskFull, "DiskFull", "The disk is full."),
        (io, "IO", "I/O error."),
        (param, "Param", "One or more parameters passed to a function were not valid."),
        (wrPerm, "WrPerm", "Write permissions error."),
        (allocate, "Allocate", "Failed to allocate memory."),
        (userCanceled, "UserCanceled", "User canceled the operation."),
        (notAvailable, "NotAvailable", "No keychain is available. You may need to restart your computer."),
        (readOnly, "ReadOnly", "This keychain cannot be modified."),
        (authFailed, "AuthFailed", "The user name or passphrase you entered is not correct."),
        (noSuchKeychain, "NoSuchKeychain", "The specified keychain could not be found."),
        (invalidKeychain, "InvalidKeychain", "The specified keychain is not a valid keychain file."),
        (duplicateKeychain, "DuplicateKeychain", "A keychain with the same name already exists."),
        (duplicateCallback, "DuplicateCallback", "The specified callback function is already installed."),
        (invalidCallback, "InvalidCallback", "The specified callback function is not valid."),
        (duplicateItem, "DuplicateItem", "The specified item already exists in the keychain."),
        (itemNotFound, "ItemNotFound", "The specified item could not be found in the keychain."),
        (bufferTooSmall, "BufferTooSmall", "There is not enough memory available to use the specified item."),
        (dataTooLarge, "DataTooLarge", "This item contains information which is too large or in a format that cannot be displayed."),
        (noSuchAttr, "NoSuchAttr", "The specified attribute does not exist."),
        (invalidItemRef, "InvalidItemRef", "The specified item is no longer valid. It may have been deleted from the keychain."),
        (invalidSearchRef, "InvalidSearchRef", "Unable to search the current keychain."),
        (noSuchClass, "NoSuchClass", "The specified item does not appear to be a valid keychain item."),
        (noDefaultKeychain, "NoDefaultKeychain", "A default keychain could not be found."),
        (interactionNotAllowed, "InteractionNotAllowed", "User interaction is not allowed."),
        (readOnlyAttr, "ReadOnlyAttr", "The specified attribute could not be modified."),
        (wrongSecVersion, "WrongSecVersion", "This keychain was created by a different version of the system software and cannot be opened."),
        (keySizeNotAllowed, "KeySizeNotAllowed", "This item specifies a key size which is too large or too small."),
        (noStorageModule, "NoStorageModule", "A required component (data storage module) could not be loaded. You may need to restart your computer."),
        (noCertificateModule, "NoCertificateModule", "A required component (certificate module) could not be loaded. You may need to restart your computer."),
        (noPolicyModule, "NoPolicyModule", "A required component (policy module) could not be loaded. You may need to restart your computer."),
        (interactionRequired, "InteractionRequired", "User interaction is required, but is currently not allowed."),
        (dataNotAvailable, "DataNotAvailable", "The contents of this item cannot be retrieved."),
        (dataNotModifiable, "DataNotModifiable", "The contents of this item cannot be modified."),
        (createChainFailed, "CreateChainFailed", "One or more certificates required to validate this certificate cannot be found."),
        (invalidPrefsDomain, "InvalidPrefsDomain", "The specified preferences domain is not valid."),
        (inDarkWake, "InDarkWake", "In dark wake, no UI possible"),
        (noAccessForItem, "NoAccessForItem", "The specified item has no access control."),
        (decode, "Decode", "Unable to decode the provided data."),
        (missingEntitlement, "MissingEntitlement", "A required entitlement isn't present."),
    ]

    private static let byStatus: [OSStatus: (String, String)] = {
        var map: [OSStatus: (String, String)] = [:]
        for (status, name, message) in table { map[status] = (name, message) }
        return map
    }()

    private static let byName: [String: OSStatus] = {
        var map: [String: OSStatus] = [:]
        for (status, name, _) in table { map[name] = status }
        return map
    }()

    /// Apple's message for a status; unknown codes get a generic text naming the number.
    public static func message(for status: OSStatus) -> String {
        byStatus[status]?.1 ?? "Unknown error \(status)."
    }

    /// The constant's name without `errSec` (`DuplicateItem`), used in D-Bus error names.
    public static func name(for status: OSStatus) -> String? {
        byStatus[status]?.0
    }

    /// The status a name (`name(for:)`'s form, as in a D-Bus error name) stands for; nil for
    /// one Keywell does not know.
    public static func status(forName name: String) -> OSStatus? {
        byName[name]
    }
}
