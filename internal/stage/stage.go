package stage

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/manifest"
)

// Backend names, as --backend and .airlock.toml spell them.
const (
	Auto     = "auto"
	Copy     = "copy"
	Reflink  = "reflink"
	Overlay  = "overlay"
	Worktree = "worktree"
)

// Request says what to stage and where.
type Request struct {
	// Base is the absolute path of the base directory.
	Base string
	// Dir is the absolute path of the staged workspace. It must not exist;
	// its parent must. Stage creates it, and removes it again if staging
	// fails.
	Dir string
	// Skip reports whether a path (slash-separated, relative to Base) is
	// outside the surface (an exclude selector). A skipped path is not
	// staged and not measured; a skipped directory's subtree is not
	// visited. Nil skips nothing.
	Skip func(rel string, isDir bool) bool
	// Hosted asks for a workspace that a command hosts: the backend
	// prepares it without mounting anything, and the command's own mount
	// namespace mounts it (HostedMount says how). Only overlay without
	// root uses it: its mount could not outlive the process that opens.
	Hosted bool
	// Progress, if set, is called from time to time with the entries staged
	// so far and the total, and once more with done == total when staging
	// succeeds. Calls come from one goroutine at a time and never after
	// Stage returns.
	Progress func(done, total int)
	// StateClock and BaseClock are the timestamp clocks (fsclock) of the
	// staged workspace's file system and of the base's: a stat fact taken
	// within a clock's window of a change proves nothing, so staging
	// records the digests of those files (see Result). The zero Clock is
	// a coarse one.
	StateClock, BaseClock fsclock.Clock
}

// Result is what staging measured.
type Result struct {
	// Base is the base's surface as it was staged: one entry per path that
	// was staged, with the stat facts of the very version whose bytes were
	// copied (a file that changed between the walk and its copy is
	// recorded as copied), plus a KindOther entry for each FIFO, socket
	// and device node, which is not staged. A file whose ctime lies within
	// BaseClock's window of WalkNs carries the digest of the bytes staged:
	// a same-size edit in the same timestamp step could leave every stat
	// fact as it is, so the commit's drift check compares bytes there.
	Base *manifest.Manifest
	// Staged is the staged tree measured when staging ended: its own
	// inodes, mtimes and ctimes. A file whose ctime lies within
	// StateClock's window of the moment staging ended carries the digest
	// of its bytes: a write within the same timestamp step might move no
	// stat fact, so the diff compares bytes there. Every other staged
	// file's ctime is old enough that a later write moves it.
	Staged *manifest.Manifest
	// Warnings are one-line notes for the user, e.g. a FIFO that was not
	// staged or a mode the system would not set.
	Warnings []string
	// WalkNs is when the walk that measured Base began (ns since the
	// epoch): a base entry whose ctime is not older by BaseClock's window
	// could change again within the same timestamp step without a trace.
	WalkNs int64
	// BaseFile and StagedFile, when set, are manifest files that hold
	// exactly Base and Staged already (a pooled tree's, which its refresh
	// found as they were): the caller links them rather than write the
	// same bytes again.
	BaseFile, StagedFile string
}

// Backend makes and removes staged workspaces one way.
type Backend interface {
	// Name is the backend's --backend name; "auto" never appears here,
	// only the backend it resolved to.
	Name() string
	// Supported reports whether the backend works on this machine with
	// its state under stateDir, and if not, why not in one line.
	Supported(stateDir string) (ok bool, reason string)
	// Stage makes req.Dir a staged copy of req.Base's surface. On error,
	// req.Dir does not exist (unless it existed before the call).
	Stage(ctx context.Context, req Request) (*Result, error)
	// Remove removes a staged workspace this backend made, including
	// directories that a command left without write permission. A dir
	// that does not exist is not an error.
	Remove(ctx context.Context, dir string) error
}

// Get returns the backend that --backend name selects. "auto" (or "")
// without a state directory to probe is copy; use Choose to resolve it.
func Get(name string) (Backend, error) {
	switch name {
	case Auto, "", Copy:
		return copyBackend{}, nil
	case Reflink:
		return reflinkBackend{}, nil
	case Overlay:
		return overlayBackend{}, nil
	case Worktree:
		return worktreeBackend{}, nil
	}
	return nil, fmt.Errorf("unknown backend %s (want auto, copy, reflink, overlay or worktree)", quote(name))
}

// Choose returns the backend that --backend name selects for a base whose
// transactions keep their state under stateDir. "auto" (or "") picks the
// fastest backend that gives snapshot isolation here: reflink where the
// state directory's file system clones files and the base lies on the
// same file system, else copy. It never picks overlay, whose isolation is
// weaker (read-committed: see the package documentation).
func Choose(name, stateDir, base string) (Backend, error) {
	if name != Auto && name != "" {
		return Get(name)
	}
	if ok, _ := cloneSupport(stateDir); ok && sameDevice(stateDir, base) {
		return reflinkBackend{}, nil
	}
	return copyBackend{}, nil
}

func sameDevice(a, b string) bool {
	x, err := manifest.Lstat(a)
	if err != nil {
		return false
	}
	y, err := manifest.Lstat(b)
	return err == nil && x.Dev == y.Dev
}

// Hoster is implemented by a backend that, where it cannot stage a
// workspace of its own (overlay without root), can stage one that only
// the namespace of a command run in it mounts (Request.Hosted).
type Hoster interface {
	// SupportedHosted reports whether a hosted workspace works here, and
	// how or why not, in one line. It makes only cheap checks; the mount
	// itself, in the command's namespace, is the proof.
	SupportedHosted(stateDir string) (ok bool, reason string)
}

// Differ is implemented by a backend that can tell what changed in its
// staged workspace without walking all of it (overlay reads its upper
// layer). A transaction asks it instead of walking and diffing manifests.
type Differ interface {
	Changes(ctx context.Context, req DiffRequest) (*changeset.Set, error)
}

// ContentDirer is implemented by a Differ whose change set measures the
// changed files somewhere other than the staged workspace's own path
// (overlay: its upper layer; the merged mount shows other device and inode
// numbers). A change's staged bytes are read beneath ContentDir, so that the
// file read is the very file the change set measured.
type ContentDirer interface {
	ContentDir(dir string) string
}

// DiffRequest names a staged workspace to diff against its base.
type DiffRequest struct {
	Base string // the base directory
	Dir  string // the staged workspace, as Request.Dir was
	// Skip reports whether a path is outside the surface (the exclude
	// selectors): changes there are left out, as staging left them out.
	Skip func(rel string, isDir bool) bool
	// BaseClock is the timestamp clock of the base's file system: a base
	// entry changed within its window of the open counts as changed since.
	BaseClock fsclock.Clock
}

// quote shows a path as it is when that is readable on one line, and
// Go-quoted when it holds control characters or bytes that are not UTF-8,
// so that every message stays one line and names the exact bytes. An empty
// string is quoted so that it shows.
func quote(s string) string {
	if s != "" && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return s
	}
	return strconv.Quote(s)
}
