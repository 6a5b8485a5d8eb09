package airlock

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/progress"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/stage"
)

// Checkpoint is one recorded state of a transaction's staged workspace:
// its change set against the base at open, every file's bytes kept in
// the base's content store, so that Rewind can put the workspace back
// exactly as it was.
type Checkpoint struct {
	Number  int
	Time    time.Time
	Message string
	// Auto says what took it when nothing asked for it by name:
	// CheckpointByHook, CheckpointByRewind; "" when asked for.
	Auto CheckpointAuto
	// Added, Modified and Deleted count the change set as ChangeSet.Counts.
	Added, Modified, Deleted int
	// Digest is the change set's digest (as show's diff_digest): two
	// checkpoints with the same digest hold the same staged workspace.
	Digest string
	// Unchanged says CheckpointOptions.IfChanged found the workspace as
	// this checkpoint, the last one, recorded it: nothing new was taken.
	Unchanged bool
}

// CheckpointAuto says what took a checkpoint on its own.
type CheckpointAuto string

const (
	CheckpointByHook   CheckpointAuto = "hook"   // an agent's hook, after a tool call
	CheckpointByRewind CheckpointAuto = "rewind" // a rewind, of the state it replaced
)

// CheckpointOptions say how Tx.Checkpoint records one.
type CheckpointOptions struct {
	Message string
	Auto    CheckpointAuto
	// IfChanged takes none when the workspace is as the last checkpoint
	// recorded it (a hook after a tool call that wrote nothing), and
	// returns that one, Unchanged.
	IfChanged bool
}

// CommandRunningError is the refusal of a checkpoint or rewind while a
// command runs in the transaction's staged workspace (`airlock run`'s
// COMMAND, or Exec's): it could be writing what would be recorded or
// replaced. Nothing was recorded or changed.
type CommandRunningError struct {
	Tx string
	Op string // "checkpoint" or "rewind"
}

func (e *CommandRunningError) Error() string {
	return fmt.Sprintf("transaction %s has a command running in its staged workspace (airlock run, or the MCP run tool): nothing was %s; %s once the command has ended",
		e.Tx, map[string]string{"checkpoint": "recorded", "rewind": "rewound"}[e.Op], e.Op)
}

// checkpointRecord is a checkpoint as its state file keeps it.
type checkpointRecord struct {
	Number  int            `json:"number"`
	Time    time.Time      `json:"time"`
	Message string         `json:"message,omitempty"`
	Auto    CheckpointAuto `json:"auto,omitempty"`
	// WalkNs is when the walk that measured the staged tree began: a
	// file whose ctime lies a clock window before it, and whose stat
	// facts a later walk finds the same, still holds the bytes recorded.
	WalkNs int64 `json:"walk_ns"`
	// BaseRecord stamps the transaction's record of the base the change
	// set is against: a rebase rewrites it, and a checkpoint from before
	// one is against another base.
	BaseRecord manifest.Entry `json:"base_record"`
	Set        *changeset.Set `json:"set"`
}

func (r *checkpointRecord) public() Checkpoint {
	a, m, d := r.Set.Counts()
	return Checkpoint{Number: r.Number, Time: r.Time, Message: r.Message, Auto: r.Auto, Added: a, Modified: m, Deleted: d, Digest: r.Set.Digest()}
}

const (
	checkpointPrefix     = "checkpoint-"
	checkpointSuffix     = ".json"
	checkpointObjectsDir = "checkpoint-objects"
	eventRewound         = "rewound"
	eventCheckpointed    = "checkpointed"
)

func checkpointFile(n int) string { return checkpointPrefix + strconv.Itoa(n) + checkpointSuffix }

