# The release build, defined once: scripts/test.sh runs the integration suite and the sanitized
# PAM logins on these programs, scripts/package.sh ships them and scripts/install.sh installs
# them, so what is tested is what is shipped (docs/contributing.md, "CI").
#
# --static-swift-stdlib links the Swift runtime in, so the programs need only Debian's own
# libraries. It is a compiler flag as well as a linker flag (swift build passes -static-stdlib
# to every compile), so a plain `swift build -c release` in the same folder would rebuild every
# module: build the release programs through this function only. KEYWELL_TEST_SWITCHES is
# unset, so the test switches are compiled out as in the package (docs/contributing.md,
# "Test switches").
#
#   keywell_release_build [swift build options…]   e.g. --product keywelld, --show-bin-path
keywell_release_build() {
  env -u KEYWELL_TEST_SWITCHES swift build -c release --static-swift-stdlib "$@"
}
