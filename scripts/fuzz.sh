#!/usr/bin/env bash
# Runs every go test -fuzz target of the module for a bounded time each
# (FUZZTIME, default 10s) and prints how many inputs each one tried.
# Seed corpora (f.Add and testdata/fuzz/) already run in every `go test`;
# this explores beyond them. Usage: scripts/fuzz.sh [package-pattern]
#   FUZZTIME=1m scripts/fuzz.sh            # every target, a minute each
#   scripts/fuzz.sh ./internal/journal     # one package
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
filter=${1:-./...}
log=$(mktemp "${TMPDIR:-/tmp}/airlock-fuzz.XXXXXX")
trap 'rm -f "$log"' EXIT
total=0
failed=0
while IFS= read -r pkg; do
  dir=${pkg#github.com/airlockdev/airlock}
  dir=".${dir}"
  for name in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    printf '%-32s %-24s ' "$dir" "$name"
    if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$dir" >"$log" 2>&1; then
      execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | awk '{print $2}')
      echo "ok   ${execs:-0} inputs"
      total=$((total + ${execs:-0}))
    else
      echo "FAIL"
      sed 's/^/    /' "$log" | tail -30
      failed=$((failed + 1))
    fi
  done
done < <(go list "$filter")
echo "fuzzed $total inputs in all; $failed targets failed"
[ "$failed" -eq 0 ]
