package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/running"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/selector"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/state"
	"github.com/airlockdev/airlock/internal/watch"
	"github.com/airlockdev/airlock/internal/watchd"
)

const (
	// Max is how many trees a base's pool keeps: enough for a few agents
	// working over one base at once; each costs a full copy on disk.
	Max = 2
	// MaxAge is how long a pooled tree waits to be reused before gc
	// deletes it.
	MaxAge = 7 * 24 * time.Hour

	// TreeDir is the pooled tree itself, in its slot.
	TreeDir = "tree"

	recordFile = "pool.json"
	treeFile   = "tree.manifest"
	sourceFile = "source.manifest"
	// gitFile is the git snapshot of the tree's open (Record.GitInputs).
	gitFile = "git.json"
	// baseFile is the base as the tree's open measured it, after its
	// token (Record.BaseToken): what a watch of the base patches.
	baseFile = "base.manifest"
	// claimDir is where Take claims a slot, in the claiming transaction's
	// directory.
	claimDir = "recycle"
)

// Supported reports whether this system can prove a pooled tree free: a
// command is contained (a PID namespace) only on Linux; elsewhere nothing
// is pooled.
func Supported() bool { return runtime.GOOS == "linux" }

// FileID names an inode: a staged tree's root directory.
type FileID struct{ Dev, Ino uint64 }

// Record is pool.json, beside a pooled tree.
type Record struct {
	Tx       string         `json:"tx"`
	Base     manifest.Bytes `json:"base"`
	Opened   time.Time      `json:"opened"`    // when the transaction opened: its command started later
	PooledAt time.Time      `json:"pooled_at"` // when it was pooled
	// TreeWalkNs and SourceWalkNs: see Pooled.
	TreeWalkNs   int64            `json:"tree_walk_ns"`
	SourceWalkNs int64            `json:"source_walk_ns"`
	Noise        []manifest.Bytes `json:"noise,omitempty"`
	// Listed and Unlisted: see Pooled. False (an older airlock's record,
	// or a base manifest read back from its file, which does not say):
	// every directory is read.
	Listed   bool             `json:"listed,omitempty"`
	Unlisted []manifest.Bytes `json:"unlisted,omitempty"`
	Bytes    int64            `json:"bytes"`   // bytes of the tree's files
	Entries  int              `json:"entries"` // its entries
	// RootDevice and RootInode: the tree's root directory, which a reuse
	// must find at the pooled path (never a symlink or another directory).
	RootDevice uint64 `json:"root_device"`
	RootInode  uint64 `json:"root_inode"`
	// Contained says every process of the tree's transaction had ended
	// when it was pooled (a contained run). A tree without it (pooled by
	// an older airlock, after an uncontained run) is never reused.
	Contained bool `json:"contained,omitempty"`
	// Quiet is the state root's quiet generation (running.Registry.Mark)
	// once every process of the tree's transaction had ended: the tree is
	// reused only after a later moment at which no command of the state
	// root ran (running.Registry.QuietSince). Nil (an older airlock's
	// record): never reused.
	Quiet *uint64 `json:"quiet,omitempty"`
	// Held is the key under which the daemon of the state root holds the
	// watch that has watched the tree since its open (internal/watchd):
	// the refresh measures what it names instead of walking the tree.
	Held string `json:"held,omitempty"`
	// BaseToken is the daemon's token taken before the tree's open
	// measured the base (saved as base.manifest), and SkipKey what that
	// measurement skipped (Watched.SkipKey): the refresh measures what
	// changed in the base since instead of walking it, when it skips the
	// same.
	BaseToken string `json:"base_token,omitempty"`
	SkipKey   string `json:"skip_key,omitempty"`
	// Exact says the tree is exactly the one its open staged (its walk
	// is the open's staged manifest, saved as tree.manifest) from the base
	// as base.manifest holds it, every entry proved (source.manifest is
	// that same file): where neither the tree nor the base changed since,
	// the refresh has nothing to measure (stage.Unchanged).
	Exact bool `json:"exact,omitempty"`
	// GitInputs is what the git snapshot of the tree's open (git.json,
	// taken after BaseToken) depends on outside the base: the next open
	// takes that snapshot as its own where nothing in the base changed
	// since the token, and git reads the same configuration.
	GitInputs string `json:"git_inputs,omitempty"`
}

