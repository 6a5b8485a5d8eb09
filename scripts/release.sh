#!/usr/bin/env bash
# release.sh — build a release of airlock from the commit checked out.
#
#   scripts/release.sh [VERSION]          # into dist/VERSION/
#   scripts/release.sh --check [VERSION]  # build twice and prove the bytes equal
#
# VERSION defaults to the tag on HEAD, else a Go pseudo-version of HEAD
# (v0.0.0-YYYYMMDDHHMMSS-abcdef123456). The tree must be clean: a release
# is a commit, and only a commit can be rebuilt.
#
# It builds, for linux/amd64, linux/arm64, darwin/amd64 and darwin/arm64:
#   airlock_VERSION_OS_ARCH.tar.gz  the binary, README.md, LICENSE,
#                                   THIRD_PARTY_NOTICES (the licenses of the
#                                   modules it links), man pages and
#                                   bash/zsh/fish completion scripts
#   airlock_DEBVERSION_ARCH.deb     (linux) the same, installed where Debian
#                                   looks (/usr/bin, /usr/share/man, ...),
#                                   with its copyright (airlock's and the
#                                   linked modules') and changelog
#   SHA256SUMS                      over all of them (sha256sum -c SHA256SUMS)
#
# Reproducible: the binaries are static (CGO_ENABLED=0), -trimpath drops
# the build's paths, -buildvcs=false keeps the go command's VCS probe out
# (it finds no repository in a git worktree, whose .git is a file, and none
# in a source tarball; the commit is stamped with -X instead, the same from
# anywhere), -s -w drops the symbol tables, and every time in the tarballs,
# man pages and .debs is SOURCE_DATE_EPOCH, the commit's. --check builds a
# second time from `git archive HEAD` unpacked at another path and compares
# SHA256SUMS byte for byte; with COLD=1 the second build also starts from
# an empty Go build cache (every package compiled again: several minutes
# more). Where dpkg-deb is installed --check also checks each .deb's
# fields and contents and runs the packaged binary of this machine's
# architecture; then lintian checks the .debs against Debian policy, and
# an error fails the check (on Linux, so does a missing lintian).
#
# The packaging (man pages from the command tree, tarballs, nfpm's .deb)
# is scripts/release, a Go module of its own so that its dependencies stay
# out of airlock's go.mod.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
CHECK=false
if [ "${1:-}" = "--check" ]; then
  CHECK=true
  shift
fi
[ $# -le 1 ] || { echo "usage: scripts/release.sh [--check] [VERSION]" >&2; exit 2; }

die() { echo "release.sh: $*" >&2; exit 1; }

command -v go >/dev/null || die "go is not installed"
command -v git >/dev/null || die "git is not installed: the version and commit come from it"
if [ -n "$(git status --porcelain)" ]; then
  die "the tree has uncommitted changes (git status): commit them, or release from a clean checkout"
fi

COMMIT=$(git rev-parse HEAD)
COMMIT_TIME=$(git log -1 --format=%cI HEAD)
export SOURCE_DATE_EPOCH
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct HEAD)
VERSION=${1:-$(git describe --tags --exact-match HEAD 2>/dev/null ||
  echo "v0.0.0-$(TZ=UTC git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd HEAD)-$(git rev-parse --short=12 HEAD)")}
case $VERSION in
  v[0-9]*) ;;
  *) die "version $VERSION: want v followed by a semantic version (v1.2.3)" ;;
