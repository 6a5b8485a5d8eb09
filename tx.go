package airlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/pool"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/selector"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/state"
)

// Tx is one transaction.
type Tx struct {
	store *Store
	st    *state.Tx
	rec   Record
	// walked is the staged tree as this process's last diff measured it,
	// and walkedNs when that walk began: settling pools the tree with it.
	walked     *manifest.Manifest
	walkedNs   int64
	walkedRoot pool.FileID // the directory that walk measured
	// leftovers are processes the command left running (see Run): a
	// contained run ended them before it settled. (An uncontained run's
	// are not known, and its tree is never pooled.)
	leftovers []string
	// contained says this process ran the transaction's command in a PID
	// namespace of its own (see Run), and every process of it has ended;
	// registered says the command was registered as running under the
	// state root for its whole life (Store.launchRegistered). Only then
	// can its tree be pooled.
	contained, registered bool
	// execUnaccounted says a command Exec ran was not contained and
	// registered for its whole life: what it left may still write the
	// tree, which is then never pooled.
	execUnaccounted bool
	// pooling asks diff to keep what pooling the tree needs (poolSrc,
	// from the open manifests, which are then let go): set by the
	// settling calls.
	pooling bool
	poolSrc *manifest.Manifest
	// opened holds the manifests Open wrote, by file name, for the same
	// process's diffs (a run's commit): decoding them again costs tens
	// of milliseconds on a large tree. Dropped where a manifest is
	// rewritten (rebaseOpen).
	opened map[string]*manifest.Manifest
	// watch is the watch of a run's tree, from open to settling
	// (watch.go): nil when none was asked for.
	watch *watched
	// part is set on the part of a transaction a partial commit lands
	// (part.go): it reads the whole's staged tree.
	part *part
}

// ID is the transaction's id.
func (t *Tx) ID() string { return t.rec.ID }

// Path is the staged workspace: the directory the command works in.
func (t *Tx) Path() string {
	if t.part != nil {
		return t.part.whole.Path()
	}
	return string(t.rec.Staged)
}

// Base is the directory the transaction protects.
func (t *Tx) Base() string { return string(t.rec.Base) }

// Record is the transaction's open record.
func (t *Tx) Record() Record { return t.rec }

// StateDir is the transaction's state directory.
func (t *Tx) StateDir() string { return t.st.Dir() }

// Status is where a transaction is in its life.
type Status string

const (
	StatusOpen        Status = "open"        // the command may still be working
	StatusRefused     Status = "refused"     // a commit was refused; retained, can be committed again
	StatusInterrupted Status = "interrupted" // an apply was cut short; run recover
	StatusCommitted   Status = "committed"
	StatusNoChanges   Status = "no_changes"
	StatusDiscarded   Status = "discarded"
	// StatusCorrupt marks, in a listing, a transaction whose state cannot
	// be trusted; nothing acts on it (gc removes it when named).
	StatusCorrupt Status = "corrupt"
)

// Settled reports whether the transaction is over: committed, discarded or
// closed with no changes.
func (s Status) Settled() bool {
	return s == StatusCommitted || s == StatusNoChanges || s == StatusDiscarded
}

// Status reads the transaction's status from its event log.
func (t *Tx) Status() (_ Status, err error) {
	defer exported(&err)
	evs, err := t.st.Events()
	if err != nil {
		return "", err
	}
	if len(evs) == 0 || evs[0].Event != eventOpened {
		// Open writes the opened event before it returns: a log without
		// it was truncated or replaced, and nothing in it can be trusted.
		return "", &state.CorruptError{Path: t.st.Path(state.EventsFile), Err: fmt.Errorf("the event log does not start with the transaction's %q event", eventOpened)}
	}
	s := StatusOpen
	for _, e := range evs {
		switch e.Event {
		case eventRefused, eventRecovered:
			s = StatusRefused
		case eventApplying:
			s = StatusInterrupted
		case eventCommitted, eventRollForward:
			s = StatusCommitted
		case eventNoChanges:
			s = StatusNoChanges
		case eventDiscarded, eventBaseGone:
			s = StatusDiscarded
		}
	}
	return s, nil
}

// Events returns the transaction's event log.
func (t *Tx) Events() (_ []Event, err error) {
	defer exported(&err)
	evs, err := t.st.Events()
	if err != nil || evs == nil {
		return nil, err
	}
	out := make([]Event, len(evs))
	for i, e := range evs {
		out[i] = Event(e)
	}
	if hook := t.hookEvents(); len(hook) > 0 {
		out = append(out, hook...)
		slices.SortStableFunc(out, func(a, b Event) int { return a.Time.Compare(b.Time) })
	}
	return out, nil
}

