#!/usr/bin/env bash
# bench-remote.sh — landings into one git remote branch: throughput with
# racing hosts, and the cost of one landing next to a plain git push.
#
#   scripts/bench-remote.sh                  # 4 hosts x 5 transactions, 5 single landings
#   HOSTS=8 PER_HOST=5 scripts/bench-remote.sh
#   FILES=2000 scripts/bench-remote.sh       # a bigger repository (default 200 files)
#
# The server is `git daemon --enable=receive-pack` on 127.0.0.1 (a random
# free port). Each host is its own clone, state root and airlock process;
# all hosts start `airlock land --remote origin --branch main ID...` at
# once, each transaction adding one file and editing its own line of a
# shared file (so racing landings three-way merge it), with no validator:
# the figure is airlock's and git's cost, not a test suite's. Single
# landings are timed one at a time against `git commit && git push` of the
# same kind of change from a clone that is up to date (RUNS rounds,
# median).
set -euo pipefail

cd "$(dirname "$0")/.."
HOSTS=${HOSTS:-4}
PER_HOST=${PER_HOST:-5}
RUNS=${RUNS:-5}
FILES=${FILES:-200}
WORK=${WORK:-$(mktemp -d /tmp/airlock-bench-remote.XXXXXX)}
mkdir -p "$WORK"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@airlock.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@airlock.invalid
AIRLOCK=$WORK/airlock
DAEMON=""
cleanup() {
	[ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null || true
	[ "${KEEP:-}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

go build -o "$AIRLOCK" ./cmd/airlock
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$WORK/srv"
git init -q --bare -b main "$WORK/srv/proj.git"
git daemon --enable=receive-pack --export-all --reuseaddr --base-path="$WORK/srv" \
	--listen=127.0.0.1 --port="$port" "$WORK/srv" 2>"$WORK/daemon.log" &
DAEMON=$!
URL=git://127.0.0.1:$port/proj.git
for _ in $(seq 100); do git ls-remote "$URL" >/dev/null 2>&1 && break; sleep 0.05; done

total=$((HOSTS * PER_HOST))
seedw=$WORK/seed
mkdir -p "$seedw/src"
for i in $(seq "$FILES"); do printf 'package p\n\n// file %d\nvar V%d = %d\n' "$i" "$i" "$i" >"$seedw/src/f$i.go"; done
for i in $(seq 0 $((2 * (total + RUNS) + 1))); do echo "line $i"; done >"$seedw/shared.txt"
git -C "$seedw" init -q -b main
git -C "$seedw" add -A
git -C "$seedw" commit -q -m seed
git -C "$seedw" push -q "$URL" main

# Open every transaction first: the race is the landing alone.
declare -a HOST_IDS
for h in $(seq 0 $((HOSTS - 1))); do
	d=$WORK/host$h
	git clone -q "$URL" "$d/clone"
	ids=""
	for j in $(seq 0 $((PER_HOST - 1))); do
		k=$((h * PER_HOST + j))
		out=$(AIRLOCK_STATE_DIR=$d/state "$AIRLOCK" open --workdir "$d/clone")
		id=$(echo "$out" | sed -n 1p)
		staged=$(echo "$out" | sed -n 2p)
		echo "host $h tx $j" >"$staged/h$h-$j.txt"
		sed -i "$((2 * k + 2))s/.*/edited by host $h tx $j/" "$staged/shared.txt"
		ids="$ids $id"
	done
	HOST_IDS[$h]=$ids
done

echo "racing: $HOSTS hosts x $PER_HOST transactions, one branch, $FILES-file repository"
t0=$(now)
pids=""
for h in $(seq 0 $((HOSTS - 1))); do
	d=$WORK/host$h
	# shellcheck disable=SC2086
	(cd "$d/clone" && AIRLOCK_STATE_DIR=$d/state "$AIRLOCK" land -q --remote origin --branch main --retries 100 ${HOST_IDS[$h]} >"$d/land.out" 2>&1; echo $? >"$d/land.rc") &
	pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
t1=$(now)
landed=$(git -C "$WORK/srv/proj.git" log --first-parent --format='%(trailers:key=Airlock-Tx,valueonly)' main | grep -c . || true)
attempts=$(cat "$WORK"/host*/land.out | sed -n 's/.*attempts=\([0-9]*\).*/\1/p' | awk '{s+=$1} END {print s+0}')
for h in $(seq 0 $((HOSTS - 1))); do
	if [ "$(cat "$WORK/host$h/land.rc")" != 0 ]; then echo "host $h failed:"; cat "$WORK/host$h/land.out"; exit 1; fi
done
secs=$(echo "$t1 - $t0" | bc -l)
printf 'landed %d of %d in %.2f s: %.0f landings/min; %d attempts in all (%.2f per landing)\n' \
	"$landed" "$total" "$secs" "$(echo "$landed * 60 / $secs" | bc -l)" "$attempts" "$(echo "$attempts / $landed" | bc -l)"
AIRLOCK_STATE_DIR=$WORK/verify "$AIRLOCK" receipt verify --remote "$URL" --branch main --workdir "$WORK/host0/clone"

echo "one landing vs git push ($RUNS rounds, median)"
single=$WORK/single
plain=$WORK/plain
git clone -q "$URL" "$single"
git clone -q "$URL" "$plain"
: >"$WORK/t.land"
: >"$WORK/t.push"
for r in $(seq 1 "$RUNS"); do
	git -C "$single" pull -q --ff-only origin main
	out=$(AIRLOCK_STATE_DIR=$WORK/single-state "$AIRLOCK" open --workdir "$single")
	id=$(echo "$out" | sed -n 1p)
	staged=$(echo "$out" | sed -n 2p)
	echo "single $r" >"$staged/single-$r.txt"
	a=$(now)
	(cd "$single" && AIRLOCK_STATE_DIR=$WORK/single-state "$AIRLOCK" land -q --remote origin --branch main "$id" >/dev/null)
	b=$(now)
	echo "$b - $a" | bc -l >>"$WORK/t.land"

	git -C "$plain" pull -q --ff-only origin main
	echo "plain $r" >"$plain/plain-$r.txt"
	a=$(now)
	git -C "$plain" add -A
	git -C "$plain" commit -q -m "plain $r"
	git -C "$plain" push -q origin HEAD:main
	b=$(now)
	echo "$b - $a" | bc -l >>"$WORK/t.push"
done
l=$(median <"$WORK/t.land")
p=$(median <"$WORK/t.push")
printf 'airlock land --remote: %.0f ms   git add+commit+push: %.0f ms   ratio %.1fx\n' \
	"$(echo "$l * 1000" | bc -l)" "$(echo "$p * 1000" | bc -l)" "$(echo "$l / $p" | bc -l)"
echo "samples (s): land $(tr '\n' ' ' <"$WORK/t.land")| push $(tr '\n' ' ' <"$WORK/t.push")"
