# Puts the Swift toolchain on PATH when the shell that runs us does not have it.
if ! command -v swift >/dev/null 2>&1; then
  for dir in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
    if [ -x "$dir/swift" ]; then PATH="$dir:$PATH"; break; fi
  done
  export PATH
fi
command -v swift >/dev/null || { echo "Swift 6 toolchain not found on PATH" >&2; exit 1; }
