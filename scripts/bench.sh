#!/usr/bin/env bash
# bench.sh — airlock side by side with cp -a, git worktree add and git status.
#
#   scripts/bench.sh                 # generate a 13k-file tree and measure it
#   FILES=63000 scripts/bench.sh     # a bigger generated tree
#   TREE=/path/to/repo scripts/bench.sh   # measure an existing git checkout
#                                    # (the commit step writes files under
#                                    # airlock-bench/ in it, removed at the end)
#
# Environment: RUNS (interleaved rounds, default 3), WORK (scratch directory
# on the tree's file system, default a new one under /tmp), KEEP=1 keeps it
# (and every copy made on the way: nothing is deleted while measuring).
#
# Issue 20's table ("Warm runs cost what changed") is printed last, every
# row as the median of its rounds' ratios to a reference measured in the
# same round, with the issue's target and met/MISSED. Its sections beyond
# the main rounds are optional:
#
#   SERIES="1000 10000 100000"  the growth series (default): generated trees
#                       of these sizes; per tree a warm `run -- true`, a
#                       10-file `diff` and `commit`, `git status`; the rows
#                       give the largest tree against the 10k one (or the
#                       next smaller). SERIES=0 skips it.
#   NEWFILES=5000       the commit of this many new ~200-byte files (each
#                       its own bytes, as an install's are) in NEWFILES_DIRS
#                       (50) directories over a fresh 1k-file tree, written
#                       into an open transaction's staged tree and flushed
#                       before the commit is timed, against `cp -a` of the
#                       committed directory plus `sync`, timed after a
#                       `sync` too. NEWFILES=0 skips it.
#   NPM=1               `npm install $NPM_PKGS` (default "eslint webpack",
#                       about 5.7k paths) through `run` against a direct
#                       install in a copy of the same project. Installs come
#                       from an offline cache: NPM_CACHE=DIR (already primed),
#                       else one primed once in WORK from NPM_REGISTRY (a
#                       local registry's URL) or, when it answers, from
#                       registry.npmjs.org; the output says which. Skipped,
#                       saying why, without npm or a source. NPM=0 skips it.
#   GOBUILD=1           `go build` of a small generated module (warm build
#                       cache, one source file rewritten per round) through
#                       `run` against the same in a copy. GOBUILD=0 skips it.
#   ROOTLESS=1          the runs as an unprivileged user (root drops to uid
#                       65534 with setpriv): the rootless overlay rows, and
#                       the warm default run as that user against root's on
#                       the same copy ("as root": target ≤ 1.1×, the 10% being
#                       this machine's noise). ROOTLESS=0 skips them.
#
# The warm default `run -- true` is compared with `git status --porcelain`:
# target ≤ 2× on a real tree (TREE=), ≤ 3× on a generated one (gentree puts
# four fifths of the files in an ignored node_modules). A quick run:
#
#   RUNS=1 SERIES="1000 10000" NPM=0 scripts/bench.sh
#
# Every figure is the median of RUNS rounds; within a round the contenders
# run one after another, so a slow moment of the machine hits all of them.
# Staged trees and copies are removed only at the end, in the background:
# on a file system without a journal, creating many files right after
# deleting many is several times slower, and would be measured instead.
# Where a step must delete (a commit retires its staged tree to a detached
# `rm -rf`), `quiet` waits for that removal, syncs and pauses before the
# next measurement; the load average is printed with each section.
set -euo pipefail

cd "$(dirname "$0")/.."
REPO=$PWD
RUNS=${RUNS:-3}
FILES=${FILES:-13000}
WORK=${WORK:-$(mktemp -d /tmp/airlock-bench.XXXXXX)}
mkdir -p "$WORK"
export AIRLOCK_STATE_DIR=$WORK/state
AIRLOCK=$WORK/airlock