// checkpointNumbers lists the numbers of the transaction's checkpoints,
// in order.
func (t *Tx) checkpointNumbers() ([]int, error) {
	ents, err := os.ReadDir(t.st.Dir())
	if err != nil {
		return nil, fmt.Errorf("transaction %s: list its checkpoints: %w", t.ID(), err)
	}
	var ns []int
	for _, e := range ents {
		s, ok := strings.CutPrefix(e.Name(), checkpointPrefix)
		if !ok {
			continue
		}
		s, ok = strings.CutSuffix(s, checkpointSuffix)
		if n, err := strconv.Atoi(s); ok && err == nil && n > 0 && checkpointFile(n) == e.Name() {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns, nil
}

func (t *Tx) loadCheckpoint(n int) (*checkpointRecord, error) {
	var r checkpointRecord
	if err := t.st.Read(checkpointFile(n), &r); err != nil {
		return nil, err
	}
	if r.Number != n || r.Set == nil {
		return nil, fmt.Errorf("transaction %s: checkpoint %d's record %s is not checkpoint %d's", t.ID(), n, t.st.Path(checkpointFile(n)), n)
	}
	return &r, nil
}

// sealOf is the digest of a checkpoint record as its file decodes: the
// record encoded, decoded and encoded again, so that the seal taken as it
// is written and the one taken as it is read are of the same bytes.
func sealOf(r *checkpointRecord) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	var back checkpointRecord
	if err := json.Unmarshal(b, &back); err != nil {
		return "", err
	}
	if b, err = json.Marshal(&back); err != nil {
		return "", err
	}
	return manifest.HashBytes(b), nil
}

// TamperedCheckpointError refuses a rewind to a checkpoint whose record
// is not the one recorded when it was taken: a process other than airlock
// rewrote it, and restoring it would write bytes the checkpoint never
// held as if they were exact.
type TamperedCheckpointError struct {
	Tx     string
	Number int
	Record string // the record's file
	Why    string
}

func (e *TamperedCheckpointError) Error() string {
	return fmt.Sprintf("transaction %s: checkpoint %d's record %s is not the one recorded when it was taken (%s): a process other than airlock rewrote it; rewind to another checkpoint", e.Tx, e.Number, e.Record, e.Why)
}

// verifyCheckpoint proves r is checkpoint r.Number as it was taken: its
// seal in the event log (the last one of that number) is its digest, and
// every file it records is one the content store's index recorded for
// this transaction's checkpoints, at that path with that digest and those
// stat facts. A checkpoint taken before seals were written has only the
// second check. A same-user process that rewrites the record, its seal and
// the index consistently is beyond what unsigned state can detect.
func (t *Tx) verifyCheckpoint(orig *originals.Store, r *checkpointRecord) error {
	bad := func(why string) error {
		return &TamperedCheckpointError{Tx: t.ID(), Number: r.Number, Record: t.st.Path(checkpointFile(r.Number)), Why: why}
	}
	evs, err := t.st.Events()
	if err != nil {
		return err
	}
	want := ""
	for _, ev := range evs {
		if ev.Event != eventCheckpointed {
			continue
		}
		if n, ok := ev.Detail["number"].(float64); ok && int(n) == r.Number {
			want, _ = ev.Detail["record"].(string)
		}
	}
	if want != "" {
		got, err := sealOf(r)
		if err != nil {
			return err
		}
		if got != want {
			return bad(fmt.Sprintf("its digest is %s, its seal in the event log %s", got, want))
		}
	}
	recs, err := orig.Records()
	if err != nil {
		return err
	}
	kept := map[string][]manifest.Entry{}
	for _, rec := range recs {
		if rec.Kind == originals.KindCheckpoint && rec.TxID == t.ID() {
			kept[rec.Entry.Path] = append(kept[rec.Entry.Path], rec.Entry)
		}
	}
	for _, c := range r.Set.Changes {
		if c.Result.Kind != manifest.KindFile {
			continue
		}
		if !slices.ContainsFunc(kept[c.Path], func(e manifest.Entry) bool {
			return e.Digest == c.Result.Digest && manifest.SameStat(e, c.Result)
		}) {
			return bad(fmt.Sprintf("%s with content %s is not among the files the content store %s kept for its checkpoints", c.Path, c.Result.Digest, orig.Dir()))
		}
	}
	return nil
}

// Checkpoints lists the transaction's checkpoints, oldest first.
func (t *Tx) Checkpoints() (_ []Checkpoint, err error) {
	defer exported(&err)
	ns, err := t.checkpointNumbers()
	if err != nil {
		return nil, err
	}
	out := make([]Checkpoint, 0, len(ns))
	for _, n := range ns {
		r, err := t.loadCheckpoint(n)
		if err != nil {
			return nil, err
		}
		out = append(out, r.public())
	}
	return out, nil
}

// workLock takes the transaction's lock for a checkpoint or rewind, and
// checks that nothing runs in the staged workspace and that it is open to
// work in.
func (t *Tx) workLock(ctx context.Context, op string) (func(), error) {
	unlock, err := t.settleLock(ctx)
	var busy *BusyError
	if errors.As(err, &busy) && busy.Exec {
		return nil, &CommandRunningError{Tx: t.ID(), Op: op}
	}
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			unlock()
		}
	}()
	if running, err := t.store.commands().Running(t.ID()); err != nil {
		return nil, fmt.Errorf("%s %s: tell whether a command runs in it: %w", op, t.ID(), err)
	} else if running {
		return nil, &CommandRunningError{Tx: t.ID(), Op: op}
	}
	st, err := t.Status()
	if err != nil {
		return nil, err
	}
	switch st {
	case StatusOpen, StatusRefused:
	case StatusInterrupted:
		return nil, interrupted(t.Base(), t.ID())
	default:
		return nil, &NotOpenError{Tx: t.ID(), Status: st}
	}
	if b, err := stage.Get(t.rec.Backend); err == nil {
		if _, ok := b.(stage.Differ); ok {
			return nil, fmt.Errorf("%s %s: its staged workspace (backend %s) reads through to the live base, whose changes a rewind could not tell from the transaction's; use the copy, reflink or worktree backend", op, t.ID(), t.rec.Backend)
		}
	}
	ok = true
	return unlock, nil
}