esac
# Debian's form, as the release tool's debVersion writes it: a pre-release
# sorts before its release with "~" (v1.2.3-rc1 is 1.2.3~rc1), and each "-"
# inside a part becomes ".", since in Debian the last "-" would start a
# Debian revision and airlock is a native package
# (v0.0.0-20231114221320-abcdef123456 is 0.0.0~20231114221320.abcdef123456).
v=${VERSION#v} meta=""
if [[ $v == *+* ]]; then meta=+${v#*+} v=${v%%+*}; fi
DEBVERSION=${v%%-*}
if [[ $v == *-* ]]; then pre=${v#*-} DEBVERSION+="~${pre//-/.}"; fi
DEBVERSION+=${meta//-/.}

TARGETS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
PKG=github.com/airlockdev/airlock/internal/buildinfo
LDFLAGS="-s -w -X $PKG.version=$VERSION -X $PKG.commit=$COMMIT -X $PKG.commitTime=$COMMIT_TIME"

# build SRC OUT: the whole release from the source tree SRC into OUT.
build() {
  local src=$1 out=$2 work
  work=$(mktemp -d "${TMPDIR:-/tmp}/airlock-release.XXXXXX")
  mkdir -p "$out"
  (cd "$src/scripts/release" && go build -trimpath -buildvcs=false -o "$work/release" .)
  "$work/release" docs -version "$VERSION" "$work/docs"
  local target os arch bin name files
  for target in $TARGETS; do
    os=${target%/*} arch=${target#*/}
    bin=$work/$os-$arch/airlock
    (cd "$src" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch \
      go build -trimpath -buildvcs=false -ldflags "$LDFLAGS" -o "$bin" ./cmd/airlock)
    name=airlock_${VERSION}_${os}_${arch}
    # The licenses and notices of the modules the binary links, read from
    # its build information (the .deb's copyright file carries the same).
    "$work/release" notices -o "$work/$os-$arch/THIRD_PARTY_NOTICES" "$bin"
    files=("$bin=airlock" "$src/README.md=README.md" "$src/LICENSE=LICENSE"
      "$work/$os-$arch/THIRD_PARTY_NOTICES=THIRD_PARTY_NOTICES")
    for f in "$work"/docs/man/*.1; do files+=("$f=man/man1/${f##*/}"); done
    for f in "$work"/docs/completions/*; do files+=("$f=completions/${f##*/}"); done
    "$work/release" tar -o "$out/$name.tar.gz" -prefix "$name" "${files[@]}"
    if [ "$os" = linux ]; then
      "$work/release" static "$bin"
      "$work/release" deb -o "$out/airlock_${DEBVERSION}_${arch}.deb" -version "$VERSION" -commit "$COMMIT" -arch "$arch" -bin "$bin" -docs "$work/docs"
    fi
  done
  "$work/release" sums "$out"
  rm -rf "$work"
}

# checkdeb DEB ARCH: its control fields and files, and, for this machine's
# architecture, the packaged binary's own word on its version.
checkdeb() {
  local deb=$1 arch=$2 info contents x
  info=$(dpkg-deb --info "$deb")
  for want in "Package: airlock" "Version: $DEBVERSION" "Architecture: $arch"; do
    grep -qF "$want" <<<"$info" || die "$deb: dpkg-deb --info has no \"$want\":"$'\n'"$info"
  done
  contents=$(dpkg-deb --contents "$deb")
  for want in ./usr/bin/airlock ./usr/share/man/man1/airlock.1.gz ./usr/share/man/man1/airlock-commit.1.gz \
    ./usr/share/doc/airlock/copyright ./usr/share/doc/airlock/changelog.gz \
    ./usr/share/bash-completion/completions/airlock ./usr/share/zsh/vendor-completions/_airlock \
    ./usr/share/fish/vendor_completions.d/airlock.fish; do
    grep -qF " $want" <<<"$contents" || die "$deb does not install $want:"$'\n'"$contents"
  done
  grep -q '^-rwxr-xr-x root/root .* ./usr/bin/airlock$' <<<"$contents" || die "$deb: /usr/bin/airlock is not root's and 0755"
  if [ "$(go env GOHOSTOS)/$(go env GOHOSTARCH)" = "linux/$arch" ]; then
    x=$(mktemp -d)
    dpkg-deb --extract "$deb" "$x"
    local got
    got=$("$x/usr/bin/airlock" version)
    case $got in
      "airlock $VERSION (commit ${COMMIT:0:12}; "*) ;;
      *) die "the packaged binary says \"$got\", want airlock $VERSION at commit ${COMMIT:0:12}" ;;
    esac
    rm -rf "$x"
  fi
}

DIST=$ROOT/dist/$VERSION
rm -rf "$DIST"
echo "release.sh: airlock $VERSION (commit $COMMIT, SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH) into dist/$VERSION"
build "$ROOT" "$DIST"

if $CHECK; then
  again=$(mktemp -d "${TMPDIR:-/tmp}/airlock-release-check.XXXXXX")
  trap 'chmod -R u+w "$again" 2>/dev/null; rm -rf "$again"' EXIT
  mkdir -p "$again/src"
  git archive HEAD | tar -x -C "$again/src"
  cache=$(go env GOCACHE)
  if [ "${COLD:-}" = 1 ]; then
    cache=$again/gocache
  fi
  echo "release.sh: --check: building again from git archive HEAD in $again/src (GOCACHE=$cache)"
  GOCACHE=$cache build "$again/src" "$again/dist"
  if ! cmp -s "$DIST/SHA256SUMS" "$again/dist/SHA256SUMS"; then
    diff "$DIST/SHA256SUMS" "$again/dist/SHA256SUMS" >&2 || true
    die "--check: the second build differs (above: first, then second)"
  fi
  # Each tarball carries airlock's license and the notices of what its
  # binary links (scripts/release's tests hold their contents to the
  # binary's build information).
  for t in "$DIST"/*.tar.gz; do
    name=$(basename "$t" .tar.gz) listing=$(tar -tzf "$t")
    for want in LICENSE THIRD_PARTY_NOTICES; do
      grep -qx "$name/$want" <<<"$listing" || die "$t has no $name/$want"
    done
  done
  if command -v dpkg-deb >/dev/null; then
    for arch in amd64 arm64; do checkdeb "$DIST/airlock_${DEBVERSION}_${arch}.deb" "$arch"; done
  else
    echo "release.sh: --check: dpkg-deb is not installed; the .debs' contents were not checked" >&2
  fi
  # Debian policy: a .deb lintian reports an error for is one no
  # distribution takes; the release tool runs lintian and names the tags.
  # On Linux lintian is an apt-get away, so a check without it fails.
  if command -v lintian >/dev/null; then
    echo "release.sh: --check: lintian on the .debs"
    (cd "$ROOT/scripts/release" && go build -trimpath -buildvcs=false -o "$again/release" .)
    "$again/release" lint "$DIST"/*.deb || die "--check: lintian reports errors in the .debs (above)"
  elif [ "$(go env GOHOSTOS)" = linux ]; then
    die "--check: lintian is not installed (apt-get install lintian); it checks the .debs against Debian policy"
  else
    echo "release.sh: --check: lintian is not installed; the .debs were not checked against Debian policy" >&2
  fi
  echo "release.sh: --check: both builds are byte for byte the same:"
fi
cat "$DIST/SHA256SUMS"
