#!/usr/bin/env bash
# realtree.sh DIR [REPO [COMMIT]]: makes the real tree issue 20's table was
# last measured on (docs/benchmarks.md): a clone of a large Go repository
# (moby, 13k tracked files) with a node_modules installed from npm by 15
# packages at pinned versions (14k paths), ignored through
# .git/info/exclude, about 48k paths and 1.1 GB. Then
#
#   TREE=DIR scripts/bench.sh
#
# measures it. REPO is any URL or path git clones (default
# https://github.com/moby/moby); a local path is cloned with its objects
# hard-linked, as `git clone` does, which the watch daemon names at every
# answer (docs/how-it-works.md): the tree this script makes from the
# mirror at /work/.mirror is that case. COMMIT (default b985e2313a, the
# one measured) is checked out.
set -euo pipefail
dir=${1:?usage: scripts/realtree.sh DIR [REPO [COMMIT]]}
repo=${2:-https://github.com/moby/moby}
commit=${3:-b985e2313a}
if [ -e "$dir" ]; then
	echo "realtree.sh: $dir exists; give a path that does not" >&2
	exit 1
fi
command -v npm >/dev/null || { echo "realtree.sh: npm is needed (apt-get install npm)" >&2; exit 1; }
git clone -q "$repo" "$dir"
git -C "$dir" checkout -q --detach "$commit"
printf 'node_modules/\n' >>"$dir/.git/info/exclude"
echo '{"name":"realtree","version":"1.0.0","private":true}' >"$dir/package.json"
(cd "$dir" && npm install --no-audit --no-fund --ignore-scripts \
	@babel/core@7.29.16 @mui/material@9.6.0 axios@1.21.1 eslint@10.16.0 express@5.3.0 \
	jest@30.5.2 lodash@4.18.1 next@16.4.6 prettier@3.10.1 react@19.3.1 react-dom@19.3.1 \
	rxjs@7.8.2 typescript@7.0.2 vite@8.4.0 webpack@5.113.0 >/dev/null)
echo "$dir: $(find "$dir" -path "$dir/.git" -prune -o -print | wc -l) paths, $(du -sh "$dir" | cut -f1)"
