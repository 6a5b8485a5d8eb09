package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/airlockdev/airlock/internal/safefs"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/selector"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/state"
)

// Recycling. Copying a large base for every transaction is the cost users
// feel most on file systems that cannot clone. A settled copy-backend
// transaction's staged tree differs from the base only where its change set
// (or, once committed, nothing) says; instead of deleting it, settling puts
// it in a small pool per base, and the next open over the same base
// refreshes it (stage.Refresh): only what differs is copied. The pool keeps,
// with each tree, the walk that settled it and the base's stat facts of the
// versions its untouched files were copied from, so that a refresh proves
// by stat (bytes where stat cannot decide) what it may keep. A tree is
// reused only when nothing wrote it after its transaction ended and no
// process can still reach it; otherwise it is deleted and the base copied
// afresh.

const (
	// poolMax is how many trees a base's pool keeps: enough for a few
	// agents working over one base at once; each costs a full copy on disk.
	poolMax = 2
	// poolMaxAge is how long a pooled tree waits to be reused before gc
	// deletes it.
	poolMaxAge = 7 * 24 * time.Hour

	poolRecordFile = "pool.json"
	poolTreeFile   = "tree.manifest"
	poolSourceFile = "source.manifest"
	poolTreeDir    = "tree"
	recycleDir     = "recycle"
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
}

// Recycled says what refreshing a pooled tree took.
type Recycled struct {
	From    string `json:"from"`    // the transaction whose tree it was
	Kept    int    `json:"kept"`    // entries kept as they were
	Copied  int    `json:"copied"`  // files and symlinks copied from the base
	Bytes   int64  `json:"bytes"`   // bytes copied
	Removed int    `json:"removed"` // entries removed
}

// poolRecord is pool.json, beside a pooled tree.
type poolRecord struct {
	Tx       string    `json:"tx"`
	Base     Bytes     `json:"base"`
	Opened   time.Time `json:"opened"`    // when the transaction opened: its command started later
	PooledAt time.Time `json:"pooled_at"` // when it was pooled
	// TreeWalkNs and SourceWalkNs: see stage.Pooled.
	TreeWalkNs   int64     `json:"tree_walk_ns"`
	SourceWalkNs int64     `json:"source_walk_ns"`
	Noise        Selectors `json:"noise,omitempty"`
	Bytes        int64     `json:"bytes"`   // bytes of the tree's files
	Entries      int       `json:"entries"` // its entries
	// RootDevice and RootInode: the tree's root directory, which a reuse
	// must find at the pooled path (never a symlink or another directory).
	RootDevice uint64 `json:"root_device"`
	RootInode  uint64 `json:"root_inode"`
	// Contained says every process of the tree's transaction had ended
	// when it was pooled (a contained run): a refresh need not look for
	// processes that hold it. Otherwise it must.
	Contained bool `json:"contained,omitempty"`
}

// recycles reports whether this system can prove a pooled tree free
// (stage.Holders needs /proc).
func recycles() bool { return runtime.GOOS == "linux" }

