#!/usr/bin/env bash
# bench-signing.sh — what signing receipts costs: a landing into a git
# remote, a local commit, and receipt verify --remote / log over a chain,
# each unsigned and signed (gpg.format=ssh, an ed25519 key file).
#
#   scripts/bench-signing.sh            # 20 rounds, a chain of 20 landings
#   N=50 scripts/bench-signing.sh
#
# The remote is a bare repository reached by path (git's local transport):
# the figure is airlock's, git's and ssh-keygen's cost, not a network's.
# Each round lands (and commits) once unsigned and once signed, alternating
# which goes first, so that a busy machine slows both alike; the figures
# are medians. ssh-keygen's own cost is timed alone as well.
set -euo pipefail

cd "$(dirname "$0")/.."
N=${N:-20}
WORK=$(mktemp -d /tmp/airlock-bench-signing.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 SSH_AUTH_SOCK=
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@airlock.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@airlock.invalid
AIRLOCK=$WORK/airlock
go build -o "$AIRLOCK" ./cmd/airlock
export HOME=$WORK/home AIRLOCK_STATE_DIR=$WORK/state
mkdir -p "$HOME"
ssh-keygen -q -t ed25519 -N "" -C bench -f "$WORK/key"
echo "bench@airlock.invalid $(cut -d' ' -f1,2 "$WORK/key.pub")" >"$WORK/allowed"

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for mode in unsigned signed; do
  git init -q --bare -b main "$WORK/$mode.git"
  git clone -q "$WORK/$mode.git" "$WORK/$mode" 2>/dev/null
  (cd "$WORK/$mode" && echo a >a.txt && git add a.txt && git commit -qm seed && git push -q origin main)
  if [ "$mode" = signed ]; then
    git -C "$WORK/$mode" config gpg.format ssh
    git -C "$WORK/$mode" config user.signingkey "$WORK/key"
  fi
done

one() { # mode kind i: open, write one file, land or commit; prints ms
  local out id dir t
  out=$("$AIRLOCK" open --workdir "$WORK/$1")
  id=$(sed -n 1p <<<"$out") dir=$(sed -n 2p <<<"$out")
  echo "$3" >"$dir/$2$3.txt"
  t=$(date +%s%N)
  if [ "$2" = land ]; then
    "$AIRLOCK" land -q --remote origin --branch main "$id" >/dev/null
  else
    "$AIRLOCK" commit -q "$id" >/dev/null
  fi
  ms "$t"
}

for kind in land commit; do
  for mode in unsigned signed; do : >"$WORK/$kind.$mode"; done
  for i in $(seq "$N"); do
    order="unsigned signed"
    [ $((i % 2)) = 0 ] && order="signed unsigned"
    for mode in $order; do one "$mode" "$kind" "$i" >>"$WORK/$kind.$mode"; done
  done
done

echo "N=$N rounds; medians in ms"
for kind in land commit; do
  printf '%-28s unsigned %5s   signed %5s\n' "$kind (settle only)" "$(median <"$WORK/$kind.unsigned")" "$(median <"$WORK/$kind.signed")"
done
for mode in unsigned signed; do
  t=$(date +%s%N)
  (cd "$WORK/$mode" && "$AIRLOCK" receipt verify --remote origin --branch main --allowed-signers "$WORK/allowed" >/dev/null)
  v=$(ms "$t")
  t=$(date +%s%N)
  "$AIRLOCK" log --workdir "$WORK/$mode" --allowed-signers "$WORK/allowed" >/dev/null
  printf 'verify --remote of %3d landings: %-8s %5s ms; log of %3d commits: %5s ms\n' "$N" "$mode" "$v" "$N" "$(ms "$t")"
done
head -c 3000 /dev/urandom | base64 >"$WORK/data"
: >"$WORK/sign"; : >"$WORK/check"
for i in $(seq "$N"); do
  t=$(date +%s%N)
  ssh-keygen -Y sign -q -n airlock-receipt -f "$WORK/key" <"$WORK/data" >"$WORK/sig" 2>/dev/null
  ms "$t" >>"$WORK/sign"
  t=$(date +%s%N)
  ssh-keygen -Y find-principals -f "$WORK/allowed" -s "$WORK/sig" >/dev/null
  ssh-keygen -Y verify -f "$WORK/allowed" -I bench@airlock.invalid -n airlock-receipt -s "$WORK/sig" <"$WORK/data" >/dev/null
  ms "$t" >>"$WORK/check"
done
echo "ssh-keygen alone: sign $(median <"$WORK/sign") ms, find-principals + verify $(median <"$WORK/check") ms"