// Checkpoint records the staged workspace as it is now and returns the
// new checkpoint. It holds the transaction's lock, and refuses
// (*CommandRunningError) while a command runs in the workspace. A file
// that changes while it is recorded fails the checkpoint, which records
// nothing: some process airlock did not start is still writing.
func (t *Tx) Checkpoint(ctx context.Context, o CheckpointOptions) (_ *Checkpoint, err error) {
	defer exported(&err)
	unlock, err := t.workLock(ctx, "checkpoint")
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, err := t.checkpoint(ctx, o)
	if err != nil && err != errUnchanged {
		return nil, err
	}
	c := r.public()
	c.Unchanged = err == errUnchanged
	return &c, nil
}

// baseRecordStamp measures the transaction's record of the base: a
// rebase replaces the file, which gives it another inode. Its ctime is
// left out: open may link the file to a pooled copy, whose links coming
// and going move the ctime of both names.
func (t *Tx) baseRecordStamp() (manifest.Entry, error) {
	e, err := manifest.Lstat(t.st.Path(baseManifestFile))
	if err != nil {
		return e, fmt.Errorf("transaction %s: its record of the base: %w", t.ID(), err)
	}
	return manifest.Entry{Kind: e.Kind, Size: e.Size, MtimeNs: e.MtimeNs, Ino: e.Ino, Dev: e.Dev}, nil
}

// errUnchanged is checkpoint's word for IfChanged's "nothing new": it
// returns the last checkpoint with it.
var errUnchanged = errors.New("the staged workspace is as the last checkpoint recorded it")

