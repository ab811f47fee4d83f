// The engine's users name `SecretBytes` through KeywellCore, as they always did; the type
// itself lives in KeywellSystem, with the one wipe, so that every module shares it.
@_exported import class KeywellSystem.SecretBytes