func (t *Tx) event(name string, detail map[string]any) error {
	return t.st.Append(state.Event{Time: time.Now().UTC(), Event: name, Detail: detail})
}

// Change is one changed path, for callers outside the package.
type Change struct {
	Path string
	Op   string // "add", "modify" or "delete"
	From string // kind at open: "none", "file", "dir", "symlink"
	To   string // kind in the staged workspace
}

// ChangeSet is what the command changed so far.
type ChangeSet struct {
	set *changeset.Set
}

// Changes lists the changed paths in order.
func (c *ChangeSet) Changes() []Change {
	out := make([]Change, len(c.set.Changes))
	for i, ch := range c.set.Changes {
		out[i] = Change{Path: ch.Path, Op: ch.Op.String(), From: ch.Base.Kind.String(), To: ch.Result.Kind.String()}
	}
	return out
}

// Counts returns how many paths are added, modified and deleted: files
// and symlinks, as git counts them, and directories only where they
// matter on their own (empty, a mode change, a type change).
func (c *ChangeSet) Counts() (added, modified, deleted int) { return c.set.Counts() }

// Empty reports whether there is nothing to apply and nothing a commit
// would refuse.
func (c *ChangeSet) Empty() bool { return c.set.Empty() }

// GitMeta counts changed paths under .git directories, which are never
// applied.
func (c *ChangeSet) GitMeta() int { return c.set.GitMeta }

// Unsupported names FIFOs, sockets and devices in the staged workspace.
func (c *ChangeSet) Unsupported() []string {
	out := make([]string, len(c.set.Unsupported))
	for i, u := range c.set.Unsupported {
		out[i] = string(u)
	}
	return out
}

// Changes computes the change set of the staged workspace against the base
// as it was at open. It does not freeze it: the command may still be
// writing.
func (t *Tx) Changes(ctx context.Context) (_ *ChangeSet, err error) {
	defer exported(&err)
	set, err := t.diff(ctx)
	if err != nil {
		return nil, err
	}
	return &ChangeSet{set}, nil
}

func (t *Tx) diff(ctx context.Context) (*changeset.Set, error) { return t.diffFrom(ctx, t.Base()) }

// diffFrom is diff for a process that reads the base through the path
// view (see workspace).
func (t *Tx) diffFrom(ctx context.Context, view string) (*changeset.Set, error) {
	if _, err := os.Lstat(t.Path()); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("transaction %s has no staged workspace at %s any more", t.ID(), t.Path())
		}
		return nil, err
	}
	// Other excludes are one-directional (what the command creates under
	// them is a change); agent noise never is.
	noise, err := selector.New(t.rec.Noise)
	if err != nil {
		return nil, fmt.Errorf("default excludes in %s: %w", t.st.Path(recordFile), err)
	}
	if b, err := stage.Get(t.rec.Backend); err == nil {
		if d, ok := b.(stage.Differ); ok {
			// The backend knows what changed without a walk (overlay).
			_, baseClock := t.store.clocks(view)
			return d.Changes(ctx, stage.DiffRequest{Base: view, Dir: t.Path(), Skip: noise.MatchSelf, BaseClock: baseClock})
		}
	}
	base, err := t.loadManifest(baseManifestFile)
	if err != nil {
		return nil, err
	}
	open, err := t.loadManifest(stagedOpenFile)
	if err != nil {
		return nil, err
	}
	start := time.Now().UnixNano()
	rootBefore, rerr := manifest.Lstat(t.Path())
	now, err := t.watchedTree(ctx, open, noise)
	if err != nil {
		return nil, err
	}
	if now != nil {
		// The entries the watch did not name were measured at open and
		// had not changed when the watch stopped, once every process of
		// the command had ended: a change would have named them (the
		// change set counts on that as well). The ones it named were
		// measured since. A later pooling proves their stat facts from
		// then, as from a walk begun at that moment, not from when open
		// began measuring: a directory the refresh set the times of
		// after that (changing its ctime) would otherwise never be proved
		// again, and every warm run would make each directory afresh.
		//
		// That holds from the measurement on only for a watch set before
		// it (a recycled tree's: watched.continuous); a fresh copy's was
		// set once the copy was measured, and its facts count from when
		// open began.
		start = t.watch.stoppedNs
		if !t.watch.continuous {
			start = t.rec.CreatedAt.UnixNano()
			if sg := t.rec.Staging; sg != nil && sg.WalkNs > 0 && sg.WalkNs < start {
				start = sg.WalkNs
			}
		}
	} else if now, err = manifest.Walk(ctx, t.Path(), manifest.WalkOptions{Skip: noise.MatchSelf}); err != nil {
		return nil, fmt.Errorf("measure staged workspace: %w", err)
	}
	t.walked, t.walkedNs = now, start
	t.walkedRoot = pool.FileID{}
	if rootAfter, err := manifest.Lstat(t.Path()); rerr == nil && err == nil && rootBefore.Kind == manifest.KindDir && manifest.SameStat(rootBefore, rootAfter) {
		t.walkedRoot = pool.FileID{Dev: rootAfter.Dev, Ino: rootAfter.Ino}
	}
	set, err := changeset.Diff(ctx, changeset.Input{Base: base, StagedOpen: open, Staged: now, BaseDir: t.Base(), StagedDir: t.Path(), AtOpen: t.atOpenBytes(ctx)})
	if err != nil {
		return nil, err
	}
	// After the diff: it proved by bytes what stat could not (see
	// pool.Source).
	if t.pooling {
		t.poolSrc = pool.Source(base, open, now)
	}
	return set, nil
}