// Settled is a copy-backend transaction's staged tree as its settling
// found it: what Put needs to decide whether it may be pooled, and to
// record it.
type Settled struct {
	Tx     string
	Dir    string         // the staged tree
	Base   manifest.Bytes // the base's path
	Opened time.Time
	Noise  []string // the agent-noise selectors the settling walk skipped
	// Root is the staged tree's root directory as staging made it.
	Root FileID
	// Walked is the settling diff's walk of the tree, begun at WalkNs,
	// over the directory WalkedRoot.
	Walked     *manifest.Manifest
	WalkNs     int64
	WalkedRoot FileID
	// Source is the settling's Source; SourceWalkNs is when open measured
	// the base.
	Source       *manifest.Manifest
	SourceWalkNs int64
	// Contained says every process of the transaction ended with its
	// container, and its command was registered in Running for its whole
	// life.
	Contained bool
	// Running is the registry of the commands running under the state
	// root: Put marks its quiet generation in the pooled record.
	Running *running.Registry
	// Hold, if set, hands the tree's watch to the state root's daemon and
	// returns the key it is held under (Record.Held; "" where it is not):
	// Put calls it once the tree qualifies, beside writing the slot.
	Hold func() string
	// BaseToken and SkipKey: see Record. BaseManifest is the file of the
	// base's manifest that open saved after taking BaseToken.
	BaseToken, SkipKey string
	BaseManifest       string
	// GitInputs and GitFile are the transaction's git snapshot (its file)
	// and what it depends on outside the base (see Record.GitInputs).
	GitInputs, GitFile string
	// WalkedFile and SourceFile, when set, are manifest files that hold
	// exactly Walked and Source already (the transaction's own, where the
	// command changed nothing): they are linked into the slot rather than
	// written again.
	WalkedFile, SourceFile string
}

// Put moves a settled tree into the pool at dir and trims the pool, and
// reports whether it pooled the tree. Only the directory staging made,
// measured by the settling walk, whose processes have all ended (a
// contained run's) qualifies: a transaction airlock did not run the
// command of, or ran uncontained, has processes it cannot account for.
func Put(ctx context.Context, dir string, s Settled) bool {
	if !Supported() || s.Walked == nil || s.Root.Ino == 0 {
		return false
	}
	// Only the directory staging made: a command can put a symlink (or
	// another directory) at its path, and a refresh writes into the tree.
	root, err := manifest.Lstat(s.Dir)
	if err != nil || root.Kind != manifest.KindDir || root.Dev != s.Root.Dev || root.Ino != s.Root.Ino {
		return false
	}
	// The settling walk must have measured that directory too.
	if s.WalkedRoot != (FileID{Dev: root.Dev, Ino: root.Ino}) {
		return false
	}
	if !s.Contained || s.Running == nil {
		return false
	}
	// Marked now, once every process of the transaction has ended (its
	// command's entry in the registry was released after its namespace
	// ended): a quiet moment after this mark had none of them, nor any
	// process they could have handed the tree to.
	quiet, err := s.Running.Mark()
	if err != nil {
		return false
	}
	slot := filepath.Join(dir, s.Tx)
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
	if s.Source == nil {
		return false
	}
	rec := Record{
		Tx: s.Tx, Base: s.Base, Opened: s.Opened, PooledAt: time.Now().UTC(),
		TreeWalkNs: s.WalkNs, SourceWalkNs: s.SourceWalkNs, Noise: asBytes(s.Noise),
		Entries: len(s.Walked.Entries), RootDevice: root.Dev, RootInode: root.Ino,
		Contained: s.Contained, Quiet: &quiet,
	}
	if unlisted, ok := s.Source.Listed(); ok {
		rec.Listed, rec.Unlisted = true, asBytes(unlisted)
	}
	// The base manifest is linked, not written again: it is the open's
	// own file, which nothing writes after open (safefs writes anew).
	if s.BaseToken != "" && s.BaseManifest != "" && os.Link(s.BaseManifest, filepath.Join(tmp, baseFile)) == nil {
		rec.BaseToken, rec.SkipKey = s.BaseToken, s.SkipKey
		if s.GitInputs != "" && s.GitFile != "" && os.Link(s.GitFile, filepath.Join(tmp, gitFile)) == nil {
			rec.GitInputs = s.GitInputs
		}
		// The command changed nothing (its walk is the open's staged
		// manifest) and every entry is proved (the source is the base):
		// both are linked below, and the base's link is the same file.
		rec.Exact = s.WalkedFile != "" && s.SourceFile == s.BaseManifest
	}
	for i := range s.Walked.Entries {
		rec.Bytes += s.Walked.Entries[i].Size
	}
	held := make(chan string, 1)
	if s.Hold != nil {
		go func() { held <- s.Hold() }()
	} else {
		held <- ""
	}
	if !write(tmp, rec, s, held) {
		return false
	}
	if os.Rename(s.Dir, filepath.Join(tmp, TreeDir)) != nil {
		return false
	}
	if err := os.Rename(tmp, slot); err != nil {
		// Put the tree back where removing it is the ordinary path.
		os.Rename(filepath.Join(tmp, TreeDir), s.Dir)
		return false
	}
	ok = true
	// A pool is a cache, but the commit's report comes after this: the
	// state it names must be what a power loss leaves.
	safefs.SyncDir(dir)
	Trim(ctx, dir)
	return true
}