// checkpoint records one; the caller holds the lock (workLock).
//
// Its cost is what changed since the last checkpoint: the change set is
// measured as diff measures it, a file whose stat facts the last
// checkpoint proved is not read again, and the others are read once each
// (as a commit freezes them: the very file measured, refused if it
// changes meanwhile) into the base's content store, where bytes it holds
// already are not stored twice.
func (t *Tx) checkpoint(ctx context.Context, o CheckpointOptions) (*checkpointRecord, error) {
	ns, err := t.checkpointNumbers()
	if err != nil {
		return nil, err
	}
	var prev *checkpointRecord
	if len(ns) > 0 {
		if prev, err = t.loadCheckpoint(ns[len(ns)-1]); err != nil {
			return nil, err
		}
	}
	stamp, err := t.baseRecordStamp()
	if err != nil {
		return nil, err
	}
	walkNs := time.Now().UnixNano()
	set, err := t.diff(ctx)
	if err != nil {
		return nil, err
	}
	// A test writes the staged tree here: the freeze must refuse a file
	// that is no longer the one measured.
	fault.Point("checkpoint-measured")
	orig, err := t.originals()
	if err != nil {
		return nil, err
	}
	// What the last checkpoint proved: its files' stat facts and digests.
	proved := map[string]manifest.Entry{}
	// The checkpoint a rewind takes first reuses nothing from a previous
	// record it cannot prove is the one recorded.
	trustPrev := prev != nil && (o.Auto != CheckpointByRewind || t.verifyCheckpoint(orig, prev) == nil)
	if trustPrev && manifest.SameStat(prev.BaseRecord, stamp) {
		_, clock := t.store.clocks(t.Path())
		for _, c := range prev.Set.Changes {
			if c.Result.Kind == manifest.KindFile && c.Result.Digest != "" && clock.Proves(c.Result.CtimeNs, prev.WalkNs) {
				proved[c.Path] = c.Result
			}
		}
	}
	fresh := &changeset.Set{}
	var freshAt []int
	for i, c := range set.Changes {
		if c.Result.Kind != manifest.KindFile {
			continue
		}
		if p, ok := proved[c.Path]; ok && manifest.SameStat(p, c.Result) && reusable(orig, p.Digest, o.Auto == CheckpointByRewind) {
			set.Changes[i].Result.Digest = p.Digest
			continue
		}
		fresh.Changes = append(fresh.Changes, c)
		freshAt = append(freshAt, i)
	}
	if len(fresh.Changes) > 0 {
		if err := t.keepCheckpointed(ctx, orig, fresh); err != nil {
			return nil, err
		}
		for k, i := range freshAt {
			set.Changes[i].Result.Digest = fresh.Changes[k].Result.Digest
		}
	}
	if err := t.keepAtOpen(ctx, orig, set, prev); err != nil {
		return nil, err
	}
	if o.IfChanged && prev != nil && manifest.SameStat(prev.BaseRecord, stamp) && prev.Set.Digest() == set.Digest() {
		return prev, errUnchanged
	}
	n := 1
	if len(ns) > 0 {
		n = ns[len(ns)-1] + 1
	}
	r := &checkpointRecord{Number: n, Time: time.Now().UTC(), Message: o.Message, Auto: o.Auto, WalkNs: walkNs, BaseRecord: stamp, Set: set}
	// The seal goes to the event log before the record is published: a
	// crash between them leaves a seal naming no record, which the next
	// checkpoint, taking the same number, seals again (the last seal of a
	// number is its record's), never a record without one.
	seal, err := sealOf(r)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: seal checkpoint %d: %w", t.ID(), n, err)
	}
	if err := t.event(eventCheckpointed, map[string]any{"number": n, "record": seal}); err != nil {
		return nil, err
	}
	if err := t.st.WriteOnce(checkpointFile(n), r); err != nil {
		return nil, fmt.Errorf("checkpoint %s: record checkpoint %d: %w", t.ID(), n, err)
	}
	return r, nil
}

// reusable says whether a checkpoint may record a file by the digest the
// last one proved, without reading it again: its object is in the store.
// The checkpoint a rewind takes first (prove) is the only record of files
// the rewind is about to replace, so there the object's bytes themselves
// are proved; one that does not hold them sends the file to be read
// again, from the live file, which put then stores over the bad object.
// A checkpoint taken otherwise keeps the cheap check: a bad object it
// names is found by the rewind that reads it, before anything is written.
func reusable(orig *originals.Store, digest string, prove bool) bool {
	if !prove {
		return orig.Has(digest)
	}
	return orig.Verify(digest) == nil
}

// atOpenDir is where keepAtOpen copies base files before the content
// store takes them.
const atOpenDir = "at-open-objects"

