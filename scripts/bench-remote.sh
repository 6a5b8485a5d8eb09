#!/usr/bin/env bash
# bench-remote.sh — landings into one git remote branch: throughput with
# racing hosts, and the cost of one landing next to a plain git push.
#
#   scripts/bench-remote.sh                  # 4 hosts x 5 transactions, 5 single landings
#   HOSTS=8 PER_HOST=5 scripts/bench-remote.sh
#   FILES=2000 scripts/bench-remote.sh       # a bigger repository (default 200 files)
#   BATCH=0 scripts/bench-remote.sh          # skip the batch rows (they take minutes)
#   BAD_N=9 BAD_SECS=2 RACE_SECS=5 scripts/bench-remote.sh   # the batch rows' sizes
#
# The server is `git daemon --enable=receive-pack` on 127.0.0.1 (a random
# free port). Each host is its own clone, state root and airlock process;
# all hosts start `airlock land --remote origin --branch main ID...` at
# once, each transaction adding one file and editing its own line of a
# shared file (so racing landings three-way merge it), with no validator:
# the figure is airlock's and git's cost, not a test suite's. Single
# landings are timed one at a time against `git commit && git push` of the
# same kind of change from a clone that is up to date (RUNS rounds,
# median). The racing hosts land their transactions one `land` call each
# (a landing per fetch-validate-push, as before batches), so the row
# stays comparable with earlier runs.
#
# Then the batch rows (BATCH=1, the default), each on a repository of its
# own on the same server:
#  - BAD_N transactions from one host, one of them (the sixth) breaking a
#    BAD_SECS validator: one `land` of all of them (a batch that bisects)
#    against one `land` per transaction (serial);
#  - HOSTS racing hosts x PER_HOST transactions with a RACE_SECS validator:
#    landings per minute with one batch `land` per host, with one `land`
#    per transaction, and with a plain loop per commit of `git pull
#    --rebase`, the same validator, `git push` (again when the push loses).
set -euo pipefail

cd "$(dirname "$0")/.."
HOSTS=${HOSTS:-4}
PER_HOST=${PER_HOST:-5}
RUNS=${RUNS:-5}
FILES=${FILES:-200}
BATCH=${BATCH:-1}
BAD_N=${BAD_N:-9}
BAD_SECS=${BAD_SECS:-2}
RACE_SECS=${RACE_SECS:-5}
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
	(
		cd "$d/clone"
		rc=0
		for id in ${HOST_IDS[$h]}; do
			AIRLOCK_STATE_DIR=$d/state "$AIRLOCK" land -q --remote origin --branch main --retries 100 "$id" >>"$d/land.out" 2>&1 || rc=$?
		done
		echo $rc >"$d/land.rc"
	) &
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

[ "$BATCH" = 1 ] || exit 0

# newrepo NAME: a served repository with one seed commit of shared.txt
# (a line per transaction to come); prints its URL.
newrepo() {
	local w=$WORK/seed-$1
	mkdir -p "$w"
	git init -q --bare -b main "$WORK/srv/$1.git"
	for i in $(seq 0 $((2 * 64 + 1))); do echo "line $i"; done >"$w/shared.txt"
	git -C "$w" init -q -b main
	git -C "$w" add -A
	git -C "$w" commit -q -m seed
	git -C "$w" push -q "git://127.0.0.1:$port/$1.git" main
	echo "git://127.0.0.1:$port/$1.git"
}

# opentx STATE CLONE K [bad]: a transaction adding tx-K.txt and editing
# line K of shared.txt (bad: adding bad.txt too); prints its id.
opentx() {
	local out id staged
	out=$(AIRLOCK_STATE_DIR=$1 "$AIRLOCK" open --workdir "$2")
	id=$(echo "$out" | sed -n 1p)
	staged=$(echo "$out" | sed -n 2p)
	echo "tx $3" >"$staged/tx-$3.txt"
	sed -i "$((2 * $3 + 2))s/.*/edited by tx $3/" "$staged/shared.txt"
	[ "${4:-}" = bad ] && echo "breaks the build" >"$staged/bad.txt"
	echo "$id"
}

commits() { git -C "$WORK/srv/$1.git" rev-list --count main; }