// write saves a slot's record and manifests into the slot being made; the
// record's key of the held watch comes from held. The slot's directory is
// not synced: one a power loss leaves torn is refused when it is next
// claimed (a record or manifest that does not read; each manifest is
// checksummed) and deleted.
func write(tmp string, rec Record, s Settled, held <-chan string) bool {
	srcSaved := make(chan error, 1)
	go func() { srcSaved <- s.Source.SaveAs(filepath.Join(tmp, sourceFile), s.SourceFile) }()
	treeErr := s.Walked.SaveAs(filepath.Join(tmp, treeFile), s.WalkedFile)
	rec.Held = <-held
	data, err := json.Marshal(rec)
	return <-srcSaved == nil && treeErr == nil && err == nil &&
		os.WriteFile(filepath.Join(tmp, recordFile), data, 0o600) == nil
}

func asBytes(ss []string) []manifest.Bytes {
	if len(ss) == 0 {
		return nil
	}
	out := make([]manifest.Bytes, len(ss))
	for i, s := range ss {
		out[i] = manifest.Bytes(s)
	}
	return out
}

func asStrings(bs []manifest.Bytes) []string {
	if bs == nil {
		return nil
	}
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// Trim deletes the oldest pooled trees beyond Max, and any pooled tree
// older than MaxAge.
func Trim(ctx context.Context, dir string) {
	for i, sl := range Slots(dir) {
		if i >= Max || time.Since(sl.Record.PooledAt) > MaxAge {
			Drop(ctx, sl.Dir)
		}
	}
}

// Slot is one pooled tree: its directory and its record.
type Slot struct {
	Dir    string
	Record Record
	Err    error // why its record cannot be read
}

// Slots lists a pool's trees, newest first. A slot whose record cannot be
// read is listed last, with Err set.
func Slots(dir string) []Slot {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Slot
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || strings.Contains(name, ".") {
			continue
		}
		p := Slot{Dir: filepath.Join(dir, name)}
		data, err := state.ReadFile(filepath.Join(p.Dir, recordFile))
		if err == nil {
			err = json.Unmarshal(data, &p.Record)
		}
		p.Err = err
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Slot) int {
		if (a.Err == nil) != (b.Err == nil) {
			if a.Err == nil {
				return -1
			}
			return 1
		}
		return b.Record.PooledAt.Compare(a.Record.PooledAt)
	})
	return out
}

