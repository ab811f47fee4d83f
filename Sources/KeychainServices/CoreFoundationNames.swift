import Foundation
@_exported import KeywellNativeClient
@_exported import KeywellProtocol

// Foundation on Linux has no CoreFoundation types in Swift. These names let code written for
// Apple platforms (`query as CFDictionary`, `var item: CFTypeRef?`, `result as? Data`) compile
// unchanged: CFDictionary bridges from [String: Any], CFTypeRef holds what SecItem returns.
public typealias CFTypeRef = AnyObject
public typealias CFDictionary = NSDictionary
public typealias CFMutableDictionary = NSMutableDictionary
public typealias CFArray = NSArray
public typealias CFData = NSData
public typealias CFNumber = NSNumber
public typealias CFDate = NSDate
public typealias CFString = String
public typealias CFBoolean = Bool
public typealias CFIndex = Int
public typealias FourCharCode = UInt32

public let kCFBooleanTrue: CFBoolean! = true
public let kCFBooleanFalse: CFBoolean! = false