echo "one bad transaction in $BAD_N, a ${BAD_SECS} s validator (fails when bad.txt is in the tree)"
for mode in batch serial; do
	url=$(newrepo "bad-$mode")
	d=$WORK/bad-$mode
	git clone -q "$url" "$d/clone"
	ids=""
	for k in $(seq 0 $((BAD_N - 1))); do
		if [ "$k" = 5 ]; then ids="$ids $(opentx "$d/state" "$d/clone" "$k" bad)"; else ids="$ids $(opentx "$d/state" "$d/clone" "$k")"; fi
	done
	runs=$d/runs
	: >"$runs"
	v="echo run >> $runs; sleep $BAD_SECS; test ! -e bad.txt"
	a=$(now)
	(
		cd "$d/clone"
		if [ "$mode" = batch ]; then
			# shellcheck disable=SC2086
			AIRLOCK_STATE_DIR=$d/state "$AIRLOCK" land -q --remote origin --branch main --validate "$v" $ids >"$d/land.out" 2>&1 || true
		else
			for id in $ids; do AIRLOCK_STATE_DIR=$d/state "$AIRLOCK" land -q --remote origin --branch main --validate "$v" "$id" >>"$d/land.out" 2>&1 || true; done
		fi
	)
	b=$(now)
	printf '%-6s landed %d of %d (one refused ValidationFailed: %d) in %.1f s, %d validator runs\n' "$mode" \
		"$(($(commits "bad-$mode") - 1))" "$BAD_N" "$(grep -c 'refused (ValidationFailed)' "$d/land.out" || true)" \
		"$(echo "$b - $a" | bc -l)" "$(wc -l <"$runs")"
done

echo "racing: $HOSTS hosts x $PER_HOST transactions, a ${RACE_SECS} s validator"
for mode in batch serial git; do
	url=$(newrepo "race-$mode")
	for h in $(seq 0 $((HOSTS - 1))); do
		d=$WORK/race-$mode-$h
		git clone -q "$url" "$d/clone"
		git -C "$d/clone" config pull.rebase true
		ids=""
		if [ "$mode" != git ]; then
			for j in $(seq 0 $((PER_HOST - 1))); do ids="$ids $(opentx "$d/state" "$d/clone" $((h * PER_HOST + j)))"; done
		fi
		echo "$ids" >"$d/ids"
		: >"$d/runs"
	done
	a=$(now)
	pids=""
	for h in $(seq 0 $((HOSTS - 1))); do
		d=$WORK/race-$mode-$h
		v="echo run >> $d/runs; sleep $RACE_SECS"
		(
			cd "$d/clone"
			ids=$(cat "$d/ids")
			case $mode in
			batch)
				# shellcheck disable=SC2086
				AIRLOCK_STATE_DIR=$d/state "$AIRLOCK" land -q --remote origin --branch main --retries 100 --validate "$v" $ids >"$d/land.out" 2>&1
				;;
			serial)
				for id in $ids; do AIRLOCK_STATE_DIR=$d/state "$AIRLOCK" land -q --remote origin --branch main --retries 100 --validate "$v" "$id" >>"$d/land.out" 2>&1; done
				;;
			git)
				# The same change per commit, by hand: rebase on what
				# landed, validate, push; again when the push loses.
				for j in $(seq 0 $((PER_HOST - 1))); do
					k=$((h * PER_HOST + j))
					git pull -q --rebase origin main
					echo "tx $k" >"tx-$k.txt"
					sed -i "$((2 * k + 2))s/.*/edited by tx $k/" shared.txt
					git add -A
					git commit -q -m "tx $k"
					until git pull -q --rebase origin main && sh -c "$v" && git push -q origin HEAD:main 2>/dev/null; do :; done
				done >"$d/land.out" 2>&1
				;;
			esac
		) &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086
	wait $pids
	b=$(now)
	n=$(($(commits "race-$mode") - 1))
	secs=$(echo "$b - $a" | bc -l)
	printf '%-6s landed %d of %d in %.1f s: %.1f landings/min, %d validator runs\n' "$mode" "$n" "$total" "$secs" \
		"$(echo "$n * 60 / $secs" | bc -l)" "$(cat "$WORK"/race-"$mode"-*/runs | wc -l)"
done
