#!/usr/bin/env bash
# How much time pam_keywell adds to a login: `pamtester SERVICE USER authenticate open_session`
# with the module in the stack and without it, medians of several runs, for the first login
# (no daemon running, no keychain yet) and for later logins (daemon running, keychain there).
# Target: at most 0.5 s added. With swtpm and the keywell CLI at hand, also a login without a
# password (auth: pam_permit, as with a fingerprint) that unlocks `login` through a software TPM
# (docs/login-unlock.md), also bound to the boot state (PCRs), against the same stack without the
# module. Target: at most 0.3 s added.
#
#   sudo pam/bench.sh [-n RUNS] [-f FIRST_LOGINS]
#
# Environment: KEYWELLD (daemon to start; default /usr/local/bin/keywelld), KEYWELL (the CLI;
# default beside the daemon), PAM_KEYWELL_SO (module; default pam/build/pam_keywell.so, built if
# missing). Throwaway users, the /etc/pam.d/keywell-bench* services, the software TPM and the
# users' login unlock values are removed afterwards.
set -euo pipefail

runs=20
firsts=5
while getopts "n:f:h" opt; do
  case "$opt" in
    n) runs=$OPTARG ;;
    f) firsts=$OPTARG ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done

here="$(cd "$(dirname "$0")" && pwd)"
[ "$(id -u)" -eq 0 ] || { echo "bench: run as root (it creates users and PAM services)" >&2; exit 1; }
command -v pamtester >/dev/null || { echo "bench: pamtester missing (scripts/setup.sh)" >&2; exit 1; }
module="${PAM_KEYWELL_SO:-$here/build/pam_keywell.so}"
[ -e "$module" ] || make -s -C "$here"
daemon="${KEYWELLD:-/usr/local/bin/keywelld}"
if [ ! -x "$daemon" ]; then
  echo "bench: warning: no daemon at $daemon; the numbers show the module alone (binary missing)" >&2
fi

with=keywell-bench
base=keywell-bench-base
nopw=keywell-bench-nopw
nopw_base=keywell-bench-nopw-base
users=()
swtpm_pid=""
tpm_state=""

cleanup() {
  for u in "${users[@]}"; do
    uid="$(id -u "$u" 2>/dev/null)" || continue
    for pid in $(pgrep -U "$uid" || true); do kill "$pid" 2>/dev/null || true; done
    sleep 0.2
    for pid in $(pgrep -U "$uid" || true); do kill -9 "$pid" 2>/dev/null || true; done
    userdel -r -f "$u" >/dev/null 2>&1 || true
    rm -rf "/run/user/$uid"
    rm -f "/var/lib/keywell/login-unlock/$uid"
  done
  rm -f "/etc/pam.d/$with" "/etc/pam.d/$base" "/etc/pam.d/$nopw" "/etc/pam.d/$nopw_base"
  if [ -n "$swtpm_pid" ]; then kill "$swtpm_pid" 2>/dev/null || true; fi
  if [ -n "$tpm_state" ]; then rm -rf "$tpm_state"; fi
}
trap cleanup EXIT

cat >"/etc/pam.d/$base" <<EOF
auth     requisite  pam_unix.so
account  required   pam_unix.so
session  required   pam_unix.so
password requisite  pam_unix.so
EOF
cat >"/etc/pam.d/$with" <<EOF
auth     requisite  pam_unix.so
auth     optional   $module daemon=$daemon
account  required   pam_unix.so
session  required   pam_unix.so
session  optional   $module auto_start daemon=$daemon
password requisite  pam_unix.so
password optional   $module auto_start daemon=$daemon
EOF

cat >"/etc/pam.d/$nopw_base" <<EOF
auth     required   pam_permit.so
account  required   pam_unix.so
session  required   pam_unix.so
EOF
cat >"/etc/pam.d/$nopw" <<EOF
auth     required   pam_permit.so
auth     optional   $module daemon=$daemon
account  required   pam_unix.so
session  required   pam_unix.so
session  optional   $module auto_start daemon=$daemon
EOF

password="Bench-$(head -c 12 /dev/urandom | base64 | tr -d '/+=')"

new_user() {
  local name
  name="$(printf 'kwpam%08x' $(( (RANDOM << 16) | RANDOM )))"
  useradd -m -U -s /bin/sh "$name"
  printf '%s:%s\n' "$name" "$password" | chpasswd
  users+=("$name")
  REPLY="$name"
}

