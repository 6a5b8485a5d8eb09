#!/usr/bin/env bash
# Runs the whole test suite with every core kept busy, then the race,
# recycle and torture tests three times over, and prints what it saw: a
# guarantee whose test passes only on a quiet machine does not hold, and
# this is the run that finds such tests. Run it before resolving an issue;
# it takes a long time (about 3x the plain suite, more when the machine is
# shared), so CI does not.
#
#   bash scripts/stress.sh                 # the suite under load, then -count=3 of the rest
#   STRESS_QUICK=1 bash scripts/stress.sh  # the suite under load only
#
# STRESS_BURNERS (default: the number of cores) busy loops keep the CPUs
# busy, and STRESS_IO (default 1) writers keep fsyncing 16 MiB files, from
# before the first test until the script ends, however it ends.
# STRESS_TIMEOUT (default 60m) is go test's -timeout per package binary: a
# package that takes its 10-minute default only because the machine is
# busy is not what this run looks for. Logs are kept in STRESS_LOG
# (default a new temporary directory), named at the end. CI=true, as
# .ci/run sets it: a test whose tool is missing fails here too (run
# .ci/run once to install them).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CI:=true}"
export CI
# The tools come from .ci/run, which installs them when one is missing:
# codex into a prefix of its own, which is put on PATH the same way here.
codex_prefix="${XDG_CACHE_HOME:-$HOME/.cache}/airlock-ci/npm"
if ! command -v codex >/dev/null 2>&1 && [ -x "$codex_prefix/bin/codex" ]; then
  export PATH="$codex_prefix/bin:$PATH"
fi
quick=${STRESS_QUICK:-0}
burners=${STRESS_BURNERS:-$(nproc)}
writers=${STRESS_IO:-1}
timeout=${STRESS_TIMEOUT:-60m}
logs=${STRESS_LOG:-$(mktemp -d "${TMPDIR:-/tmp}/airlock-stress.XXXXXX")}
mkdir -p "$logs"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/airlock-stress-io.XXXXXX")