// Drop deletes a pooled tree: renamed aside at once (so that no open
// claims it), deleted in the background.
func Drop(ctx context.Context, dir string) error {
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

// Reused says which pooled tree Take made the workspace from, and what
// refreshing it took.
type Reused struct {
	From string // the transaction whose tree it was
	stage.Refreshed
	// TreeWatched and BaseWatched say the daemon's watch measured the
	// tree, and the base, instead of a walk.
	TreeWatched, BaseWatched bool
	// Watch, when Watched.Watch asked for one, watches the tree from
	// before the refresh measured it: nothing written to it since goes
	// unseen. The caller owns it.
	Watch *watch.Watch
}

// Watched is how Take asks the daemon of the state root what changed
// (internal/watchd): nil, it walks.
type Watched struct {
	Daemon *watchd.Client
	// SkipKey names what this open's base measurement skips (its exclude
	// and noise selectors): a base manifest measured under another is not
	// patched.
	SkipKey string
	// Watch asks for a watch of the tree set once it is claimed, before
	// anything measures it (Reused.Watch): a run's.
	Watch bool
	// Measuring, if set, is called before the tree or the base is
	// measured: it waits for what must come first (the open's own token of
	// the base, for the next refresh).
	Measuring func()
	// BaseSince, if set, hears once, before Measuring is called, what the
	// daemon named changed in the base since the pooled tree's open took
	// its token (nil: it could not say, or was not asked), with a token
	// drawn at that answer's moment ("" where none was); gitInputs and
	// gitFile are that open's git snapshot (Settled), readable until Take
	// returns.
	BaseSince func(changed *watchd.Changes, token, gitInputs, gitFile string)
}

// Take makes req.Dir from one of the pooled trees at dir, refreshed to the
// base (Refresh), claiming it into txDir first: a rename succeeds for one
// open only. A tree is taken only once no process of any transaction of
// the state root can hold it: commands registers them, and there must have
// been a moment after the tree settled at which none ran. It returns nil
// (and why, when there was a tree to try) when no tree could be used: the
// caller stages afresh. A tree that fails a proof of its own is deleted,
// never reused; one that waits for a quiet moment stays pooled. What is
// left of the slot a tree was taken from (its record and manifests) is
// deleted by a function Take hands to later, for the caller to run once
// it has saved the Result's manifests (which may link the slot's files:
// stage.Result.BaseFile) and wait for; nil runs it at once.
func Take(ctx context.Context, dir, txDir string, req stage.Request, commands *running.Registry, w *Watched, later func(func())) (*stage.Result, *Reused, string) {
	if !Supported() || commands == nil {
		return nil, nil, ""
	}
	why := ""
	for _, sl := range Slots(dir) {
		if sl.Err != nil || !sl.Record.Contained || sl.Record.Quiet == nil {
			// Unreadable, or pooled by an airlock that did not mark the
			// quiet generation (nor, maybe, contain its command).
			Drop(ctx, sl.Dir)
			continue
		}
		// Every process of any transaction is contained and registered,
		// and a process that holds the tree got it from one alive when it
		// settled (running's doc): a quiet moment since, when none ran,
		// means none can hold it now. The look is one instant (no command
		// registers while it looks), and it need not be held until the
		// claim below: a command that starts after that instant starts
		// from nothing that held the tree, so nothing it does can reach
		// the tree but by its path under the state root, as any process of
		// the user can (docs/reliability.md). The open's own command
		// starts after the claim, in the tree: it is its workspace.
		if !commands.QuietSince(*sl.Record.Quiet) {
			why = "commands of this state directory have run without a pause since the pooled tree settled (one could hold it): it is reused only after a moment when none runs"
			continue
		}
		// Claim it: a rename succeeds for one open only.
		claimed := filepath.Join(txDir, claimDir)
		if err := os.Rename(sl.Dir, claimed); err != nil {
			continue
		}
		res, done, early, err := refreshClaimed(ctx, claimed, sl.Record, req, w)
		if err == nil {
			rm := func() { os.RemoveAll(claimed) }
			if later == nil {
				rm()
			} else {
				later(rm)
			}
			return res, &Reused{From: sl.Record.Tx, Refreshed: done.Refreshed, TreeWatched: done.TreeWatched, BaseWatched: done.BaseWatched, Watch: early}, ""
		}
		why = err.Error()
		// Whatever is left of it is deleted, never reused: from the pool's
		// directory, where gc finds it if the deletion does not finish,
		// not from the transaction's, which may soon be removed itself.
		if _, serr := os.Lstat(req.Dir); serr == nil {
			os.Rename(req.Dir, filepath.Join(claimed, TreeDir))
		}
		failed := sl.Dir + ".failed"
		if os.Rename(claimed, failed) == nil {
			claimed = failed
		}
		Drop(ctx, claimed)
	}
	return nil, nil, why
}

// refreshClaimed moves a claimed pooled tree to req.Dir, checks that it is
// the very directory that was pooled, and refreshes it there.
func refreshClaimed(ctx context.Context, claimed string, rec Record, req stage.Request, w *Watched) (_ *stage.Result, _ *Refreshed, early *watch.Watch, err error) {
	noise, err := selector.New(asStrings(rec.Noise))
	if err != nil {
		return nil, nil, nil, err
	}
	if err := os.Rename(filepath.Join(claimed, TreeDir), req.Dir); err != nil {
		return nil, nil, nil, err
	}
	// The very directory that was pooled, not a symlink or another
	// directory put in its place.
	if at, err := manifest.Lstat(req.Dir); err != nil || at.Kind != manifest.KindDir || at.Dev != rec.RootDevice || at.Ino != rec.RootInode {
		return nil, nil, nil, fmt.Errorf("the pooled tree at %s is not the directory that was pooled", req.Dir)
	}
	// The slot's manifests are decoded while the daemon is asked: none
	// depends on the others.
	// A file linked under two names (the source that is the base as it
	// was measured: pool.Settled.SourceFile) is decoded once, and each
	// name gets its own copy of the entries.
	type decoded struct {
		done chan struct{}
		m    *manifest.Manifest
		err  error
	}
	byFile := map[FileID]*decoded{}
	load := func(name string) func() (*manifest.Manifest, error) {
		p := filepath.Join(claimed, name)
		id := FileID{}
		if e, err := manifest.Lstat(p); err == nil {
			id = FileID{Dev: e.Dev, Ino: e.Ino}
		}
		d, shared := byFile[id]
		if !shared || id.Ino == 0 {
			d = &decoded{done: make(chan struct{})}
			byFile[id] = d
			go func() {
				defer close(d.done)
				data, err := state.ReadFile(p)
				if err != nil {
					d.err = err
					return
				}
				d.m, d.err = manifest.Parse(p, data)
			}()
			return func() (*manifest.Manifest, error) { <-d.done; return d.m, d.err }
		}
		var once sync.Once
		var m *manifest.Manifest
		return func() (*manifest.Manifest, error) {
			<-d.done
			if d.err != nil {
				return nil, d.err
			}
			once.Do(func() { m = &manifest.Manifest{Entries: slices.Clone(d.m.Entries)} })
			return m, nil
		}
	}
	tree, source := load(treeFile), load(sourceFile)
	var base func() (*manifest.Manifest, error)
	if rec.BaseToken != "" && w != nil && w.Daemon != nil && rec.SkipKey == w.SkipKey {
		base = load(baseFile)
	}
	p := Pooled{
		Tree: tree, Source: source,
		TreeWalkNs: rec.TreeWalkNs, SourceWalkNs: rec.SourceWalkNs,
		Ignore: noise.MatchSelf,
		Listed: rec.Listed, Unlisted: asStrings(rec.Unlisted),
	}
	watchIt := w != nil && w.Watch
	var kept *watchd.Kept
	askBase := w != nil && w.Daemon != nil && rec.BaseToken != "" && rec.SkipKey == w.SkipKey
	if w != nil && w.BaseSince != nil && !askBase {
		w.BaseSince(nil, "", "", "") // no word on the base is coming
	}
	if w != nil && w.Daemon != nil {
		// Asked now, once the claim is made and no writer can be left
		// (Take): what either names is what changed up to this moment.
		var wg sync.WaitGroup
		if rec.Held != "" {
			wg.Go(func() { p.TreeChanges, kept, _ = w.Daemon.Take(rec.Held, watchIt) })
		}
		if askBase {
			wg.Go(func() {
				// The token renewed with the answer is this open's:
				// what changes after the answer is named to the next
				// open, and nothing falls between the two.
				ch, renewed, err := w.Daemon.Since(string(rec.Base), rec.BaseToken)
				if err == nil {
					p.BaseChanges, p.Base = ch, base
				}
				if w.BaseSince != nil {
					file := ""
					if rec.GitInputs != "" {
						file = filepath.Join(claimed, gitFile)
					}
					w.BaseSince(p.BaseChanges, renewed, rec.GitInputs, file)
				}
			})
		}
		wg.Wait()
	}
	if watchIt {
		// The run's watch covers the tree before anything measures it:
		// what is written to it from here on is the transaction's, and
		// seen; what was written before, the refresh finds. The watch
		// the daemon gave back has watched it since its first run's open,
		// and is the run's as it is, where it covers every directory of
		// the pooled walk; else a new one is set, and the tree is walked.
		early = resume(req.Dir, kept, p.TreeChanges, tree)
		if early == nil {
			p.TreeChanges = nil
			if m, err := tree(); err == nil {
				early, _ = watch.Start(req.Dir, dirsOf(m))
			}
		}
		defer func() {
			if err != nil && early != nil {
				early.Stop()
				early = nil
			}
		}()
	} else if kept != nil {
		unix.Close(kept.FD)
	}
	if w != nil && w.Measuring != nil {
		w.Measuring()
	}
	if rec.Exact && unwritten(p.TreeChanges) && p.BaseChanges != nil && len(p.BaseChanges.Trees) == 0 && (!watchIt || early != nil) {
		// Nothing was written to the tree since its walk, which is the
		// tree staged from base.manifest, and nothing in the base changed
		// since that was measured: the tree is what staging the base
		// afresh would make, with nothing to measure.
		prev, berr := p.Base()
		m, terr := tree()
		if berr == nil && terr == nil && baseUnchanged(req, prev, p.BaseChanges.Paths, rec.SourceWalkNs) {
			res, st, digested, err := stage.Unchanged(ctx, req, prev, m)
			if err != nil {
				return nil, nil, early, err
			}
			if !digested {
				res.BaseFile, res.StagedFile = filepath.Join(claimed, baseFile), filepath.Join(claimed, treeFile)
			}
			return res, &Refreshed{Refreshed: *st, TreeWatched: true, BaseWatched: true}, early, nil
		}
	}
	res, done, err := Refresh(ctx, req, p)
	if err != nil {
		return res, done, early, err
	}
	// What the refresh found as the pooled manifests say is saved by
	// linking their files (the slot is removed only after: see Take).
	if p.Base != nil {
		if prev, err := p.Base(); err == nil && manifest.Same(res.Base, prev) {
			res.BaseFile = filepath.Join(claimed, baseFile)
		}
	}
	if m, err := tree(); err == nil && manifest.Same(res.Staged, m) {
		res.StagedFile = filepath.Join(claimed, treeFile)
	}
	return res, done, early, nil
}

// baseUnchanged reports whether the base paths the daemon named measure
// now exactly as prev holds them, prev being the base as the pooled tree's
// open measured it from walkNs on, with a ctime the base's clock proves
// older than that measurement. The daemon names a file it cannot vouch
// for, whatever happened to it: one opened (git reading its packs), one
// with a second name (a local clone's objects, pnpm's store), which it
// names at every answer. Such a file that shows the same facts is one a
// refresh would keep, copying nothing (stage.Refresh: the stat proves the
// bytes); one written within the clock's window of the measurement is
// not, and the refresh compares its bytes.
func baseUnchanged(req stage.Request, prev *manifest.Manifest, paths []string, walkNs int64) bool {
	if len(paths) == 0 {
		return true
	}
	same, err := manifest.Unchanged(req.Base, prev, paths, manifest.WalkOptions{Skip: req.Skip})
	if err != nil || !same {
		return false
	}
	for _, p := range paths {
		if e, ok := prev.Lookup(p); ok && !req.BaseClock.Proves(e.CtimeNs, walkNs) {
			return false
		}
	}
	return true
}

// unwritten reports whether a pooled tree's watch named nothing
// written since it began: at most the tree's root, whose own entry no
// manifest holds (a listing of it, a move of the tree into and out of its
// pool slot).
func unwritten(ch *watchd.Changes) bool {
	if ch == nil || len(ch.Trees) > 0 {
		return false
	}
	for _, p := range ch.Paths {
		if p != "" {
			return false
		}
	}
	return true
}

// resume makes the run's watch of a claimed tree from the watch the daemon
// gave back (kept), or returns nil: none came, what touched the tree while
// it was pooled made or removed a directory, or its directories are not
// those of the pooled walk (tree). kept's descriptor is closed then.
func resume(dir string, kept *watchd.Kept, ch *watchd.Changes, tree func() (*manifest.Manifest, error)) *watch.Watch {
	if kept == nil {
		return nil
	}
	m, err := tree()
	if err != nil || ch == nil || len(ch.Trees) > 0 || !sameDirs(kept.Dirs, m) {
		unix.Close(kept.FD)
		return nil
	}
	w, err := watch.Resume(dir, kept.FD, kept.Dirs)
	if err != nil {
		return nil
	}
	return w
}

// sameDirs reports whether a watch's directories are exactly those of m.
func sameDirs(dirs map[int32]string, m *manifest.Manifest) bool {
	seen := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		if seen[d] {
			return false
		}
		seen[d] = true
	}
	n := 0
	for i := range m.Entries {
		if m.Entries[i].Kind == manifest.KindDir {
			if !seen[m.Entries[i].Path] {
				return false
			}
			n++
		}
	}
	// The root is watched too, and is no entry.
	return seen[""] && len(seen) == n+1
}

