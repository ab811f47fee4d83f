# Reads scripts/lib/files, the list of what Keywell installs (sourced by install.sh and
# package.sh, which set the folders first).
#
# keywell_files SCOPE: prints "kind source target mode" for each entry that SCOPE (source or
# package) installs, with these folders put in for their @NAME@: BINDIR MANDIR BASHCOMPDIR
# ZSHCOMPDIR FISHCOMPDIR DBUSDIR SYSTEMDUSERDIR XDPDIR AUTOSTARTDIR ENVDIR PAMDIR PAMCONFIGSDIR.
keywell_files() {
  local scope="$1" list where kind source target mode name
  list="$(dirname "${BASH_SOURCE[0]}")/files"
  while read -r where kind source target mode; do
    case "$where" in ''|'#'*) continue ;; esac
    [ "$where" = both ] || [ "$where" = "$scope" ] || continue
    for name in BINDIR MANDIR BASHCOMPDIR ZSHCOMPDIR FISHCOMPDIR DBUSDIR SYSTEMDUSERDIR XDPDIR \
                AUTOSTARTDIR ENVDIR PAMDIR PAMCONFIGSDIR; do
      [[ "$target" == *"@$name@"* ]] || continue
      [ -n "${!name+set}" ] || { echo "files: $name is not set" >&2; return 1; }
      target="${target//@$name@/${!name}}"
    done
    case "$target" in
      *@*) echo "files: $target: an unknown @NAME@" >&2; return 1 ;;
    esac
    printf '%s %s %s %s\n' "$kind" "$source" "$target" "$mode"
  done < "$list"
}