cleanup() {
	rm -rf "${BIG:-/nonexistent}/airlock-bench" "${SMALL:-/nonexistent}/airlock-bench"
	if [ "${KEEP:-}" != 1 ]; then
		for d in "$WORK"/state/tx/*/staged; do
			[ -d "$d" ] && umount -l "$d" 2>/dev/null || true
		done
		(rm -rf "$WORK" &)
	fi
}
trap cleanup EXIT

log() { printf '%s\n' "$*" >&2; }

log "building airlock"
go build -o "$AIRLOCK" ./cmd/airlock
go build -o "$WORK/gentree" ./scripts/gentree

if [ -n "${TREE:-}" ]; then
	BIG=$(cd "$TREE" && pwd)
else
	BIG=$WORK/tree
	log "generating a $FILES-file tree in $BIG"
	"$WORK/gentree" -out "$BIG" -files "$FILES" >&2
fi
SMALL=$WORK/small
"$WORK/gentree" -out "$SMALL" -files 1000 >/dev/null
NFILES=$(find "$BIG" | wc -l)
SIZE=$(du -sh "$BIG" | cut -f1)
"$AIRLOCK" doctor >&2 || true
BACKENDS="copy"
"$AIRLOCK" doctor --json | grep -q '"name": "reflink",' && "$AIRLOCK" doctor --json | tr -d '\n' | grep -q '"name": "reflink",[^}]*"supported": true' && BACKENDS="$BACKENDS reflink"
"$AIRLOCK" doctor --json | tr -d '\n' | grep -q '"name": "overlay",[^}]*"supported": true' && BACKENDS="$BACKENDS overlay"
log "backends here: $BACKENDS"

# warm the cache, as every figure below is for a warm cache

find "$BIG" -type f -print0 | xargs -0 cat >/dev/null
(cd "$BIG" && git status --porcelain >/dev/null)

declare -A T   # name -> space-separated ms samples
RSS=""

now() { date +%s%N; }
# m NAME CMD...: time CMD (wall, ms) and keep the sample under NAME.
m() {
	local name=$1
	shift
	local t0 t1
	t0=$(now)
	"$@" >"${MOUT:-/dev/null}" 2>"$WORK/err" || {
		log "FAILED: $name: $*"
		cat "$WORK/err" >&2
		exit 1
	}
	t1=$(now)
	T[$name]="${T[$name]:-} $(((t1 - t0) / 1000))"
}

# mj NAME AIRLOCK... run --json ...: m, keeping the settle result, then
# note (in REC[NAME]) whether the run's staged tree was recycled
declare -A REC
mj() {
	local name=$1
	MOUT=$WORK/out m "$@"
	shift
	local tx w
	tx=$(grep -o '"tx": "[^"]*"' "$WORK/out" | head -1 | cut -d'"' -f4)
	# the command's words up to `run` are how to call airlock (setpriv ...)
	local call=()
	for w in "$@"; do
		[ "$w" = run ] && break
		call+=("$w")
	done
	local shown watched
	if [ -n "$tx" ] && shown=$("${call[@]}" show "$tx" --json 2>/dev/null) && grep -q '"recycled"' <<<"$shown"; then
		# and which of its refresh's measurements the state root's watch
		# daemon made instead of a walk
		watched=$(grep -o '"watched": "[^"]*"' <<<"$shown" | cut -d'"' -f4 || true)
		REC[$name]="${REC[$name]:-} yes${watched:+($watched)}"
	else
		REC[$name]="${REC[$name]:-} no"
	fi
}

# load SECTION: keep the load average at the start of a section
LOADS=""
load() { LOADS="$LOADS
  $1 (at ${SECONDS}s): $(cut -d' ' -f1-3 /proc/loadavg)"; }

median() { # microsecond samples -> median in ms with one decimal
	printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {m=a[int((NR+1)/2)]; printf "%.1f", m/1000}'
}

# quiet: wait for staged trees that airlock removes in the background
# (and the copies removed between rounds) before measuring again.
quiet() {
	while pgrep -f "rm -rf -- $WORK" >/dev/null; do sleep 1; done
	sync
	sleep 3
}

# --- rootless overlay (issue 12): `run --backend overlay -- true` as an
# unprivileged user, against `git status --porcelain` of the same tree as
# the same user. As root, airlock runs through setpriv as uid 65534 on a
# copy of the tree that user owns (WORK becomes traversable for it); as
# anyone else, as that user on such a copy. Skipped, saying why, where
# doctor finds no overlay without root.
RL=$WORK/rootless
RL_AS=()
RL_OK=0
RL_USER=0 # 1: root, and a copy of the tree the unprivileged user owns
RL_WHY="ROOTLESS=0"
rootless_setup() {
	[ "${ROOTLESS:-1}" != 0 ] || return 0
	RL_WHY="the script does not run as root: there is no \"as root\" to compare with"
	if [ "$(id -u)" = 0 ]; then
		if ! command -v setpriv >/dev/null; then
			log "rootless overlay: setpriv (util-linux) is missing; not measured"
			RL_WHY="setpriv (util-linux) is missing"
			return
		fi
		RL_AS=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
	fi
	chmod 711 "$WORK"
	mkdir -p "$RL/state" "$RL/home"
	chmod 755 "$RL"
	cp -a "$BIG" "$RL/tree"
	cp "$AIRLOCK" "$RL/airlock"
	[ "$(id -u)" = 0 ] && chown -R 65534:65534 "$RL/tree" "$RL/state" "$RL/home"
	RL_AS+=(env "HOME=$RL/home" "AIRLOCK_STATE_DIR=$RL/state")
	[ "$(id -u)" = 0 ] && RL_USER=1
	local doc
	doc=$("${RL_AS[@]}" "$RL/airlock" doctor --json | tr -d '\n')
	if ! grep -q '"name": "overlay-rootless",[^}]*"supported": true' <<<"$doc"; then
		log "rootless overlay unsupported here; not measured: $(grep -o '"name": "overlay-rootless",[^}]*' <<<"$doc")"
		return
	fi
	"${RL_AS[@]}" git -C "$RL/tree" status --porcelain >/dev/null
	RL_OK=1
}
rootless_round() {
	[ "$RL_OK" = 1 ] || return 0
	m "git status --porcelain (rootless copy)" "${RL_AS[@]}" git -C "$RL/tree" status --porcelain
	m "run -- true (overlay, rootless)" "${RL_AS[@]}" "$RL/airlock" run --workdir "$RL/tree" --backend overlay --quiet -- true
	# issue 18: the copy backend's warm run as the unprivileged user, while
	# processes of another user (root, as this script runs) start and stop:
	# contained, it recycles; the /proc look it replaced refused every time
	[ "$(id -u)" = 0 ] || return 0
	(while :; do sleep 0.02 & sleep 0.01; wait; done) &
	local churn=$! last
	"${RL_AS[@]}" "$RL/airlock" run --workdir "$RL/tree" --backend copy --quiet -- true
	m "second run -- true (copy, rootless, root's processes churning)" "${RL_AS[@]}" "$RL/airlock" run --workdir "$RL/tree" --backend copy --quiet -- true
	kill "$churn"
	wait "$churn" 2>/dev/null || true
	last=$(ls -t "$RL/state/tx" | head -1)
	if "${RL_AS[@]}" "$RL/airlock" show "$last" --json | grep -q '"recycled"'; then
		RL_RECYCLED="${RL_RECYCLED:-} yes"
	else
		RL_RECYCLED="${RL_RECYCLED:-} no"
	fi
}
rootless_report() {
	[ "$RL_OK" = 1 ] || return 0
	local r
	r=$(awk -v a="$(median "${T["run -- true (overlay, rootless)"]}")" -v b="$(median "${T["git status --porcelain (rootless copy)"]}")" 'BEGIN { printf "%.2f", a / b }')
	echo "| \`git status --porcelain\` (as the unprivileged user) | $(median "${T["git status --porcelain (rootless copy)"]}") | |"
	echo "| \`airlock run -- true\` (overlay without root) | $(median "${T["run -- true (overlay, rootless)"]}") | ${r}× of git status |"
	RL_TARGET="rootless overlay \`run -- true\` ≤ 1.5× git status: $(awk -v r="$r" 'BEGIN { print (r <= 1.5 ? "met" : "missed") }') (${r}×)"
	if [ -n "${RL_RECYCLED:-}" ]; then
		r=$(awk -v a="$(median "${T["second run -- true (copy, rootless, root's processes churning)"]}")" -v b="$(median "${T["git status --porcelain (rootless copy)"]}")" 'BEGIN { printf "%.2f", a / b }')
		echo "| second \`airlock run -- true\` (copy, without root, while root's processes start and stop) | $(median "${T["second run -- true (copy, rootless, root's processes churning)"]}") | ${r}× of git status; recycled each round:${RL_RECYCLED} |"
	fi
}
# issue 20: the warm default run as the unprivileged user against root's
# on the same copy, each right after a run that pools its tree
nonroot_round() {
	[ "$RL_USER" = 1 ] || return 0
	quiet
	"$AIRLOCK" run --workdir "$RL/tree" --quiet -- true
	mj "warm run -- true (default, as root, on the unprivileged user's copy)" "$AIRLOCK" run --workdir "$RL/tree" --json -- true
	"${RL_AS[@]}" "$RL/airlock" run --workdir "$RL/tree" --quiet -- true
	mj "warm run -- true (default, unprivileged)" "${RL_AS[@]}" "$RL/airlock" run --workdir "$RL/tree" --json -- true
}
# --- end rootless overlay

# commit10 DIR R: modify the 5 files of DIR/airlock-bench and add 5 new ones
commit10() {
	local d=$1 i
	for i in 1 2 3 4 5; do echo "round $2" >>"$d/airlock-bench/m$i.txt"; done
	for i in 1 2 3 4 5; do echo "new $i" >"$d/airlock-bench/n$2-$i.txt"; done
}

edit10() { # edit 10 files (adds and modifications) under $1
	local d=$1 i
	local files
	files=$(cd "$d" && find . -path ./.git -prune -o -path ./node_modules -prune -o -type f -name '*.go' -print 2>/dev/null | head -5 || true)
	for f in $files; do echo "// bench edit" >>"$d/$f"; done
	mkdir -p "$d/airlock-bench-$2"
	for i in 1 2 3 4 5; do echo "new $i" >"$d/airlock-bench-$2/f$i.txt"; done
}

# in_dir DIR CMD...: CMD run in DIR (for m, which times a command)
in_dir() { (cd "$1" && shift && "$@"); }

# --- issue 20's growth series: a generated tree of each size in SERIES;
# per round and tree a warm default `run -- true` (beside `git status`),
# then a 10-file edit in a transaction opened over the pooled tree: its
# `diff`, then its `commit`
SERIES=${SERIES-1000 10000 100000}
[ "$SERIES" = 0 ] && SERIES=""
SERIES_WHY="SERIES=0"
declare -A SERIES_PATHS
series_setup() {
	local n d
	for n in $SERIES; do
		d=$WORK/series-$n
		if [ ! -d "$d" ]; then
			log "generating the series' $n-file tree"
			"$WORK/gentree" -out "$d" -files "$n" >&2
		fi
		SERIES_PATHS[$n]=$(find "$d" | wc -l)
		find "$d" -type f -print0 | xargs -0 cat >/dev/null
		git -C "$d" status --porcelain >/dev/null
		# the first run copies the tree and pools it for the next; the
		# second refreshes it with a walk (a fresh copy's watch began
		# after the copy was measured) and hands its watch to the state
		# root's daemon: the steady state of an agent's loop
		"$AIRLOCK" run --workdir "$d" --quiet -- true
		"$AIRLOCK" run --workdir "$d" --quiet -- true
	done
}
series_round() {
	local r=$1 n d
	for n in $SERIES; do
		d=$WORK/series-$n
		quiet
		m "series $n: git status --porcelain" git -C "$d" status --porcelain
		mj "series $n: warm run -- true (default)" "$AIRLOCK" run --workdir "$d" --json -- true
	done
	for n in $SERIES; do
		d=$WORK/series-$n
		quiet
		"$AIRLOCK" open --workdir "$d" --id "g-$n-$r" >/dev/null
		if "$AIRLOCK" show "g-$n-$r" --json | grep -q '"recycled"'; then
			REC["series $n: open"]="${REC["series $n: open"]:-} yes"
		else
			REC["series $n: open"]="${REC["series $n: open"]:-} no"
		fi
		edit10 "$AIRLOCK_STATE_DIR/tx/g-$n-$r/staged" "g$r"
		m "series $n: diff after a 10-file edit" "$AIRLOCK" diff "g-$n-$r" --name-status
		m "series $n: commit of the 10-file edit" "$AIRLOCK" commit "g-$n-$r" --quiet
	done
	[ "$r" -lt "$RUNS" ] || return 0
	# the commits retired their staged trees: pool a tree again for the
	# next round's warm run (a full copy, then a refresh that hands its
	# watch to the daemon; neither measured), once quiet
	for n in $SERIES; do
		quiet
		"$AIRLOCK" run --workdir "$WORK/series-$n" --quiet -- true
		"$AIRLOCK" run --workdir "$WORK/series-$n" --quiet -- true
	done
}
# series_pair: "LARGEST OTHER", the sizes the growth rows compare: the
# largest against 10000 when the series has both, else against the next
# smaller size; nothing with fewer than two sizes
series_pair() {
	local sizes l o
	sizes=$(printf '%s\n' $SERIES | sort -n | uniq)
	l=$(tail -1 <<<"$sizes")
	if grep -qx 10000 <<<"$sizes" && [ "$l" -gt 10000 ]; then
		o=10000
	else
		o=$(tail -2 <<<"$sizes" | head -1)
	fi
	[ "$l" = "$o" ] || echo "$l $o"
}

# --- issue 20: a commit of many new small files (what an npm install
# writes): NEWFILES files of 200 bytes in NEWFILES_DIRS directories,
# written into a transaction opened over a fresh 1k-file tree per round,
# then its commit alone, against `cp -a` of the directory it committed
# plus `sync`.
#
# Both are timed after a `sync`, so that each flush writes out what it
# made and nothing else: the row measured before this (a whole `run`
# whose command wrote the files, against `cp -a` + `sync` right after it)
# counted the command's own writing in airlock's figure, made airlock's
# flush write out the files the step before it wrote outside airlock, and
# let the reference's `sync` write out what airlock left. Each file holds
# its own bytes, as an install's files do: the same 200 bytes in every
# file froze one object, which is not what a commit of an install does.
NEWFILES=${NEWFILES:-5000}
NEWFILES_DIRS=${NEWFILES_DIRS:-50}
NEWFILES_WHY="NEWFILES=0"
# sh -c "$NFWRITE" sh DIR DIRS FILES
NFWRITE='s=$(printf "%0193d" 0); d=0; while [ $d -lt "$2" ]; do mkdir -p "$1/d$d"; d=$((d + 1)); done; i=0; while [ $i -lt "$3" ]; do printf "%s %05d\n" "$s" "$i" >"$1/d$((i % $2))/f$i.txt"; i=$((i + 1)); done'
newfiles_setup() {
	local r
	for r in $(seq 1 "$RUNS"); do
		"$WORK/gentree" -out "$WORK/nf-$r" -files 1000 >/dev/null
		"$AIRLOCK" run --workdir "$WORK/nf-$r" --quiet -- true
	done
}
newfiles_round() {
	local r=$1
	quiet
	m "new files: the writing alone" sh -c "$NFWRITE" sh "$WORK/nfw-$r" "$NEWFILES_DIRS" "$NEWFILES"
	"$AIRLOCK" open --workdir "$WORK/nf-$r" --id "nf-$r" >/dev/null
	sh -c "$NFWRITE" sh "$AIRLOCK_STATE_DIR/tx/nf-$r/staged/new" "$NEWFILES_DIRS" "$NEWFILES"
	sync
	sleep 2
	m "new files: commit" "$AIRLOCK" commit "nf-$r" --quiet
	# the commit retired its staged tree to a background rm -rf: the copy
	# must not pay for that removal either
	quiet
	m "new files: cp -a + sync" sh -c 'cp -a "$1" "$2" && sync' sh "$WORK/nf-$r/new" "$WORK/nfc-$r"
}

# --- issue 20: `npm install` through run against a direct install in a
# copy of the same project, from an offline cache (never the network while
# measuring)
NPM=${NPM:-1}
NPM_PKGS=${NPM_PKGS:-eslint webpack}
NPM_ARGS=()
NPM_OK=0
NPM_WHY="NPM=0"
NPM_HOW=""
npm_setup() {
	if ! command -v npm >/dev/null; then
		NPM_WHY="npm is not installed"
		return
	fi
	NPM_ARGS=(--no-audit --no-fund --loglevel=error --offline)
	if [ -n "${NPM_CACHE:-}" ]; then
		NPM_ARGS+=(--cache "$NPM_CACHE")
		NPM_HOW="the offline cache NPM_CACHE=$NPM_CACHE"
		NPM_OK=1
		return
	fi
	local reg=${NPM_REGISTRY:-https://registry.npmjs.org/}
	if ! timeout 30 npm view --registry "$reg" "${NPM_PKGS%% *}" version >/dev/null 2>&1; then
		NPM_WHY="$reg does not answer; set NPM_REGISTRY to a local registry or NPM_CACHE to a primed cache"
		return
	fi
	log "priming an npm cache in $WORK/npm-cache from $reg"
	mkdir -p "$WORK/npm-prime"
	echo '{"name": "prime", "version": "1.0.0", "private": true}' >"$WORK/npm-prime/package.json"
	# shellcheck disable=SC2086 # NPM_PKGS is a list of packages
	if ! in_dir "$WORK/npm-prime" timeout 900 npm install --registry "$reg" --cache "$WORK/npm-cache" --no-audit --no-fund --loglevel=error $NPM_PKGS >&2; then
		NPM_WHY="priming the cache from $reg failed"
		return
	fi
	NPM_ARGS+=(--registry "$reg" --cache "$WORK/npm-cache")
	NPM_HOW="an offline cache primed once in WORK from $reg"
	NPM_OK=1
}
# shellcheck disable=SC2086 # NPM_PKGS is a list of packages
npm_direct() { m "npm install (direct, in a copy)" in_dir "$1/direct" npm install "${NPM_ARGS[@]}" $NPM_PKGS; }
# shellcheck disable=SC2086
npm_run() { mj "npm install (through run)" "$AIRLOCK" run --workdir "$1/proj" --json -- npm install "${NPM_ARGS[@]}" $NPM_PKGS; }
npm_round() {
	local r=$1 p=$WORK/npm-$1
	mkdir -p "$p/proj"
	echo '{"name": "bench-app", "version": "1.0.0", "private": true}' >"$p/proj/package.json"
	echo 'node_modules/' >"$p/proj/.gitignore"
	git -C "$p/proj" init -q
	git -C "$p/proj" add -A
	git -C "$p/proj" -c user.name=bench -c user.email=bench@example.invalid commit -q -m app
	cp -a "$p/proj" "$p/direct"
	"$AIRLOCK" run --workdir "$p/proj" --quiet -- true
	quiet
	# alternate which goes first: the second finds more in the page cache
	if [ $((r % 2)) = 1 ]; then
		npm_direct "$p"
		sleep 2
		npm_run "$p"
	else
		npm_run "$p"
		sleep 2
		npm_direct "$p"
	fi
	[ -n "${NPM_PATHS:-}" ] || NPM_PATHS=$(find "$p/proj/node_modules" | wc -l)
}

# --- issue 20: a real command inside run: `go build` of a small module
# with a warm build cache; each round rewrites one source file, so the
# main package compiles and links, through run and in a copy alike
GOBUILD=${GOBUILD:-1}
GO_OK=0
GO_WHY="GOBUILD=0"
GOMOD=$WORK/gomod
# sh -c "$GOSCRIPT" sh ROUND, in the module
GOSCRIPT='printf "package main\n\nconst round = \"%s\"\n" "$1" >round.go && exec go build -trimpath -o app .'
gobuild_setup() {
	if ! command -v go >/dev/null; then
		GO_WHY="go is not in PATH"
		return
	fi
	mkdir -p "$GOMOD/internal/tally" "$GOMOD/internal/render"
	printf 'module example.com/benchmod\n\ngo 1.22\n' >"$GOMOD/go.mod"
	cat >"$GOMOD/main.go" <<-'GO'
		// Command benchmod counts its arguments' words.
		package main

		import (
		"encoding/json"
		"fmt"
		"os"

		"example.com/benchmod/internal/render"
		"example.com/benchmod/internal/tally"
		)

		func main() {
		out, err := json.Marshal(tally.Words(os.Args[1:]))
		if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
		}
		fmt.Println(render.Box(round + " " + string(out)))
		}
	GO
	cat >"$GOMOD/internal/tally/tally.go" <<-'GO'
		// Package tally counts words.
		package tally

		import "strings"

		// Words counts the words of args.
		func Words(args []string) map[string]int {
		n := map[string]int{}
		for _, a := range args {
		for _, w := range strings.Fields(a) {
		n[strings.ToLower(w)]++
		}
		}
		return n
		}
	GO
	cat >"$GOMOD/internal/render/render.go" <<-'GO'
		// Package render frames text.
		package render

		import (
		"strings"
		"unicode/utf8"
		)

		// Box frames s in a box of dashes.
		func Box(s string) string {
		line := "+" + strings.Repeat("-", utf8.RuneCountInString(s)+2) + "+"
		return line + "\n| " + s + " |\n" + line
		}
	GO
	printf 'package main\n\nconst round = "setup"\n' >"$GOMOD/round.go"
	# the heredocs' tabs went with <<-: give the sources back their indent
	! command -v gofmt >/dev/null || gofmt -w "$GOMOD"
	git -C "$GOMOD" init -q
	git -C "$GOMOD" add -A
	git -C "$GOMOD" -c user.name=bench -c user.email=bench@example.invalid commit -q -m benchmod
	cp -a "$GOMOD" "$WORK/gomod-direct"
	# warm the build cache, and pool the module's tree for the runs
	in_dir "$WORK/gomod-direct" sh -c "$GOSCRIPT" sh warm
	"$AIRLOCK" run --workdir "$GOMOD" --quiet -- sh -c "$GOSCRIPT" sh warm
	GO_OK=1
}
go_direct() { m "go build (direct, in a copy)" in_dir "$WORK/gomod-direct" sh -c "$GOSCRIPT" sh "r$1"; }
go_run() { mj "go build (through run)" "$AIRLOCK" run --workdir "$GOMOD" --json -- sh -c "$GOSCRIPT" sh "r$1"; }
gobuild_round() {
	local r=$1
	quiet
	if [ $((r % 2)) = 1 ]; then
		go_direct "$r"
		sleep 1
		go_run "$r"
	else
		go_run "$r"
		sleep 1
		go_direct "$r"
	fi
}

for dir in "$BIG" "$SMALL"; do
	mkdir -p "$dir/airlock-bench"
	for i in 1 2 3 4 5; do echo "bench file $i" >"$dir/airlock-bench/m$i.txt"; done
done

rootless_setup

load "main rounds"
for r in $(seq 1 "$RUNS"); do
	log "round $r of $RUNS"
	quiet
	m "cp -a" cp -a "$BIG" "$WORK/cp-$r"
	sleep 2
	m "git worktree add" git -C "$BIG" worktree add -q --detach "$WORK/wt-$r"
	for b in $BACKENDS; do
		sleep 2
		# --fresh: the first open over a base, never a recycled tree
		m "open --backend $b" "$AIRLOCK" open --workdir "$BIG" --backend "$b" --fresh --id "s-$b-$r"
	done

	# diff after a 10-file edit, against git status in the base
	for b in $BACKENDS; do
		P=$AIRLOCK_STATE_DIR/tx/s-$b-$r/staged
		edit10 "$P" "d$r"
		m "diff after 10-file edit ($b)" "$AIRLOCK" diff "s-$b-$r" --name-status
	done
	m "git status --porcelain" git -C "$BIG" status --porcelain

	# commit a 10-file change (5 modified, 5 added), on the small and the
	# big tree, with the copy backend (the tree is walked to diff) and
	# with overlay (the upper layer is read)
	for b in $BACKENDS; do
		for tree in small big; do
			dir=$SMALL
			[ $tree = big ] && dir=$BIG
			quiet
			"$AIRLOCK" open --workdir "$dir" --backend "$b" --id "c-$b-$tree-$r" >/dev/null
			commit10 "$AIRLOCK_STATE_DIR/tx/c-$b-$tree-$r/staged" "$b$r"
			m "commit 10-file change ($b, $tree tree)" "$AIRLOCK" commit "c-$b-$tree-$r" --quiet
		done
	done

	for b in $BACKENDS; do
		quiet
		m "run -- true ($b)" "$AIRLOCK" run --workdir "$BIG" --backend "$b" --quiet -- true
	done
	# copy recycles the staged trees of settled transactions: a second run
	# refreshes the first one's tree, and a run after a committed 10-file
	# change copies those files again
	quiet
	"$AIRLOCK" run --workdir "$BIG" --backend copy --quiet -- true
	m "second run -- true (copy)" "$AIRLOCK" run --workdir "$BIG" --backend copy --quiet -- true
	"$AIRLOCK" run --workdir "$BIG" --backend copy --quiet -- sh -c "$(declare -f commit10); commit10 . after$r"
	m "run -- true after a committed 10-file change (copy)" "$AIRLOCK" run --workdir "$BIG" --backend copy --quiet -- true
	# issue 20: the default backend's warm run, here and on the 1k-file
	# tree (its fixed cost), each after a run that pooled its tree
	mj "warm run -- true (default)" "$AIRLOCK" run --workdir "$BIG" --json -- true
	# the same with every measurement walked (AIRLOCK_NO_WATCH=1: no watch
	# of the run's tree, no daemon asked), as before the watches
	mj "warm run -- true (default, every measurement walked)" env AIRLOCK_NO_WATCH=1 "$AIRLOCK" run --workdir "$BIG" --json -- true
	quiet
	"$AIRLOCK" run --workdir "$SMALL" --quiet -- true
	"$AIRLOCK" run --workdir "$SMALL" --quiet -- true
	mj "warm run -- true (default, 1k-file tree)" "$AIRLOCK" run --workdir "$SMALL" --json -- true
	quiet
	rootless_round
	nonroot_round
	# the copies and worktree of this round go in the background too
	# (KEEP=1 keeps everything until you remove it, so that no deletion
	# slows the next round)
	if [ "${KEEP:-}" != 1 ]; then
		(rm -rf -- "$WORK/cp-$r" &)
		git -C "$BIG" worktree remove --force "$WORK/wt-$r" >/dev/null 2>&1 &
	fi
done

# the background worktree removals change $BIG/.git: let them finish
wait
quiet
if [ -x /usr/bin/time ]; then
	/usr/bin/time -f %M -o "$WORK/rss" "$AIRLOCK" run --workdir "$BIG" --backend copy --quiet -- true >/dev/null 2>&1
	RSS="$RSS run-recycled/copy=$(($(cat "$WORK/rss") / 1024)) MiB"
	for b in $BACKENDS; do
		/usr/bin/time -f %M -o "$WORK/rss" "$AIRLOCK" open --workdir "$BIG" --backend "$b" --fresh --id "rss-$b" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
		RSS="$RSS open/$b=$(($(cat "$WORK/rss") / 1024)) MiB"
		commit10 "$AIRLOCK_STATE_DIR/tx/rss-$b/staged" "rss$b"
		/usr/bin/time -f %M -o "$WORK/rss" "$AIRLOCK" commit "rss-$b" --quiet >/dev/null 2>&1 || true
		RSS="$RSS commit/$b=$(($(cat "$WORK/rss") / 1024)) MiB"
	done
	PEAK=$(printf '%s\n' $RSS | grep -o '=[0-9]*' | tr -d = | sort -n | tail -1)
fi

# issue 20's sections beyond the main rounds, each its own RUNS rounds
if [ -n "$SERIES" ]; then
	load "growth series ($SERIES)"
	series_setup
	for r in $(seq 1 "$RUNS"); do
		log "growth series: round $r of $RUNS"
		series_round "$r"
	done
fi
if [ "$NEWFILES" != 0 ]; then
	load "$NEWFILES new files"
	newfiles_setup
	for r in $(seq 1 "$RUNS"); do
		log "new files: round $r of $RUNS"
		newfiles_round "$r"
	done
fi
if [ "$NPM" != 0 ]; then
	npm_setup
	if [ "$NPM_OK" = 1 ]; then
		load "npm install"
		for r in $(seq 1 "$RUNS"); do
			log "npm install: round $r of $RUNS"
			npm_round "$r"
		done
	else
		log "npm install: not measured: $NPM_WHY"
	fi
fi
if [ "$GOBUILD" != 0 ]; then
	gobuild_setup
	if [ "$GO_OK" = 1 ]; then
		load "go build"
		for r in $(seq 1 "$RUNS"); do
			log "go build: round $r of $RUNS"
			gobuild_round "$r"
		done
	fi
fi
load "end"

ms() { median "${T[$1]}"; }
ratio() { awk -v a="$(ms "$1")" -v b="$(ms "$2")" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "-" }'; }

echo
echo "tree: $BIG — $NFILES paths, $SIZE; $(nproc) cores; median of $RUNS interleaved runs, warm cache"
echo
echo "| operation | ms | ratio |"
echo "|---|---:|---|"
echo "| \`cp -a\` | $(ms "cp -a") | |"
echo "| \`git worktree add\` (tracked files only) | $(ms "git worktree add") | |"
for b in $BACKENDS; do
	echo "| airlock open --backend $b | $(ms "open --backend $b") | $(ratio "open --backend $b" "cp -a") of cp -a, $(ratio "open --backend $b" "git worktree add") of worktree add |"
done
echo "| \`git status --porcelain\` | $(ms "git status --porcelain") | |"
for b in $BACKENDS; do
	echo "| airlock diff after a 10-file edit ($b) | $(ms "diff after 10-file edit ($b)") | $(ratio "diff after 10-file edit ($b)" "git status --porcelain") of git status |"
done
for b in $BACKENDS; do
	echo "| commit of a 10-file change, 1k-file tree ($b) | $(ms "commit 10-file change ($b, small tree)") | |"
	echo "| commit of a 10-file change, this tree ($b) | $(ms "commit 10-file change ($b, big tree)") | $(ratio "commit 10-file change ($b, big tree)" "commit 10-file change ($b, small tree)") of the 1k-file tree |"
done
for b in $BACKENDS; do
	echo "| \`airlock run -- true\` ($b) | $(ms "run -- true ($b)") | |"
done
echo "| second \`airlock run -- true\` (copy, recycled) | $(ms "second run -- true (copy)") | $(ratio "second run -- true (copy)" "git status --porcelain") of git status, $(ratio "second run -- true (copy)" "cp -a") of cp -a |"
echo "| \`airlock run -- true\` after a committed 10-file change (copy, recycled) | $(ms "run -- true after a committed 10-file change (copy)") | $(ratio "run -- true after a committed 10-file change (copy)" "git status --porcelain") of git status, $(ratio "run -- true after a committed 10-file change (copy)" "cp -a") of cp -a |"
rootless_report
echo
echo "peak RSS:$RSS"

# target NAME OP BASE MAX: met when median(OP)/median(BASE) <= MAX
target() {
	local v
	v=$(awk -v a="$(ms "$2")" -v b="$(ms "$3")" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "inf" }')
	awk -v v="$v" -v max="$4" -v name="$1" 'BEGIN { printf "- %s: %s× (target ≤ %s×): %s\n", name, v, max, (v != "inf" && v + 0 <= max + 0) ? "met" : "MISSED" }'
}
echo
echo "targets (issue 12):"
target "second run -- true (copy) vs git status --porcelain" "second run -- true (copy)" "git status --porcelain" 10
target "second run -- true (copy) vs cp -a" "second run -- true (copy)" "cp -a" 0.05
target "run -- true after a committed 10-file change (copy) vs git status --porcelain" "run -- true after a committed 10-file change (copy)" "git status --porcelain" 10
target "run -- true after a committed 10-file change (copy) vs cp -a" "run -- true after a committed 10-file change (copy)" "cp -a" 0.05
target "first open (copy) vs cp -a" "open --backend copy" "cp -a" 0.5
[ -n "${RL_TARGET:-}" ] && echo "- $RL_TARGET"
if [ -n "${PEAK:-}" ]; then
	awk -v p="$PEAK" 'BEGIN { printf "- peak RSS: %d MiB (target ≤ 64 MiB): %s\n", p, (p <= 64) ? "met" : "MISSED" }'
fi
# --- issue 20's table: every row the median of its rounds' ratios (or
# differences) to a reference measured in the same round
# pr A B: the median over rounds of A's sample divided by B's
pr() {
	paste -d' ' <(printf '%s\n' ${T[$1]}) <(printf '%s\n' ${T[$2]}) |
		awk '$2 > 0 { print $1 / $2 }' | sort -g |
		awk '{ a[NR] = $1 } END { if (NR) printf "%.2f", a[int((NR + 1) / 2)]; else print "-" }'
}
# pd A B: the median over rounds of A's sample minus B's, in ms
pd() {
	paste -d' ' <(printf '%s\n' ${T[$1]}) <(printf '%s\n' ${T[$2]}) |
		awk '{ print ($1 - $2) / 1000 }' | sort -g |
		awk '{ a[NR] = $1 } END { if (NR) printf "%+.0f", a[int((NR + 1) / 2)]; else print "-" }'
}
verdict() { awk -v v="$1" -v max="$2" 'BEGIN { print (v != "-" && v + 0 <= max + 0) ? "met" : "MISSED" }'; }
recycled() { [ -z "${REC[$1]:-}" ] || printf ' (recycled:%s)' "${REC[$1]}"; }
I20=()
# i20 ROW A REF B MAX [WHY]: the row A against reference B, target ≤ MAX×;
# WHY says why it was not measured when A or B has no sample
i20() {
	local row=$1 a=$2 ref=$3 b=$4 max=$5 why=${6:-not measured} v ok
	if [ -z "${T[$a]:-}" ] || [ -z "${T[$b]:-}" ]; then
		echo "| $row | – | $ref | – | – | ≤ ${max}× | skipped: $why |"
		I20+=("- $row: skipped ($why)")
		return
	fi
	v=$(pr "$a" "$b")
	ok=$(verdict "$v" "$max")
	echo "| $row$(recycled "$a") | $(ms "$a") | $ref$(recycled "$b") | $(ms "$b") | ${v}× | ≤ ${max}× | $ok |"
	I20+=("- $row: ${v}× of $ref (target ≤ ${max}×): $ok")
}
# i20abs ROW A MAX [WHY]: A's own median, target ≤ MAX ms
i20abs() {
	local row=$1 a=$2 max=$3 why=${4:-not measured} v ok
	if [ -z "${T[$a]:-}" ]; then
		echo "| $row | – | | | – | ≤ $max ms | skipped: $why |"
		I20+=("- $row: skipped ($why)")
		return
	fi
	v=$(ms "$a")
	ok=$(verdict "$v" "$max")
	echo "| $row$(recycled "$a") | $v | | | $v ms | ≤ $max ms | $ok |"
	I20+=("- $row: $v ms (target ≤ $max ms): $ok")
}
# i20diff ROW A REF B MAX [WHY]: A minus reference B, target ≤ +MAX ms
i20diff() {
	local row=$1 a=$2 ref=$3 b=$4 max=$5 why=${6:-not measured} v ok
	if [ -z "${T[$a]:-}" ] || [ -z "${T[$b]:-}" ]; then
		echo "| $row | – | $ref | – | – | ≤ +$max ms | skipped: $why |"
		I20+=("- $row: skipped ($why)")
		return
	fi
	v=$(pd "$a" "$b")
	ok=$(verdict "$v" "$max")
	echo "| $row$(recycled "$a") | $(ms "$a") | $ref | $(ms "$b") | $v ms | ≤ +$max ms | $ok |"
	I20+=("- $row: $v ms over $ref (target ≤ +$max ms): $ok")
}

if [ -n "$SERIES" ]; then
	echo
	echo "growth series (issue 20), default backend, median ms of $RUNS rounds:"
	echo
	echo "| files | paths | \`git status --porcelain\` | warm \`run -- true\` | \`diff\` after a 10-file edit | \`commit\` of it |"
	echo "|---:|---:|---:|---:|---:|---:|"
	for n in $SERIES; do
		echo "| $n | ${SERIES_PATHS[$n]} | $(ms "series $n: git status --porcelain") | $(ms "series $n: warm run -- true (default)")$(recycled "series $n: warm run -- true (default)") | $(ms "series $n: diff after a 10-file edit") | $(ms "series $n: commit of the 10-file edit") |"
	done
	echo
	for n in $SERIES; do echo "- the $n-file tree's transactions opened over its pooled tree, recycled:${REC["series $n: open"]:-}"; done
fi
if [ -n "${T["new files: the writing alone"]:-}" ]; then
	echo
	echo "$NEWFILES new files: writing them with sh, outside airlock, takes $(ms "new files: the writing alone") ms (in neither figure)"
fi

echo
echo "issue 20 (\"Warm runs cost what changed, not what the tree holds\"): the median of $RUNS rounds' ratios, each against its reference in the same round"
echo
echo "| row | ms | reference | ms | result | target | |"
echo "|---|---:|---|---:|---:|---|---|"
if [ -n "${TREE:-}" ]; then
	i20 "warm default \`run -- true\`, this real tree ($NFILES paths)" "warm run -- true (default)" "\`git status --porcelain\`" "git status --porcelain" 2
else
	i20 "warm default \`run -- true\`, the generated tree ($NFILES paths, 80% ignored)" "warm run -- true (default)" "\`git status --porcelain\`" "git status --porcelain" 3
fi
if [ -n "$SERIES" ]; then
	SL=$(printf '%s\n' $SERIES | sort -n | tail -1)
	i20 "same, the series' generated $SL-file tree (${SERIES_PATHS[$SL]} paths)" "series $SL: warm run -- true (default)" "\`git status --porcelain\`" "series $SL: git status --porcelain" 3
else
	i20 "same, the series' largest generated tree" "-" "\`git status --porcelain\`" "-" 3 "$SERIES_WHY"
fi
PAIR=$(series_pair)
if [ -n "$PAIR" ]; then
	read -r SL SO <<<"$PAIR"
elif [ -n "$SERIES" ]; then
	SERIES_WHY="SERIES needs two sizes"
fi
i20 "warm default \`run -- true\`, unprivileged (uid 65534), quiet" "warm run -- true (default, unprivileged)" "the same as root, same copy" "warm run -- true (default, as root, on the unprivileged user's copy)" 1.1 "$RL_WHY"
i20 "same (copy), while root's processes start and stop" "second run -- true (copy, rootless, root's processes churning)" "the same as root, same copy, quiet" "warm run -- true (default, as root, on the unprivileged user's copy)" 1.1 "$([ "$RL_USER" = 1 ] && echo "measured with the rootless overlay block, which doctor finds unsupported here" || echo "$RL_WHY")"
i20abs "fixed cost of a warm default \`run -- true\`, 1k-file tree" "warm run -- true (default, 1k-file tree)" 50
if [ -n "$PAIR" ]; then
	i20 "10-file \`diff\`, $SL-file vs $SO-file tree" "series $SL: diff after a 10-file edit" "the same, $SO files" "series $SO: diff after a 10-file edit" 1.5
	i20 "10-file \`commit\`, $SL-file vs $SO-file tree" "series $SL: commit of the 10-file edit" "the same, $SO files" "series $SO: commit of the 10-file edit" 1.5
	i20 "warm \`run -- true\`, $SL-file vs $SO-file tree" "series $SL: warm run -- true (default)" "the same, $SO files" "series $SO: warm run -- true (default)" 1.5
else
	for op in "10-file \`diff\`" "10-file \`commit\`" "warm \`run -- true\`"; do
		i20 "$op, largest vs 10k-file tree" "-" "the same, 10k files" "-" 1.5 "$SERIES_WHY"
	done
fi
i20 "commit of $([ "$NEWFILES" = 0 ] && echo 5000 || echo "$NEWFILES") new ~200-byte files ($NEWFILES_DIRS directories, 1k-file tree)" "new files: commit" "\`cp -a\` of them + \`sync\`" "new files: cp -a + sync" 2 "$NEWFILES_WHY"
i20 "\`npm install $NPM_PKGS\` through \`run\`${NPM_PATHS:+ ($((NPM_PATHS)) paths)}${NPM_HOW:+, from $NPM_HOW}" "npm install (through run)" "direct, in a copy" "npm install (direct, in a copy)" 1.2 "$NPM_WHY"
i20diff "\`go build\` of a small module (warm cache) through \`run\`" "go build (through run)" "direct, in a copy" "go build (direct, in a copy)" 150 "$GO_WHY"
echo
if [ -n "${T["warm run -- true (default, every measurement walked)"]:-}" ]; then
	echo "the watches' part: a warm default \`run -- true\` here takes $(ms "warm run -- true (default)") ms$(recycled "warm run -- true (default)"), and $(ms "warm run -- true (default, every measurement walked)") ms with every measurement walked (AIRLOCK_NO_WATCH=1)$(recycled "warm run -- true (default, every measurement walked)"): $(pr "warm run -- true (default)" "warm run -- true (default, every measurement walked)")× (median of the rounds' ratios)"
	echo
fi
echo "targets (issue 20):"
printf '%s\n' "${I20[@]}"
echo
echo "load average (1, 5, 15 min) at the start of each section, seconds since the script started:$LOADS"
echo "$(uptime)"

echo
echo "raw samples (µs):"
for k in "${!T[@]}"; do echo "  $k:${T[$k]}"; done | sort