// dirsOf lists the directories of m.
func dirsOf(m *manifest.Manifest) []string {
	var dirs []string
	for i := range m.Entries {
		if m.Entries[i].Kind == manifest.KindDir {
			dirs = append(dirs, m.Entries[i].Path)
		}
	}
	return dirs
}

// CollectOptions say which pooled trees Collect removes.
type CollectOptions struct {
	IDs    []string      // only these slots (transaction ids), each removed
	All    bool          // every slot
	MaxAge time.Duration // slots unused for longer (0: MaxAge)
	DryRun bool          // decide and report, remove nothing
	// Size measures a slot's disk usage for the report.
	Size func(dir string) int64
}

// Collected is one pooled tree Collect looked at.
type Collected struct {
	ID      string
	Bytes   int64
	Removed bool
	Reason  string
}

// Collect removes what a crash left half-pooled or half-deleted in the
// pool at dir, and decides for each slot whether it stays (the newest Max
// of the base, used within o.MaxAge) or goes.
func Collect(ctx context.Context, dir string, o CollectOptions) []Collected {
	maxAge := o.MaxAge
	if maxAge == 0 {
		maxAge = MaxAge
	}
	if ents, err := os.ReadDir(dir); err == nil && !o.DryRun {
		for _, e := range ents {
			// Every name with a dot is one of these (.tmp, .drop,
			// .failed, .trash and their combinations); slots have none.
			if n := e.Name(); strings.Contains(n, ".") {
				if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Hour {
					Drop(ctx, filepath.Join(dir, n))
				}
			}
		}
	}
	var out []Collected
	for i, sl := range Slots(dir) {
		it := Collected{ID: filepath.Base(sl.Dir)}
		if len(o.IDs) > 0 && !slices.Contains(o.IDs, it.ID) {
			continue
		}
		if o.Size != nil {
			it.Bytes = o.Size(sl.Dir)
		}
		age := time.Since(sl.Record.PooledAt)
		switch {
		case len(o.IDs) > 0:
			it.Removed, it.Reason = true, "pooled tree, named"
		case sl.Err != nil:
			it.Removed, it.Reason = true, "pooled tree whose record cannot be read"
		case o.All:
			it.Removed, it.Reason = true, "pooled tree, --drop-pool"
		case i >= Max:
			it.Removed, it.Reason = true, fmt.Sprintf("pooled tree beyond the newest %d of base %s", Max, sl.Record.Base)
		case age > maxAge:
			it.Removed, it.Reason = true, fmt.Sprintf("pooled tree unused for %s", age.Round(time.Minute))
		default:
			it.Reason = fmt.Sprintf("kept: pooled tree of base %s, recycled by its next open", sl.Record.Base)
		}
		if it.Removed && !o.DryRun {
			if err := Drop(ctx, sl.Dir); err != nil {
				it.Removed, it.Reason = false, "kept: "+err.Error()
			}
		}
		out = append(out, it)
	}
	return out
}

// Usage reports what the pool at dir holds: trees and bytes.
func Usage(dir string) (trees int, bytes int64) {
	for _, sl := range Slots(dir) {
		trees++
		bytes += sl.Record.Bytes
	}
	return trees, bytes
}

// quote is a path as messages show it: as is when it is printable UTF-8,
// Go-quoted otherwise, so that every message stays one line and names the
// exact bytes.
func quote(s string) string {
	if s != "" && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return s
	}
	return strconv.Quote(s)
}
