package airlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/airlockdev/airlock/internal/launch"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/pool"
	"github.com/airlockdev/airlock/internal/running"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/state"
	"github.com/airlockdev/airlock/internal/watch"
	"github.com/airlockdev/airlock/internal/watchd"
)

// Recycling. Copying a large base for every transaction is the cost users
// feel most on file systems that cannot clone; settling a copy-backend
// transaction puts its staged tree in a small pool per base instead of
// deleting it, and the next open over the same base refreshes it. The pool,
// its records and the proofs that a pooled tree is free and untouched are
// internal/pool's; what is here ties them to a transaction's record.

// poolMax and poolTreeDir: see pool.Max and pool.TreeDir.
const (
	poolMax     = pool.Max
	poolTreeDir = pool.TreeDir
)

// Staging says how a transaction's workspace was made.
type Staging struct {
	// WalkNs is when the base's walk began (ns since the epoch).
	WalkNs int64 `json:"walk_ns"`
	// Recycled is set when the workspace is a pooled tree refreshed to the
	// base instead of a fresh copy.
	Recycled *Recycled `json:"recycled,omitempty"`
	// NotRecycled says why a pooled tree was there but not reused.
	NotRecycled string `json:"not_recycled,omitempty"`
	// RootDevice and RootInode name the staged workspace's root directory
	// as staging made it.
	RootDevice uint64 `json:"root_device,omitempty"`
	RootInode  uint64 `json:"root_inode,omitempty"`
	// BaseToken is the token of the state root's watch daemon taken
	// before the base was measured (internal/watchd), and SkipKey what
	// that measurement skipped: settling pools them with the tree, so that
	// the next refresh measures only what changed in the base since.
	BaseToken string `json:"base_token,omitempty"`
	SkipKey   string `json:"skip_key,omitempty"`
	// GitInputs is what the open's git snapshot depends on outside the
	// base (gitbase.Inputs), when it was taken after BaseToken: the next
	// open of the pooled tree reuses the snapshot where nothing in the
	// base changed since (reuseGit).
	GitInputs string `json:"git_inputs,omitempty"`
}

// Recycled says what refreshing a pooled tree took.
type Recycled struct {
	From    string `json:"from"`    // the transaction whose tree it was
	Kept    int    `json:"kept"`    // entries kept as they were
	Copied  int    `json:"copied"`  // files and symlinks copied from the base
	Bytes   int64  `json:"bytes"`   // bytes copied
	Removed int    `json:"removed"` // entries removed
	// Watched says which of the refresh's two measurements a watch made
	// instead of a walk: "tree" (the pooled tree), "base", or
	// "tree+base"; empty when both were walked.
	Watched string `json:"watched,omitempty"`
}

// commands is the registry of the contained commands running under the
// state root (internal/running): a pooled tree is reused only after a
// moment at which none ran.
func (s *Store) commands() *running.Registry {
	return running.New(filepath.Join(s.Dir(), "running"))
}

// launchRegistered runs a transaction's command (a run's, a validator) as
// launch.Run does, registered as running under the state root for its
// whole life, until every process of it has ended; registered says it
// was. One that ran without a PID namespace marks the registry (what it
// left running is unbounded): no tree is reused in this boot after it.
func (s *Store) launchRegistered(ctx context.Context, txID string, spec launch.Spec) (lr launch.Result, registered bool, err error) {
	e, regErr := s.commands().Start(txID)
	if regErr != nil {
		if os.Getenv("AIRLOCK_TX") == "" {
			// Unregistered, the command could hold another run's tree
			// while the registry looks quiet: it does not run.
			return launch.Result{ExitCode: -1}, false, fmt.Errorf("register the command of transaction %s among the running ones (%s): %w; nothing was run: remove whatever holds that directory's lock, or retry", txID, s.commands().Dir(), regErr)
		}
		// Inside an `airlock run` (a hook's validator), where the registry
		// is hidden: the run's own entry, held until its namespace has
		// ended, covers every process in it.
		lr, err = launch.Run(ctx, spec)
		return lr, false, err
	}
	lr, err = launch.Run(ctx, spec)
	if !lr.Contained && (lr.Uncontained != "" || !spec.Contain) && e.Uncontained() != nil {
		// Unmarked, the registry could be found quiet while what the
		// command left runs: keep the entry held until this process
		// exits rather than release it.
		return lr, false, err
	}
	e.Done()
	return lr, true, err
}

// recycles reports whether this system can prove a pooled tree free
// (pool.Supported). Where a command cannot be contained, no tree is pooled
// (pool.Put), and doctor says so.
func recycles() bool { return pool.Supported() }

