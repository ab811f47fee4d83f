// KeychainServices