// poolTree puts the settled transaction's staged tree into its base's pool,
// and reports whether it did. Only a copy-backend tree whose settling diff
// walked it in this process qualifies: that walk is the record later reuse
// is checked against.
func (t *Tx) poolTree(ctx context.Context) bool {
	if !recycles() || t.rec.Backend != stage.Copy || t.walked == nil || t.rec.Staging == nil || t.rec.Staging.RootInode == 0 {
		return false
	}
	// Only the directory staging made: a command can put a symlink (or
	// another directory) at its path, and a refresh writes into the tree.
	root, err := manifest.Lstat(t.Path())
	if err != nil || root.Kind != manifest.KindDir || root.Dev != t.rec.Staging.RootDevice || root.Ino != t.rec.Staging.RootInode {
		return false
	}
	// The settling walk must have measured that directory too.
	if t.walkedRoot != (stage.FileID{Dev: root.Dev, Ino: root.Ino}) {
		return false
	}
	// Only a tree no process can write any more: a contained run's, or an
	// uncontained one whose look for leftovers found none (then a refresh
	// looks for holders again). A transaction airlock did not run the
	// command of (open, then commit from another process) has processes
	// it cannot account for.
	if !t.contained && !t.scanned {
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
	slot := filepath.Join(dir, t.ID())
	tmp := slot + ".tmp"
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return false
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	src, err := t.poolSource()
	if err != nil {
		return false
	}
	rec := poolRecord{
		Tx: t.ID(), Base: t.rec.Base, Opened: t.rec.CreatedAt, PooledAt: time.Now().UTC(),
		TreeWalkNs: t.walkedNs, SourceWalkNs: t.rec.Staging.WalkNs, Noise: t.rec.Noise,
		Entries: len(t.walked.Entries), RootDevice: root.Dev, RootInode: root.Ino,
		Contained: t.contained,
	}
	for i := range t.walked.Entries {
		rec.Bytes += t.walked.Entries[i].Size
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return false
	}
	srcSaved := make(chan error, 1)
	go func() { srcSaved <- src.Save(filepath.Join(tmp, poolSourceFile)) }()
	treeErr := t.walked.Save(filepath.Join(tmp, poolTreeFile))
	if <-srcSaved != nil || treeErr != nil ||
		os.WriteFile(filepath.Join(tmp, poolRecordFile), data, 0o600) != nil {
		return false
	}
	if os.Rename(t.Path(), filepath.Join(tmp, poolTreeDir)) != nil {
		return false
	}
	if err := os.Rename(tmp, slot); err != nil {
		// Put the tree back where removing it is the ordinary path.
		os.Rename(filepath.Join(tmp, poolTreeDir), t.Path())
		return false
	}
	ok = true
	// A pool is a cache, but the commit's report comes after this: the
	// state it names must be what a power loss leaves.
	safefs.SyncDir(dir)
	t.store.trimPool(ctx, dir)
	return true
}

// poolSource: see stage.PoolSource.
func (t *Tx) poolSource() (*manifest.Manifest, error) {
	if t.poolSrc == nil {
		return nil, errors.New("no settling diff")
	}
	return t.poolSrc, nil
}

// trimPool deletes the oldest pooled trees beyond poolMax, and any pooled
// tree older than poolMaxAge.
func (s *Store) trimPool(ctx context.Context, dir string) {
	slots := poolSlots(dir)
	for i, sl := range slots {
		if i >= poolMax || time.Since(sl.rec.PooledAt) > poolMaxAge {
			dropPooled(ctx, sl.dir)
		}
	}
}

type pooled struct {
	dir string
	rec poolRecord
	err error // why its record cannot be read
}

// poolSlots lists a pool's trees, newest first. A slot whose record cannot
// be read is listed last, with err set.
func poolSlots(dir string) []pooled {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []pooled
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || strings.Contains(name, ".") {
			continue
		}
		p := pooled{dir: filepath.Join(dir, name)}
		data, err := state.ReadFile(filepath.Join(p.dir, poolRecordFile))
		if err == nil {
			err = json.Unmarshal(data, &p.rec)
		}
		p.err = err
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b pooled) int {
		if (a.err == nil) != (b.err == nil) {
			if a.err == nil {
				return -1
			}
			return 1
		}
		return b.rec.PooledAt.Compare(a.rec.PooledAt)
	})
	return out
}