// poolTree puts the settled transaction's staged tree into its base's pool,
// and reports whether it did (pool.Put decides). Only a copy-backend tree
// whose settling diff walked it in this process qualifies: that walk is
// the record later reuse is checked against.
func (t *Tx) poolTree(ctx context.Context) bool {
	if !recycles() || t.rec.Backend != stage.Copy || t.walked == nil || t.rec.Staging == nil || t.rec.Staging.RootInode == 0 {
		return false
	}
	b, err := t.stateBase()
	if err != nil {
		return false
	}
	dir, err := b.PoolDir()
	if err != nil {
		return false
	}
	// What the command left as open measured it is linked, not written.
	var walkedFile, sourceFile string
	if manifest.Same(t.walked, t.opened[stagedOpenFile]) {
		walkedFile = t.st.Path(stagedOpenFile)
	}
	if manifest.Same(t.poolSrc, t.opened[baseManifestFile]) {
		sourceFile = t.st.Path(baseManifestFile)
	}
	return pool.Put(ctx, dir, pool.Settled{
		WalkedFile: walkedFile, SourceFile: sourceFile,
		Tx: t.ID(), Dir: t.Path(), Base: manifest.Bytes(t.rec.Base), Opened: t.rec.CreatedAt, Noise: t.rec.Noise,
		Root:   pool.FileID{Dev: t.rec.Staging.RootDevice, Ino: t.rec.Staging.RootInode},
		Walked: t.walked, WalkNs: t.walkedNs, WalkedRoot: t.walkedRoot,
		Source: t.poolSrc, SourceWalkNs: t.rec.Staging.WalkNs,
		Contained: t.contained && t.registered, Running: t.store.commands(),
		Hold:      t.handWatch,
		BaseToken: t.rec.Staging.BaseToken, SkipKey: t.rec.Staging.SkipKey, BaseManifest: t.st.Path(baseManifestFile),
		GitInputs: t.rec.Staging.GitInputs, GitFile: t.st.Path(gitFile),
	})
}

// daemon is the client of the state root's watch daemon (internal/watchd),
// or nil where none is to be asked: the watch is off (NoWatchEnv), or this
// program cannot start it.
func (s *Store) daemon() *watchd.Client {
	if os.Getenv(NoWatchEnv) == "1" || !watchd.Available() || !recycles() {
		return nil
	}
	return watchd.New(s.Dir())
}

// baseToken asks the daemon for a token before an open measures the
// base of a tree that may be pooled; "" where there is none to have.
func (s *Store) baseToken(base string) string {
	d := s.daemon()
	if d == nil {
		return ""
	}
	tok, err := d.Token(base)
	if err != nil {
		return ""
	}
	return tok
}

// skipKey names what an open's measurement of the base skips: its
// exclude and noise selectors and where the project's root lies. A base
// manifest measured under another key is never patched into this one.
func skipKey(r *rules) string {
	h := sha256.New()
	for _, part := range [][]string{r.exclude, r.noise, {r.proj.Under}} {
		for _, x := range part {
			h.Write([]byte(x))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// recycle makes req.Dir from one of the base's pooled trees, refreshed to
// the base (pool.Take). It returns nil (and why, when there was a tree to
// try) when no tree could be used: the caller stages afresh. later is
// pool.Take's.
func (s *Store) recycle(ctx context.Context, b *state.Base, txDir string, req stage.Request, skipKey string, watchIt bool, tokenTaken func(), later func(func()), baseSince func(changed *watchd.Changes, token, gitInputs, gitFile string)) (*stage.Result, *Recycled, *watch.Watch, string) {
	if !recycles() {
		return nil, nil, nil, ""
	}
	dir, err := b.PoolDir()
	if err != nil {
		return nil, nil, nil, ""
	}
	w := &pool.Watched{Daemon: s.daemon(), SkipKey: skipKey, Watch: watchIt, Measuring: tokenTaken, BaseSince: baseSince}
	res, used, why := pool.Take(ctx, dir, txDir, req, s.commands(), w, later)
	if res == nil {
		return nil, nil, nil, why
	}
	rc := &Recycled{From: used.From, Kept: used.Kept, Copied: used.Copied, Bytes: used.Bytes, Removed: used.Removed}
	switch {
	case used.TreeWatched && used.BaseWatched:
		rc.Watched = "tree+base"
	case used.TreeWatched:
		rc.Watched = "tree"
	case used.BaseWatched:
		rc.Watched = "base"
	}
	return res, rc, used.Watch, ""
}

// gcPools trims every base's pool (see GCOptions.DropPool), and removes a
// pooled tree whose transaction was named.
func (s *Store) gcPools(ctx context.Context, o GCOptions, items []GCItem, freed int64) ([]GCItem, int64) {
	dirs, err := s.st().PoolDirs()
	if err != nil {
		return items, freed
	}
	var maxAge time.Duration // 0: the pool's own default
	if o.OlderThan != nil {
		maxAge = *o.OlderThan
	}
	for dir := range dirs {
		for _, c := range pool.Collect(ctx, dir, pool.CollectOptions{
			IDs: o.IDs, All: o.DropPool, MaxAge: maxAge, DryRun: o.DryRun, Size: diskUsage,
		}) {
			if c.Removed {
				freed += c.Bytes
			}
			items = append(items, GCItem{ID: c.ID, Pooled: true, Bytes: c.Bytes, Removed: c.Removed, Reason: c.Reason})
		}
	}
	return items, freed
}

// poolUsage reports what a base's pool holds: trees and bytes.
func poolUsage(dir string) (trees int, bytes int64) { return pool.Usage(dir) }
