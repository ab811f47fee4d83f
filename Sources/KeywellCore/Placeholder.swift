// KeywellCore