// dropPooled deletes a pooled tree: renamed aside at once (so that no open
// claims it), deleted in the background.
func dropPooled(ctx context.Context, dir string) error {
	trash := dir + ".drop"
	if err := os.Rename(dir, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	b, _ := stage.Get(stage.Copy)
	return stage.Retire(ctx, b, trash)
}

// recycle makes req.Dir from one of the base's pooled trees, refreshed to
// the base. It returns nil (and why, when there was a tree to try) when no
// tree could be used: the caller stages afresh.
func (s *Store) recycle(ctx context.Context, b *state.Base, txDir string, req stage.Request) (*stage.Result, *Recycled, string) {
	if !recycles() {
		return nil, nil, ""
	}
	dir, err := b.PoolDir()
	if err != nil {
		return nil, nil, ""
	}
	why := ""
	for _, sl := range poolSlots(dir) {
		if sl.err != nil {
			dropPooled(ctx, sl.dir)
			continue
		}
		// Claim it: a rename succeeds for one open only.
		claimed := filepath.Join(txDir, recycleDir)
		if err := os.Rename(sl.dir, claimed); err != nil {
			continue
		}
		res, info, err := s.refresh(ctx, claimed, sl.rec, req)
		if err == nil {
			os.RemoveAll(claimed)
			return res, info, ""
		}
		why = err.Error()
		// Whatever is left of it is deleted, never reused: from the pool's
		// directory, where gc finds it if the deletion does not finish,
		// not from the transaction's, which may soon be removed itself.
		if _, serr := os.Lstat(req.Dir); serr == nil {
			os.Rename(req.Dir, filepath.Join(claimed, poolTreeDir))
		}
		failed := sl.dir + ".failed"
		if os.Rename(claimed, failed) == nil {
			claimed = failed
		}
		dropPooled(ctx, claimed)
	}
	return nil, nil, why
}

// refresh checks a claimed pooled tree and refreshes it into req.Dir.
func (s *Store) refresh(ctx context.Context, claimed string, rec poolRecord, req stage.Request) (*stage.Result, *Recycled, error) {
	load := func(name string) (*manifest.Manifest, error) {
		p := filepath.Join(claimed, name)
		data, err := state.ReadFile(p)
		if err != nil {
			return nil, err
		}
		return manifest.Parse(p, data)
	}
	noise, err := selector.New(rec.Noise)
	if err != nil {
		return nil, nil, err
	}
	if err := os.Rename(filepath.Join(claimed, poolTreeDir), req.Dir); err != nil {
		return nil, nil, err
	}
	// The very directory that was pooled, not a symlink or another
	// directory put in its place.
	if at, err := manifest.Lstat(req.Dir); err != nil || at.Kind != manifest.KindDir || at.Dev != rec.RootDevice || at.Ino != rec.RootInode {
		return nil, nil, fmt.Errorf("the pooled tree at %s is not the directory that was pooled", req.Dir)
	}
	res, done, err := stage.Refresh(ctx, req, stage.Pooled{
		Tree:       func() (*manifest.Manifest, error) { return load(poolTreeFile) },
		Source:     func() (*manifest.Manifest, error) { return load(poolSourceFile) },
		TreeWalkNs: rec.TreeWalkNs, SourceWalkNs: rec.SourceWalkNs,
		Ignore: noise.MatchSelf, Since: rec.Opened, Contained: rec.Contained,
	})
	if err != nil {
		return nil, nil, err
	}
	return res, &Recycled{From: rec.Tx, Kept: done.Kept, Copied: done.Copied, Bytes: done.Bytes, Removed: done.Removed}, nil
}

// gcPools trims every base's pool (see GCOptions.DropPool), and removes a
// pooled tree whose transaction was named.
func (s *Store) gcPools(ctx context.Context, o GCOptions, items []GCItem, freed int64) ([]GCItem, int64) {
	dirs, err := s.st.PoolDirs()
	if err != nil {
		return items, freed
	}
	maxAge := o.OlderThan
	if maxAge == 0 {
		maxAge = poolMaxAge
	}
	for dir := range dirs {
		// What a crash left half-pooled or half-deleted.
		if ents, err := os.ReadDir(dir); err == nil && !o.DryRun {
			for _, e := range ents {
				// Every name with a dot is one of these (.tmp, .drop,
				// .failed, .trash and their combinations); slots have none.
				if n := e.Name(); strings.Contains(n, ".") {
					if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Hour {
						dropPooled(ctx, filepath.Join(dir, n))
					}
				}
			}
		}
		for i, sl := range poolSlots(dir) {
			it := GCItem{ID: filepath.Base(sl.dir), Pooled: true, Bytes: diskUsage(sl.dir)}
			age := time.Since(sl.rec.PooledAt)
			switch {
			case len(o.IDs) > 0:
				if !slices.Contains(o.IDs, it.ID) {
					continue
				}
				it.Removed, it.Reason = true, "pooled tree, named"
			case sl.err != nil:
				it.Removed, it.Reason = true, "pooled tree whose record cannot be read"
			case o.DropPool:
				it.Removed, it.Reason = true, "pooled tree, --drop-pool"
			case i >= poolMax:
				it.Removed, it.Reason = true, fmt.Sprintf("pooled tree beyond the newest %d of base %s", poolMax, sl.rec.Base)
			case age > maxAge:
				it.Removed, it.Reason = true, fmt.Sprintf("pooled tree unused for %s", age.Round(time.Minute))
			default:
				it.Reason = fmt.Sprintf("kept: pooled tree of base %s, recycled by its next open", sl.rec.Base)
			}
			if it.Removed && !o.DryRun {
				if err := dropPooled(ctx, sl.dir); err != nil {
					it.Removed, it.Reason = false, "kept: "+err.Error()
				}
			}
			if it.Removed {
				freed += it.Bytes
			}
			items = append(items, it)
		}
	}
	return items, freed
}

// poolUsage reports what a base's pool holds: trees and bytes.
func poolUsage(dir string) (trees int, bytes int64) {
	for _, sl := range poolSlots(dir) {
		trees++
		bytes += sl.rec.Bytes
	}
	return trees, bytes
}
