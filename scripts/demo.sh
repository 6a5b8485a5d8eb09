#!/usr/bin/env bash
# Builds airlock and runs it on a small real project: a commit, a command
# that fails (discarded), a refusal on a protected path, its approval, and
# receipt verification. Everything happens in a fresh temporary directory.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/airlock-demo.XXXXXX")
export AIRLOCK_STATE_DIR="$work/state"
bin="$work/bin/airlock"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "build"
(cd "$here" && go build -o "$bin" ./cmd/airlock)
echo "built $bin"

step "a project"
proj="$work/project"
mkdir -p "$proj/src"
printf 'package main\n\nfunc main() { println("hello") }\n' > "$proj/src/main.go"
printf 'notes to delete\n' > "$proj/TODO.txt"
printf '#!/bin/sh\necho build\n' > "$proj/build.sh"
chmod 755 "$proj/build.sh"
cd "$proj"
find . -type f | sort

step "1. an agent edits, adds, deletes: exit 0 commits"
"$bin" run -- sh -c '
  sed -i "s/hello/hello, airlock/" src/main.go
  printf "package main\n\nfunc helper() {}\n" > src/helper.go
  rm TODO.txt
  chmod 700 build.sh'
echo "--- the project now:"
find . -type f | sort
cat src/main.go

step "2. a command that fails: its changes are discarded"
set +e
"$bin" run -- sh -c 'rm -rf src; echo "oops" >&2; exit 3'
echo "exit code: $? (the command's own)"
set -e
ls src

step "3. a protected path without approval: refused, the base untouched"
set +e
"$bin" run --id demo-envrc -- sh -c 'echo "export TOKEN=steal" > .envrc; echo ok > README'
echo "exit code: $? (75 = refused, transaction kept)"
set -e
ls -a

step "   approved after review: commit the kept transaction"
"$bin" commit demo-envrc --approve
ls -a

step "4. the receipt is tamper-evident"
receipt="$AIRLOCK_STATE_DIR/tx/demo-envrc/receipt.json"
"$bin" receipt verify demo-envrc
sed 's/"added": 2/"added": 1/' "$receipt" > "$work/tampered.json"
set +e
"$bin" receipt verify "$work/tampered.json"
echo "exit code: $? (1 = invalid)"
set -e

printf '\nall of it is in %s\n' "$work"