// keepAtOpen keeps, for each file of the base set changes, its bytes as
// the transaction opened with them, once: a rewind to an earlier
// checkpoint, where the path was untouched, restores those bytes, and the
// staged copy that held them is gone. They are read from the base while
// its stat facts still prove them (as at open, before the read and after
// it); a path whose base file moved since is skipped, and a rewind that
// needs it is refused then, as the at-open bytes were not kept.
//
// A path the previous checkpoint recorded changed over the same base
// file was handled by it: only paths changed since are looked up, so
// that the store's index is read only when there are some, and a
// checkpoint's cost stays what changed since the last one.
func (t *Tx) keepAtOpen(ctx context.Context, orig *originals.Store, set *changeset.Set, prev *checkpointRecord) error {
	seen := map[string]manifest.Entry{}
	if prev != nil {
		for _, c := range prev.Set.Changes {
			seen[c.Path] = c.Base
		}
	}
	var want []manifest.Entry
	for _, c := range set.Changes {
		if c.Base.Kind != manifest.KindFile {
			continue
		}
		if b, ok := seen[c.Path]; ok && manifest.SameStat(b, c.Base) {
			continue
		}
		e := c.Base
		e.Path = c.Path
		if _, ok := orig.Lookup(e); ok {
			continue
		}
		want = append(want, e)
	}
	if len(want) == 0 {
		return nil
	}
	dir := t.st.Path(atOpenDir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("checkpoint %s: %w", t.ID(), err)
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("checkpoint %s: %w", t.ID(), err)
	}
	root, err := safefs.OpenRootNoFollow(t.Base())
	if err != nil {
		return nil // a base gone or swapped proves nothing: nothing to keep
	}
	defer root.Close()
	var es []manifest.Entry
	var srcs []string
	for _, e := range want {
		if err := ctx.Err(); err != nil {
			return err
		}
		src, d, ok := copyAtOpen(root, dir, filepath.Join(t.Base(), filepath.FromSlash(e.Path)), e)
		if !ok {
			continue
		}
		e.Digest = d
		es, srcs = append(es, e), append(srcs, src)
	}
	if len(es) == 0 {
		return nil
	}
	sb, err := t.stateBase()
	if err != nil {
		return err
	}
	unlock, err := sb.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := orig.AddAll(originals.KindAtOpen, t.ID(), es, srcs); err != nil {
		return fmt.Errorf("checkpoint %s: keep the base's bytes at open in %s: %w", t.ID(), orig.Dir(), err)
	}
	return nil
}

// copyAtOpen copies the base file e (at abs) into dir, durably, and
// returns the copy and its digest, or ok false when the base file is not
// the one e measured, before or after the copy.
func copyAtOpen(root *safefs.Root, dir, abs string, e manifest.Entry) (src, digest string, ok bool) {
	in, err := changeset.OpenOriginal(root, e)
	if err != nil {
		return "", "", false
	}
	defer in.Close()
	out, err := os.CreateTemp(dir, "at-open-*")
	if err != nil {
		return "", "", false
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), io.LimitReader(in, e.Size+1))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", "", false
	}
	now, err := manifest.Lstat(abs)
	if err != nil || !manifest.SameStat(now, e) {
		return "", "", false
	}
	return out.Name(), manifest.Sum(h), true
}

// keepCheckpointed freezes the files of set from the staged workspace
// and keeps their bytes in the base's content store, each recorded as
// this transaction's checkpoint content (kept while it is open). It holds
// the base's lock while it adds them: gc prunes the store under it.
func (t *Tx) keepCheckpointed(ctx context.Context, orig *originals.Store, set *changeset.Set) error {
	objects := t.st.Path(checkpointObjectsDir)
	// What a checkpoint killed midway left: nothing names it.
	if err := os.RemoveAll(objects); err != nil {
		return fmt.Errorf("checkpoint %s: %w", t.ID(), err)
	}
	defer os.RemoveAll(objects)
	// Freeze's progress says "committing": no meter, rather than a wrong
	// word on the terminal.
	if err := changeset.Freeze(progress.With(ctx, nil), set, t.Path(), objects); err != nil {
		var sc *changeset.StagedChangedError
		if errors.As(err, &sc) {
			return fmt.Errorf("checkpoint %s: %s changed while checkpointing (a process is still writing in the staged workspace): nothing was recorded; checkpoint again once it has stopped: %w", t.ID(), sc.Path, err)
		}
		return fmt.Errorf("checkpoint %s: %w", t.ID(), err)
	}
	sb, err := t.stateBase()
	if err != nil {
		return err
	}
	unlock, err := sb.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	es := make([]manifest.Entry, len(set.Changes))
	srcs := make([]string, len(set.Changes))
	for i, c := range set.Changes {
		es[i], srcs[i] = c.Result, changeset.ObjectPath(objects, c.Result.Digest)
		es[i].Path = c.Path
	}
	if err := orig.AddAll(originals.KindCheckpoint, t.ID(), es, srcs); err != nil {
		return fmt.Errorf("checkpoint %s: keep its files' bytes in %s: %w", t.ID(), orig.Dir(), err)
	}
	return nil
}
