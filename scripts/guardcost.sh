#!/usr/bin/env bash
# guardcost.sh [N]: what airlock's PreToolUse guard costs per tool call, as
# Claude Code pays it: a process start of `airlock hook claude pre-tool-use`,
# the store lookup of the session's transaction, the decision. Runs N calls
# (default 200) of an allowed Write from a staged workspace, in a state root
# holding one transaction, then with 20 more (the lookup reads each).
set -euo pipefail
n="${1:-200}"
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/airlock" ./cmd/airlock
export AIRLOCK_STATE_DIR="$tmp/state" HOME="$tmp"
mkdir -p "$tmp/base"
echo hi >"$tmp/base/a.txt"
staged=$(cd "$tmp/base" && "$tmp/airlock" open --id bench | sed -n 2p)
input=$(printf '{"session_id":"s","transcript_path":"/t","cwd":"%s","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"%s/a.txt","content":"x"},"tool_use_id":"t"}' "$staged" "$staged")
measure() {
  local start end
  start=$(date +%s%N)
  for ((i = 0; i < n; i++)); do
    printf '%s' "$input" | (cd "$staged" && "$tmp/airlock" hook claude pre-tool-use) >/dev/null
  done
  end=$(date +%s%N)
  echo "$1: $(((end - start) / n / 1000)) µs per call ($n calls)"
}
measure "1 transaction"
for i in $(seq 1 20); do
  mkdir -p "$tmp/other$i"
  (cd "$tmp/other$i" && "$tmp/airlock" open --id "other$i" >/dev/null)
done
measure "21 transactions"
