// KeywellDBus