// atOpenBytes is the diff's source of a base file's bytes at open once
// the base file no longer proves them: the content store (an airlock
// commit's original, or a checkpoint's at-open copy), each object proved
// by its digest before it is compared, then a git HEAD that was clean at
// open. Without them a file whose stat facts moved counts as changed
// whenever the live base did, and show, diff and a rewind's re-measure
// disagree about a file that holds exactly its bytes at open.
func (t *Tx) atOpenBytes(ctx context.Context) func(manifest.Entry) (io.ReadCloser, bool) {
	var orig *originals.Store
	return func(b manifest.Entry) (io.ReadCloser, bool) {
		if orig == nil {
			var err error
			if orig, err = t.originals(); err != nil {
				return nil, false
			}
		}
		if d, ok := orig.Lookup(b); ok && orig.Verify(d) == nil {
			if f, err := orig.Open(d); err == nil {
				return f, true
			}
		}
		if blob, ok, err := t.headBlob(ctx, b); err == nil && ok {
			return io.NopCloser(bytes.NewReader(blob)), true
		}
		return nil, false
	}
}

// loadManifest reads one of the transaction's manifests through the state
// package's checks: a manifest that is not the user's own, or that others
// could have written, is refused like any other state file.
func (t *Tx) loadManifest(name string) (*manifest.Manifest, error) {
	if m, ok := t.opened[name]; ok {
		return m, nil
	}
	b, err := t.st.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return manifest.Parse(t.st.Path(name), b)
}

// removeStaged drops the staged workspace of a settled transaction.
func (t *Tx) removeStaged(ctx context.Context) error {
	b, err := stage.Get(t.rec.Backend)
	if err != nil {
		return err
	}
	remove := b.Remove
	// A worktree must be unregistered by its backend, which deletes a
	// large tree in the background itself.
	if t.bigStaged() && b.Name() != stage.Worktree {
		// Thousands of files: delete them in the background.
		remove = func(ctx context.Context, dir string) error { return stage.Retire(ctx, b, dir) }
	}
	if err := remove(ctx, t.Path()); err != nil {
		return fmt.Errorf("remove staged workspace %s: %w", t.Path(), err)
	}
	return nil
}

// bigStagedManifest is the size of a staged manifest (some 3,000 entries)
// above which the staged tree is removed in the background.
const bigStagedManifest = 100 << 10

// bigStagedEntries is the same in entries, for the tree as this process
// measured it at settle.
const bigStagedEntries = 3000

// bigStaged reports whether the staged tree holds thousands of entries:
// at open (its manifest), or now, as the settle measured it (a command
// that added thousands of files to a small tree, an install).
func (t *Tx) bigStaged() bool {
	if t.walked != nil && len(t.walked.Entries) > bigStagedEntries {
		return true
	}
	fi, err := os.Stat(t.st.Path(stagedOpenFile))
	return err == nil && fi.Size() > bigStagedManifest
}

// ReceiptPath is where the transaction's receipt is (once it settled).
func (t *Tx) ReceiptPath() string { return t.st.Path(receiptFile) }

// Receipt loads the transaction's receipt, if it has one.
func (t *Tx) Receipt() (*Receipt, error) {
	r, _, err := receipt.Load(t.st.Path(receiptFile))
	return publicReceipt(r), err
}