# A shell that started this one in the background without job control
# made it ignore SIGINT, which no trap undoes, and every test inherits
# that: airlock leaves an ignored SIGINT ignored, and the tests that
# forward one fail. Say so rather than let them fail unexplained.
sigign=$(awk '/^SigIgn:/ { print $2 }' /proc/$$/status 2>/dev/null || echo 0)
if (( (16#${sigign:-0} & 2) != 0 )); then
  echo "stress.sh: warning: SIGINT is ignored here (started in the background of a non-interactive shell?); the SIGINT forwarding tests will fail" >&2
fi

load_pids=()
test_pid=""
# kill_tree PID ends a process and all it started (a load loop's dd, a
# go test's test binaries and what they run), by their ids, each stopped
# first so that it starts nothing new meanwhile. A Go process forks from
# any of its threads: every thread's children are its children.
kill_tree() {
  local pid=$1 child children
  kill -STOP "$pid" 2>/dev/null || return 0
  children=$(cat /proc/"$pid"/task/*/children 2>/dev/null || true)
  for child in $children; do
    kill_tree "$child"
  done
  kill -TERM "$pid" 2>/dev/null || true
  kill -CONT "$pid" 2>/dev/null || true
}
stop_load() {
  local pid
  for pid in "${load_pids[@]}"; do
    kill_tree "$pid"
  done
  for pid in "${load_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  load_pids=()
  rm -rf "$scratch"
}
# A signal to this script alone (not to its process group, as a terminal's
# Ctrl-C is) ends the running go test and its tests too: the tests run in
# the background, so that the wait for them is one a signal interrupts.
on_signal() {
  echo "stress.sh: $1" >&2
  if [ -n "$test_pid" ]; then
    kill_tree "$test_pid"
  fi
  exit "$2"
}
trap stop_load EXIT
trap 'on_signal interrupted 130' INT
trap 'on_signal terminated 143' TERM

# The load, started before the first test. Each burner is a busy shell
# loop; each writer rewrites and fsyncs one file, so the disk queue is
# never empty either (one file: this machine's ext4 is slow at many).
for _ in $(seq "$burners"); do
  (trap - INT TERM EXIT; while :; do :; done) &
  load_pids+=($!)
done
for i in $(seq "$writers"); do
  (
    trap - INT TERM EXIT
    while :; do
      dd if=/dev/zero of="$scratch/io$i" bs=1M count=16 conv=fsync status=none 2>/dev/null || true
      rm -f "$scratch/io$i"
    done
  ) &
  load_pids+=($!)
done
# The load average, every 5 s, for the figures.
(trap - INT TERM EXIT; while :; do cut -d' ' -f1 /proc/loadavg; sleep 5; done) >"$logs/loadavg" &
load_pids+=($!)

start=$SECONDS
failed=0
summary="$logs/summary"
: >"$summary"

# round NAME COUNT ARGS...: one go test run; its per-package lines go to
# the summary, its whole output to $logs/NAME.log.
round() {
  local name=$1 count=$2
  shift 2
  local log="$logs/$name.log" t0=$SECONDS rc=0
  echo "== $name: go test -count=$count -tags airlock_faults -timeout $timeout $* (log: $log)"
  go test -count="$count" -tags airlock_faults -timeout "$timeout" "$@" >"$log" 2>&1 </dev/null &
  test_pid=$!
  wait "$test_pid" || rc=$?
  test_pid=""
  # Package lines: "ok  <pkg> 12.3s", "FAIL <pkg> 12.3s", "FAIL <pkg> [build failed]".
  grep -E '^(ok|FAIL)[[:space:]]+[^[:space:]]+' "$log" |
    awk -v r="$name" '{ printf "%-9s %-4s %-52s %s\n", r, $1, $2, $3 }' >>"$summary" || true
  grep -E '^[[:space:]]*--- FAIL' "$log" | sed "s/^[[:space:]]*/$name      test /" >>"$summary" || true
  if [ "$rc" -ne 0 ]; then
    failed=1
    echo "   FAILED (exit $rc) after $((SECONDS - t0)) s; the failures:"
    grep -E -A12 '^[[:space:]]*--- FAIL|^panic:' "$log" | grep -vE '^(ok|\?)[[:space:]]' | head -150 | sed 's/^/   | /' || true
    grep -E '^FAIL[[:space:]]+[^[:space:]]' "$log" | sed 's/^/   | /' || true
  else
    echo "   ok after $((SECONDS - t0)) s"
  fi
}

# The README's test command.
round suite 1 ./...
if [ "$quick" != 1 ]; then
  # The race tests: the file-system swap race, racy timestamps, a removal
  # racing rm -rf (the torture's racing editors run with the torture).
  round race 3 -run 'Race|Racy|Racing|WhileAnother' ./internal/safefs ./internal/changeset ./internal/state
  # One Store shared by concurrent calls (the MCP server's), under the
  # race detector.
  round shared 1 -race -run 'SharedByConcurrent' .
  round recycle 3 -run 'Refresh|Recycl' ./internal/stage ./cmd/airlock
  round torture 3 ./internal/torture
fi
wall=$((SECONDS - start))
stop_load

echo
echo "== stress.sh figures"
printf 'wall time        %dm%02ds\n' $((wall / 60)) $((wall % 60))
printf 'load             %s burners, %s I/O writers on %s cores\n' "$burners" "$writers" "$(nproc)"
awk '{ s += $1; n++; if ($1 > m) m = $1; if (min == "" || $1 < min) min = $1 }
  END { if (n) printf "load average     1-min: min %.2f, mean %.2f, max %.2f (%d samples)\n", min, s / n, m, n }' "$logs/loadavg"
echo "per package:"
sed 's/^/  /' "$summary"
echo "logs             $logs"
if [ "$failed" -ne 0 ]; then
  echo "stress.sh: FAILED"
  exit 1
fi
echo "stress.sh: passed"
