#!/usr/bin/env bash
# bench-sparse.sh — what one commit of a small edit to a large sparse file
# costs: wall time, and the disk the staged tree, the state and the base
# file take, next to `cp --sparse=always`.
#
#   scripts/bench-sparse.sh                      # a 1 GiB image, 4 KiB of data at 4 offsets
#   SIZE_MIB=4096 scripts/bench-sparse.sh        # the issue's 4 GiB image
#   AIRLOCK=/path/to/airlock scripts/bench-sparse.sh   # measure another build
#
# WORK (scratch directory, default a new one under /tmp: put it on the file
# system to measure) holds the base, the state and a binary built from this
# checkout; KEEP=1 keeps it. The command airlock runs is
# `printf x | dd of=img bs=1 seek=N conv=notrunc` (one byte written into a
# hole), and it prints the staged file's own disk use from inside the
# staged tree. Disk figures are `du` (allocated blocks), not apparent
# sizes; times are wall and CPU (user+sys) seconds of the airlock process.
set -euo pipefail

cd "$(dirname "$0")/.."
SIZE_MIB=${SIZE_MIB:-1024}
WORK=${WORK:-$(mktemp -d /tmp/airlock-bench-sparse.XXXXXX)}
mkdir -p "$WORK"
cleanup() { [ "${KEEP:-}" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT
if [ -z "${AIRLOCK:-}" ]; then
	AIRLOCK=$WORK/airlock
	go build -o "$AIRLOCK" ./cmd/airlock
fi
export AIRLOCK_STATE_DIR=$WORK/state
BASE=$WORK/base
mkdir -p "$BASE"
size=$((SIZE_MIB << 20))
truncate -s "$size" "$BASE/img"
for at in 0 $((size / 3)) $((size / 2 + 12345)) $((size - 1024)); do
	head -c 1024 /dev/urandom | dd of="$BASE/img" bs=1024 seek="$at" oflag=seek_bytes conv=notrunc status=none
done
sync
kib() { du -sk "$1" | cut -f1; }
# timed CMD... runs CMD and prints its wall and CPU (user+sys) seconds: on
# a busy machine the CPU figure is the steadier one.
timed() {
	/usr/bin/time -f '%e %U %S' -o "$WORK/time" "$@" >/dev/null
	read -r wall user sys <"$WORK/time"
	echo "wall ${wall} s, cpu $(awk "BEGIN{printf \"%.2f\", $user+$sys}") s"
}

took=$(timed cp --sparse=always "$BASE/img" "$WORK/cp-copy")
echo "cp --sparse=always: $took, $(kib "$WORK/cp-copy") KiB"
rm -f "$WORK/cp-copy"

seek=$((size / 4))
took=$(cd "$BASE" && timed "$AIRLOCK" run -- sh -c "printf x | dd of=img bs=1 seek=$seek conv=notrunc status=none && echo staged-img-kib=\$(du -k img | cut -f1) >&2" 2>"$WORK/settle")
grep -o 'staged-img-kib=[0-9]*' "$WORK/settle" || true
grep -E 'airlock\.(outcome|modified)=' "$WORK/settle" | tr '\n' ' '
echo
echo "commit (run): $took; state after: $(kib "$AIRLOCK_STATE_DIR") KiB; base img: $(kib "$BASE/img") KiB (apparent $(stat -c %s "$BASE/img") bytes)"
[ "$(od -An -c -j "$seek" -N1 "$BASE/img" | tr -d ' ')" = x ] || { echo "the base does not hold the edit" >&2; exit 1; }

tx=$(grep -o 'airlock\.tx=[^ ]*' "$WORK/settle" | cut -d= -f2)
took=$(cd "$BASE" && timed "$AIRLOCK" undo "$tx" 2>"$WORK/undo")
echo "undo: $took; state after: $(kib "$AIRLOCK_STATE_DIR") KiB; base img: $(kib "$BASE/img") KiB"