# One login; prints its wall time in microseconds.
time_login() {
  local svc=$1 user=$2 start end
  start=$(date +%s%N)
  if ! printf '%s\n' "$password" | setsid pamtester "$svc" "$user" authenticate open_session >/dev/null 2>&1; then
    echo "bench: login failed ($svc, $user)" >&2
    exit 1
  fi
  end=$(date +%s%N)
  echo $(( (end - start) / 1000 ))
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
ms() { awk -v us="$1" 'BEGIN { printf "%8.1f ms", us / 1000 }'; }

new_user; steady="$REPLY"

# No command substitution around new_user: it must add to `users` in this shell for cleanup.
base_times=() first_times=() later_times=()

# Without the module.
for _ in $(seq "$runs"); do base_times+=("$(time_login "$base" "$steady")"); done

# First logins: a fresh user each time, so the daemon starts and creates the keychain.
for _ in $(seq "$firsts"); do
  new_user
  first_times+=("$(time_login "$with" "$REPLY")")
done

# Later logins: the daemon is running and the keychain exists.
time_login "$with" "$steady" >/dev/null
for _ in $(seq "$runs"); do later_times+=("$(time_login "$with" "$steady")"); done

base_us=$(printf '%s\n' "${base_times[@]}" | median)
first_us=$(printf '%s\n' "${first_times[@]}" | median)
later_us=$(printf '%s\n' "${later_times[@]}" | median)

echo "pamtester ... authenticate open_session (median wall time)"
echo "  without pam_keywell:          $(ms "$base_us")   ($runs runs)"
echo "  with it, first login:         $(ms "$first_us")   ($firsts fresh users)   added $(ms $((first_us - base_us)))"
echo "  with it, later logins:        $(ms "$later_us")   ($runs runs)   added $(ms $((later_us - base_us)))"
worst=$(( first_us > later_us ? first_us - base_us : later_us - base_us ))
if [ "$worst" -le 500000 ]; then verdict="within"; else verdict="OVER"; fi
echo "  target: at most 500 ms added: $verdict"

# A login without a password, unlocking `login` through a software TPM.
keywell="${KEYWELL:-$(dirname "$daemon")/keywell}"
if ! command -v swtpm >/dev/null || [ ! -x "$keywell" ] || [ ! -x "$daemon" ]; then
  echo "login without a password, through the TPM: skipped (needs swtpm, $keywell and $daemon)"
  exit 0
fi
port=$(python3 -c '
import random, socket
for _ in range(200):
    p = random.randrange(20000, 60000, 2)
    try:
        for q in (p, p + 1):
            with socket.socket() as s: s.bind(("127.0.0.1", q))
        print(p); break
    except OSError: pass')
tpm_state="$(mktemp -d)"
swtpm socket --tpm2 --server "type=tcp,port=$port,bindaddr=127.0.0.1" \
  --ctrl "type=tcp,port=$((port + 1)),bindaddr=127.0.0.1" --flags startup-clear \
  --tpmstate "dir=$tpm_state" >/dev/null 2>&1 &
swtpm_pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done

new_user; tpm_user="$REPLY"
time_login "$with" "$tpm_user" >/dev/null
printf '%s\n' "$password" | KEYWELL_TPM_TCTI="swtpm:host=127.0.0.1,port=$port" \
  "$keywell" login-unlock enable "$tpm_user" >/dev/null 2>&1 || { echo "bench: login-unlock enable failed" >&2; exit 1; }
nopw_base_times=() tpm_times=()
for _ in $(seq "$runs"); do nopw_base_times+=("$(time_login "$nopw_base" "$tpm_user")"); done
for _ in $(seq "$runs"); do
  # The last session closes and `login` locks; the next login unseals it again.
  setsid pamtester "$nopw" "$tpm_user" close_session >/dev/null 2>&1
  tpm_times+=("$(time_login "$nopw" "$tpm_user")")
done
nopw_base_us=$(printf '%s\n' "${nopw_base_times[@]}" | median)
tpm_us=$(printf '%s\n' "${tpm_times[@]}" | median)
echo "pamtester ... authenticate open_session, auth without a password (pam_permit)"
echo "  without pam_keywell:          $(ms "$nopw_base_us")   ($runs runs)"
echo "  with it, unsealed by the TPM: $(ms "$tpm_us")   ($runs runs)   added $(ms $((tpm_us - nopw_base_us)))"

# The same, with the sealed object bound to the boot state (PCRs 0 and 7): a policy session,
# a PCR read and two policy commands more per unseal.
printf '%s\n' "$password" | KEYWELL_TPM_TCTI="swtpm:host=127.0.0.1,port=$port" \
  "$keywell" login-unlock enable --pcrs 0,7 "$tpm_user" >/dev/null 2>&1 || { echo "bench: login-unlock enable --pcrs failed" >&2; exit 1; }
bound_times=()
for _ in $(seq "$runs"); do
  setsid pamtester "$nopw" "$tpm_user" close_session >/dev/null 2>&1
  bound_times+=("$(time_login "$nopw" "$tpm_user")")
done
bound_us=$(printf '%s\n' "${bound_times[@]}" | median)
# Timings of logins that did not unseal would mean nothing: keywelld logs each unlock.
tpm_log="$(getent passwd "$tpm_user" | cut -d: -f6)/.local/state/keywell/keywelld.log"
unsealed=$(grep -c "unlocked login at login through the TPM" "$tpm_log" 2>/dev/null || true)
if [ "${unsealed:-0}" -lt $((2 * runs)) ]; then
  echo "bench: only ${unsealed:-0} of $((2 * runs)) logins unlocked login through the TPM ($tpm_log)" >&2
  exit 1
fi
echo "  with it, bound to PCRs 0,7:   $(ms "$bound_us")   ($runs runs)   added $(ms $((bound_us - nopw_base_us)))"
worst=$(( bound_us > tpm_us ? bound_us - nopw_base_us : tpm_us - nopw_base_us ))
if [ "$worst" -le 300000 ]; then verdict="within"; else verdict="OVER"; fi
echo "  target: at most 300 ms added: $verdict"
