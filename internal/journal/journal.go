package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/airlockdev/airlock/internal/fanout"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/filecopy"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/progress"
	"github.com/airlockdev/airlock/internal/safefs"
)

// Op is one planned operation: make Path go from Before to After. A Kind of
// none on either side means absent. Before.Digest and Backup are filled by
// Prepare; After.Digest names the frozen object holding a file's new bytes.
type Op struct {
	Path   string
	Before manifest.Entry
	After  manifest.Entry
	Backup string // backup file name for a regular file Before
}

type opJSON struct {
	Path   manifest.Bytes `json:"path"`
	Before manifest.Entry `json:"before"`
	After  manifest.Entry `json:"after"`
	Backup string         `json:"backup,omitempty"`
}

// MarshalJSON encodes o as json.Marshal encodes its on-disk form (opJSON),
// written directly (manifest.Entry.AppendJSON).
func (o Op) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 256+2*len(o.Path))
	b = append(b, `{"path":`...)
	b = manifest.Bytes(o.Path).AppendJSON(b)
	b = append(b, `,"before":`...)
	b = o.Before.AppendJSON(b)
	b = append(b, `,"after":`...)
	b = o.After.AppendJSON(b)
	if o.Backup != "" {
		b = append(b, `,"backup":`...)
		b = manifest.AppendJSONString(b, o.Backup)
	}
	return append(b, '}'), nil
}

func (o *Op) UnmarshalJSON(b []byte) error {
	var j opJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*o = Op{string(j.Path), j.Before, j.After, j.Backup}
	return nil
}

// Journal is the durable plan of one apply.
type Journal struct {
	Version int            `json:"version"`
	TxID    string         `json:"tx"`
	Base    manifest.Bytes `json:"base"`
	Ops     []Op           `json:"ops"`
	Digest  string         `json:"digest"`

	// dir is the journal's directory, for a journal Prepare wrote: where
	// the apply records which original entries it let go (see released).
	dir string
}

const (
	fileName  = "journal.json"
	backupDir = "backup"
)

// DriftError reports a path that changed between the commit's checks and
// its backup: the commit must refuse rather than overwrite it.
type DriftError struct{ Path string }

func (e *DriftError) Error() string {
	return fmt.Sprintf("%s changed in the base while airlock prepared the commit", e.Path)
}

// EscapeError reports a path that can no longer be reached without crossing
// a symlink (a directory on its way was swapped for one): the commit must
// refuse, never write through it.
type EscapeError struct {
	Path string
	Err  error
}

func (e *EscapeError) Error() string {
	return fmt.Sprintf("%s is now reached through a symlink: %v", e.Path, e.Err)
}

func (e *EscapeError) Unwrap() error { return e.Err }

// escaped reports whether err is safefs refusing a symlink or an escape.
func escaped(err error) bool {
	return errors.Is(err, safefs.ErrSymlink) || errors.Is(err, safefs.ErrEscape)
}

func (j *Journal) digest() (string, error) {
	c := *j
	c.Digest = ""
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return manifest.HashBytes(b), nil
}

// unsealedEnd ends the encoding of a journal whose Digest is empty: the
// digest is its last member.
const unsealedEnd = `"digest":""}`

// seal sets j's digest and returns j encoded, as json.Marshal(j) would,
// from one encoding instead of two: the digest covers the encoding with
// an empty digest, which differs from the sealed one only in that last
// member's value (a digest needs no escaping).
func (j *Journal) seal() ([]byte, error) {
	j.Digest = ""
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutSuffix(b, []byte(unsealedEnd))
	if !ok {
		return nil, fmt.Errorf("encode journal: the digest is not its last member")
	}
	j.Digest = manifest.HashBytes(b)
	return append(rest, `"digest":"`+j.Digest+`"}`...), nil
}

// TempPrefix starts the name of every temporary entry an apply or restore
// of the transaction creates in the base, so that restore can find and
// remove leftovers of a killed process.
func TempPrefix(txID string) string { return ".airlock-" + txID + "-" }

// Prepare writes the journal for ops into dir (created; it must not exist):
// it checks that each path is still as the caller's checks saw it (Before:
// its stat facts, and its bytes where Before carries a digest),
// backs up every regular file that will be overwritten or removed, and
// fsyncs the backups, the journal and dir before returning. Nothing in the
// base is modified.
func Prepare(ctx context.Context, root *safefs.Root, dir, txID string, ops []Op) (*Journal, error) {
	sort.Slice(ops, func(a, b int) bool { return ops[a].Path < ops[b].Path })
	kinds := beforeKinds(ops)
	bdir := filepath.Join(dir, backupDir)
	if err := os.MkdirAll(bdir, 0o700); err != nil {
		return nil, fmt.Errorf("create journal %s: %w", dir, err)
	}
	// Where one flush of the state's file system stands for an fsync of
	// each backup and of their directory, the backups are written without
	// one and flushed together below, before the journal that names them.
	var fss *safefs.FSSync
	if backups(ops) >= safefs.FSSyncMin {
		var err error
		if fss, err = safefs.OpenFSSync(bdir); err != nil {
			return nil, err
		}
		defer fss.Close()
	}
	for i := range ops {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		op := &ops[i]
		cur, err := measureIn(root, op.Path, kinds)
		if escaped(err) {
			return nil, &EscapeError{Path: op.Path, Err: err}
		}
		if err != nil {
			return nil, err
		}
		if !sameBefore(cur, op.Before) {
			return nil, &DriftError{Path: op.Path}
		}
		if op.Before.Kind != manifest.KindFile {
			continue
		}
		op.Backup = fmt.Sprintf("%06d", i)
		d, err := backup(ctx, root, op, filepath.Join(bdir, op.Backup), fss == nil)
		if err != nil {
			return nil, err
		}
		// Where the checks compared bytes (stat could not tell them from
		// an edit in the same timestamp step), the backup must be those.
		if op.Before.Digest != "" && d != op.Before.Digest {
			return nil, &DriftError{Path: op.Path}
		}
		op.Before.Digest = d
	}
	if fss != nil {
		if err := fss.Sync(); err != nil {
			return nil, fmt.Errorf("back up for the journal %s: %w", dir, err)
		}
	} else if err := safefs.SyncDir(bdir); err != nil {
		return nil, err
	}
	j := &Journal{Version: 1, TxID: txID, Base: manifest.Bytes(root.Path()), Ops: ops, dir: dir}
	b, err := j.seal()
	if err != nil {
		return nil, err
	}
	if err := safefs.WriteFile(filepath.Join(dir, fileName), b, 0o600); err != nil {
		return nil, err
	}
	return j, safefs.SyncDir(filepath.Dir(dir))
}

// backups counts the operations whose before entry Prepare backs up.
func backups(ops []Op) int {
	n := 0
	for _, op := range ops {
		if op.Before.Kind == manifest.KindFile {
			n++
		}
	}
	return n
}

// sameBefore compares what is in the base now with what the checks saw. The
// Path and Digest fields are not stat facts.
func sameBefore(cur, want manifest.Entry) bool {
	if want.Kind == manifest.KindNone || cur.Kind == manifest.KindNone {
		return want.Kind == cur.Kind
	}
	return manifest.SameStat(cur, want)
}

// Shadowed reports whether rel lies beneath a path that kinds holds as a
// symlink or a file: before an apply, one the plan replaces by a
// directory; after it, one the plan made of a directory. Such a path cannot
// exist at that moment, and measuring it runs into that symlink; it is
// absent by construction, not an escape.
func Shadowed(rel string, before map[string]manifest.Kind) bool {
	for p := parent(rel); p != ""; p = parent(p) {
		if k, ok := before[p]; ok && (k == manifest.KindSymlink || k == manifest.KindFile) {
			return true
		}
	}
	return false
}

func beforeKinds(ops []Op) map[string]manifest.Kind {
	m := make(map[string]manifest.Kind, len(ops))
	for _, op := range ops {
		m[op.Path] = op.Before.Kind
	}
	return m
}

// measureIn is measure for a path of a plan: a path shadowed by a symlink
// the plan replaces reads as absent.
func measureIn(root *safefs.Root, rel string, before map[string]manifest.Kind) (manifest.Entry, error) {
	e, err := measure(root, rel)
	if escaped(err) && Shadowed(rel, before) {
		return manifest.Entry{Path: rel}, nil
	}
	return e, err
}

// measure lstats a base path through the traversal-safe layer; absent is an
// entry of Kind none.
func measure(root *safefs.Root, rel string) (manifest.Entry, error) {
	info, err := root.Lstat(rel)
	// ENOTDIR: a parent is not a directory, as when the change set turns a
	// file into a directory with children; the path is absent.
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return manifest.Entry{Path: rel}, nil
	}
	if err != nil {
		return manifest.Entry{}, err
	}
	e := entryOf(info)
	e.Path = rel
	if e.Kind == manifest.KindSymlink {
		t, err := root.Readlink(rel)
		if err != nil {
			return manifest.Entry{}, err
		}
		e.Target = t
	}
	return e, nil
}

func entryOf(i safefs.Info) manifest.Entry {
	e := manifest.Entry{Kind: manifest.KindOf(i.Mode), Mode: i.Mode & manifest.ModeMask, Size: i.Size,
		MtimeNs: i.MtimeNs, CtimeNs: i.CtimeNs, Ino: i.Ino, Dev: i.Dev}
	if e.Kind != manifest.KindFile {
		e.Size = 0
	}
	return e
}

// backup copies a base file's bytes to dst, holes kept, and returns their
// digest; with fsync it fsyncs them (else the caller flushes the backups'
// file system once they are all written). The source is re-checked after
// the copy: a file written meanwhile is drift.
func backup(ctx context.Context, root *safefs.Root, op *Op, dst string, fsync bool) (string, error) {
	src, err := root.Open(op.Path)
	if escaped(err) {
		return "", &EscapeError{Path: op.Path, Err: err}
	}
	if err != nil {
		return "", err
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("back up %s: %w", op.Path, err)
	}
	defer out.Close()
	d, err := copyHash(ctx, out, src)
	if err != nil {
		return "", fmt.Errorf("back up %s: %w", op.Path, err)
	}
	if fsync {
		if err := out.Sync(); err != nil {
			return "", fmt.Errorf("back up %s: fsync: %w", op.Path, err)
		}
	}
	after, err := measure(root, op.Path)
	if err != nil {
		return "", err
	}
	if !sameBefore(after, op.Before) {
		return "", &DriftError{Path: op.Path}
	}
	return d, nil
}

// copyHash copies src into dst, holes kept, and returns the digest of the
// bytes dst now holds.
func copyHash(ctx context.Context, dst, src *os.File) (string, error) {
	h := newHash()
	if _, err := filecopy.Copy(ctx, dst, src, filecopy.Options{Hash: h}); err != nil {
		return "", err
	}
	return manifest.Sum(h), nil
}

// hashOf returns the digest of f's content (its holes' zeros hashed from
// memory, not read).
func hashOf(f *os.File) (string, error) {
	h := newHash()
	if _, err := filecopy.Hash(context.Background(), h, f); err != nil {
		return "", err
	}
	return manifest.Sum(h), nil
}

// Load reads the journal in dir and refuses it unless its digest matches.
func Load(dir string) (*Journal, error) { return LoadFile(filepath.Join(dir, fileName)) }

// Path is the journal file in dir.
func Path(dir string) string { return filepath.Join(dir, fileName) }

// BackupPath is where Prepare kept the backup of op.
func BackupPath(dir string, op Op) string { return filepath.Join(dir, backupDir, op.Backup) }

// LoadFile reads a journal file (a live one, or a copy kept as the record
// of an apply) and refuses it unless its digest matches.
func LoadFile(p string) (*Journal, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return Decode(p, b)
}

// Decode parses the bytes b of the journal file p, read by the caller
// (through the state safety checks), and refuses them unless the digest
// matches.
func Decode(p string, b []byte) (*Journal, error) {
	var j Journal
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("corrupt journal %s: %w; it is not acted on", p, err)
	}
	d, err := j.digest()
	if err != nil {
		return nil, err
	}
	if j.Version != 1 || d != j.Digest {
		return nil, fmt.Errorf("journal %s does not match its digest: it was altered and is not acted on; restore the base by hand from %s", p, filepath.Join(filepath.Dir(p), backupDir))
	}
	for i, op := range j.Ops {
		if i > 0 && j.Ops[i-1].Path >= op.Path {
			return nil, fmt.Errorf("corrupt journal %s: operations out of order at %q", p, op.Path)
		}
		// A journal is trusted only for paths beneath its base: one that
		// names anything else was not written by airlock, whatever its
		// digest says.
		if err := safefs.CheckRel(op.Path); err != nil {
			return nil, fmt.Errorf("corrupt journal %s: operation on %q: %w; it is not acted on", p, op.Path, err)
		}
	}
	return &j, nil
}

// Exists reports whether dir holds a journal.
func Exists(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, fileName))
	return err == nil
}

// Retire removes a journal whose apply is finished or undone. The journal
// file goes first so a crash half-way through leaves no journal that names
// missing backups.
func Retire(dir string) error {
	if err := os.Remove(filepath.Join(dir, fileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("retire journal: %w", err)
	}
	if err := safefs.SyncDir(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

func parent(rel string) string {
	d := path.Dir(rel)
	if d == "." {
		return ""
	}
	return d
}

// opName is the temporary name, beside its path, of operation i: where an
// apply or restore writes the new entry, and where the entry it replaces
// is kept until it has been examined. A name per operation lets a restore
// tell, after a crash, which path a leftover belongs to.
func opName(txID string, i int, rel string) string {
	return path.Join(parent(rel), TempPrefix(txID)+"op"+strconv.Itoa(i))
}

// asideSuffix marks the entry a replace moved aside where the file system
// cannot exchange two names.
const asideSuffix = "-old"

// ApplyResult says what an apply did beyond the plan.
type ApplyResult struct {
	// Done lists the paths the apply changed, in order, also when it
	// failed part-way: a rollback needs to restore only those.
	Done []string
	// Kept lists directories the change set deleted that still hold paths
	// the transaction never knew about: they are kept, never destroyed.
	Kept []string
}

// Apply carries out a prepared journal. objects is the frozen change set's
// object store. On error the base may be partly changed: the caller must
// Restore. Fault points: "apply:N" after N operations.
//
// Where the objects can be moved into the base instead of copied (see
// mover), each object becomes the new file of one operation and is gone
// from the store.
func Apply(ctx context.Context, root *safefs.Root, j *Journal, objects string) (*ApplyResult, error) {
	mv := newMover(root, objects)
	defer mv.close()
	return apply(ctx, root, j, objectOpener(objects), true, mv)
}

// objectOpener opens frozen content by digest in an objects directory.
func objectOpener(objects string) func(string) (*os.File, error) {
	return func(d string) (*os.File, error) {
		return os.Open(filepath.Join(objects, strings.TrimPrefix(d, manifest.DigestPrefix)))
	}
}

// ApplyFrom carries out ops in a tree that is not the base (a staged
// workspace being prepared by undo), reading each file's content by digest
// through open. No journal, no fault points.
func ApplyFrom(root *safefs.Root, txID string, ops []Op, open func(digest string) (*os.File, error)) error {
	_, err := apply(context.Background(), root, &Journal{TxID: txID, Ops: ops}, open, false, nil)
	return err
}

// ApplyScratch carries out ops in a throw-away tree (a validation
// candidate): the same operations, no journal, no fault points.
func ApplyScratch(ctx context.Context, root *safefs.Root, txID string, ops []Op, objects string) (*ApplyResult, error) {
	sorted := append([]Op(nil), ops...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].Path < sorted[b].Path })
	return apply(ctx, root, &Journal{TxID: txID, Ops: sorted}, objectOpener(objects), false, nil)
}

// apply carries out j's operations in root: removals deepest first,
// creations and rewrites shallowest first, directory modes last; then it
// verifies the tree. onBase says root is the base (guards, fault points,
// progress and entries moved aside rather than removed); otherwise it is
// a tree of airlock's own.
func apply(ctx context.Context, root *safefs.Root, j *Journal, open func(string) (*os.File, error), onBase bool, mv *mover) (*ApplyResult, error) {
	a := &applier{ctx: ctx, root: root, j: j, onBase: onBase, mv: mv, res: &ApplyResult{},
		pl: &placer{onBase: onBase, aside: map[int]string{}}, kept: map[string]bool{},
		touched: map[string]bool{}, kinds: beforeKinds(j.Ops)}
	if len(j.Ops) >= safefs.FSSyncMin {
		// Opened before the first write, so that a write-back of any of
		// them that fails is reported to its flush.
		fss, err := root.FSSync()
		if err != nil {
			return a.res, err
		}
		defer fss.Close()
		a.fss = fss
	}
	if onBase {
		var bytes int64
		for _, op := range j.Ops {
			bytes += op.After.Size
		}
		a.meter = progress.Start(ctx, "applying", len(j.Ops), bytes)
		defer a.meter.Done()
	}
	if err := a.removals(); err != nil {
		return a.res, err
	}
	if err := a.creations(open); err != nil {
		return a.res, err
	}
	for i := len(j.Ops) - 1; i >= 0; i-- {
		op := &j.Ops[i]
		if op.After.Kind == manifest.KindDir {
			if err := root.Chmod(op.Path, op.After.Mode); err != nil {
				return a.res, err
			}
		}
	}
	if err := verify(root, j, a.kept); err != nil {
		return a.res, err
	}
	if onBase {
		// As late as it can be: whatever a writer completed on a
		// replaced file up to here is seen, and refuses the commit.
		if err := settleAside(root, j, a.pl.aside, ""); err != nil {
			return a.res, err
		}
	}
	return a.res, syncTouched(root, a.fss, a.touched)
}

// applier is one apply in progress.
type applier struct {
	ctx    context.Context
	root   *safefs.Root
	j      *Journal
	onBase bool
	res    *ApplyResult
	pl     *placer
	kinds  map[string]manifest.Kind // each journaled path's kind before
	meter  *progress.Task           // nil off the base
	mv     *mover                   // moves objects into the base; nil: copy them

	// fss, where one flush of the tree's file system stands for fsyncs,
	// makes the apply durable at its two ordering points: the new
	// entries before any is renamed into place, and everything before
	// the apply returns. Without it each new file and every touched
	// directory is fsync'd on its own.
	fss     *safefs.FSSync
	kept    map[string]bool // directories left for what others added to them
	touched map[string]bool // directories whose entries changed: synced at the end
	steps   int             // operations done (fault point "apply:N")
	guards  int             // re-checks done (fault point "guard:N")
}

// step records op as done.
func (a *applier) step(op *Op) {
	a.res.Done = append(a.res.Done, op.Path)
	a.meter.Add(1, op.After.Size)
	a.steps++
	if a.onBase {
		fault.Count("apply", a.steps)
	}
}

// guard re-checks, right before a path of the base is overwritten or
// removed, that it is still what Prepare checked and backed up: an edit
// made since (an editor saving the file) must refuse the commit, not
// vanish under it.
func (a *applier) guard(op *Op) error {
	if !a.onBase {
		return nil
	}
	cur, err := measureIn(a.root, op.Path, a.kinds)
	if err != nil {
		return err
	}
	if !stillBefore(cur, op.Before) {
		return &DriftError{Path: op.Path}
	}
	// Fault point "guard:N": after the N-th re-check, before that path is
	// replaced; the window settleAside closes.
	a.guards++
	fault.Count("guard", a.guards)
	return nil
}

// removals carries out, deepest first, the deletions and the changes of
// kind that involve a directory (a file cannot be renamed over a
// directory, nor the reverse).
func (a *applier) removals() error {
	for i := len(a.j.Ops) - 1; i >= 0; i-- {
		if err := a.ctx.Err(); err != nil {
			return err
		}
		op := &a.j.Ops[i]
		if !needsRemoval(op) {
			continue
		}
		if err := a.guard(op); err != nil {
			return err
		}
		removed, err := a.remove(i)
		if err != nil {
			return err
		}
		if removed {
			a.touched[parent(op.Path)] = true
			a.step(op)
		}
	}
	return nil
}

// remove takes operation i's before entry away, and reports whether it
// did: a directory someone added to stays, when the operation deletes it.
func (a *applier) remove(i int) (bool, error) {
	op := &a.j.Ops[i]
	switch {
	case op.Before.Kind == manifest.KindDir:
		// What the deletions moved aside inside it is settled first: the
		// directory must be empty to go.
		if err := settleAside(a.root, a.j, a.pl.aside, op.Path); err != nil {
			return false, err
		}
		err := a.root.RemoveDir(op.Path)
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			if op.After.Kind != manifest.KindNone {
				// Someone added to the directory since open: that is
				// drift of the path, and what they added stays.
				return false, &DriftError{Path: op.Path}
			}
			a.kept[op.Path] = true
			a.res.Kept = append([]string{op.Path}, a.res.Kept...)
			return false, nil
		}
		return err == nil, err
	case a.onBase:
		// Moved aside, never unlinked here: an edit that reaches the file
		// after the guard lives on in it until settleAside examines it.
		aside := opName(a.j.TxID, i, op.Path)
		if err := a.root.Rename(op.Path, aside); err != nil {
			return false, err
		}
		a.pl.aside[i] = aside
		return true, nil
	default:
		err := a.root.Remove(op.Path)
		return err == nil, err
	}
}

// creations carries out the creations and rewrites, shallowest first, in
// two passes with one ordering point between them. The first makes every
// new directory (owner-writable, so that its children can be created;
// final modes are set last, deepest first) and writes every new file and
// symlink under its temporary name beside its path. Then those are made
// durable together, and only then does the second pass put each new entry
// at its path: no name of the base points at bytes that a power cut could
// still lose.
func (a *applier) creations(open func(string) (*os.File, error)) error {
	inPlace := map[int]bool{} // changes of mode alone, decided once
	var files []int           // the new files, written once every directory is made
	for i := range a.j.Ops {
		if err := a.ctx.Err(); err != nil {
			return err
		}
		op := &a.j.Ops[i]
		if op.After.Kind == manifest.KindNone {
			continue
		}
		if op.After.Kind == manifest.KindDir {
			if op.Before.Kind == manifest.KindDir {
				if err := a.guard(op); err != nil {
					return err
				}
			}
			if err := makeDir(a.root, op, a.pl); err != nil {
				return err
			}
			a.touched[parent(op.Path)] = true
			a.touched[op.Path] = true
			a.step(op)
			continue
		}
		if op.After.Kind == manifest.KindFile && modeOnly(a.root, op) {
			inPlace[i] = true
			continue
		}
		if op.After.Kind == manifest.KindFile {
			files = append(files, i)
			continue
		}
		if err := stageNew(a.root, a.j, i, open, a.fss == nil); err != nil {
			return err
		}
	}
	// The new files are independent of one another: written on several
	// goroutines, each under its own temporary name. Those whose objects
	// move into the base go last: a copy of the same bytes for another
	// path reads the object first.
	copies, moves := a.byMoving(files)
	passes := []struct {
		ops []int
		do  func(i int) error
	}{
		{copies, func(i int) error { return stageNew(a.root, a.j, i, open, a.fss == nil) }},
		{moves, func(i int) error { return a.mv.moveNew(a.root, a.j, i) }},
	}
	for _, p := range passes {
		err := fanout.Each(len(p.ops), func(k int) error {
			if err := a.ctx.Err(); err != nil {
				return err
			}
			return p.do(p.ops[k])
		})
		if err != nil {
			return err
		}
	}
	if len(files) > 0 && a.fss != nil {
		if err := a.fss.Sync(); err != nil {
			return err
		}
	}
	// Fault point "apply-staged": every new entry written and durable
	// under its temporary name, none at its path yet.
	if a.onBase {
		fault.Point("apply-staged")
	}
	for i := range a.j.Ops {
		op := &a.j.Ops[i]
		if op.After.Kind == manifest.KindNone || op.After.Kind == manifest.KindDir {
			continue
		}
		if op.Before.Kind != manifest.KindNone && !needsRemoval(op) {
			if err := a.guard(op); err != nil {
				return err
			}
		}
		if err := placeNew(a.root, a.j, i, a.pl, inPlace[i], a.fss == nil); err != nil {
			return err
		}
		a.touched[parent(op.Path)] = true
		a.step(op)
	}
	return nil
}

// byMoving splits the new files into those copied from their objects and
// those whose objects move into the base: one per object, where the apply
// batches its durability (fss) and the file's directory adopts a moved
// file as its own (mover.into).
func (a *applier) byMoving(files []int) (copies, moves []int) {
	if a.mv == nil || a.fss == nil {
		return files, nil
	}
	taken := map[string]bool{}
	for _, i := range files {
		op := &a.j.Ops[i]
		if taken[op.After.Digest] || !a.mv.into(a.root, parent(op.Path)) {
			copies = append(copies, i)
			continue
		}
		taken[op.After.Digest] = true
		moves = append(moves, i)
	}
	return copies, moves
}

// stillBefore compares a path now with the state Prepare saw. A directory
// is the same while it is the same directory with the same mode: its times
// move with every entry the apply itself adds or removes inside it.
func stillBefore(cur, before manifest.Entry) bool {
	if cur.Kind == manifest.KindDir && before.Kind == manifest.KindDir {
		return cur.Mode == before.Mode && cur.Ino == before.Ino && cur.Dev == before.Dev
	}
	return sameBefore(cur, before)
}

func needsRemoval(op *Op) bool {
	b, a := op.Before.Kind, op.After.Kind
	if b == manifest.KindNone {
		return false
	}
	return a == manifest.KindNone || (b != a && (b == manifest.KindDir || a == manifest.KindDir))
}

// placer puts new entries into the tree. On the base it never lets an
// entry go unseen: what a new entry replaces, or a deletion removes, is
// kept aside under the operation's temporary name (aside, by operation
// index) until settleAside has checked it against the journal.
type placer struct {
	onBase bool
	aside  map[int]string
}

// makeDir makes op's path the directory its After names, unless it is
// one already (its mode is set with the other directories').
func makeDir(root *safefs.Root, op *Op, pl *placer) error {
	if op.Before.Kind == manifest.KindDir {
		return nil
	}
	err := root.Mkdir(op.Path, 0o700)
	if errors.Is(err, fs.ErrExist) && pl.onBase {
		return &DriftError{Path: op.Path} // someone made it meanwhile
	}
	return err
}

// modeOnly reports whether op i only changes the mode of a file, which
// then keeps its inode: no bytes to rewrite. A file with other hard links
// is rewritten instead: a chmod of the shared inode would change them
// too, and they may lie outside the base.
func modeOnly(root *safefs.Root, op *Op) bool {
	return op.Before.Kind == manifest.KindFile && op.After.Kind == manifest.KindFile &&
		op.Before.Digest == op.After.Digest && op.After.Digest != "" && singleLink(root, op.Path)
}

// stageNew writes op i's new file or symlink under its temporary name;
// with fsync, it fsyncs the file.
func stageNew(root *safefs.Root, j *Journal, i int, open func(string) (*os.File, error), fsync bool) error {
	op := &j.Ops[i]
	tmp := opName(j.TxID, i, op.Path)
	switch op.After.Kind {
	case manifest.KindSymlink:
		return root.Symlink(op.After.Target, tmp)
	case manifest.KindFile:
		src, err := open(op.After.Digest)
		if err != nil {
			return fmt.Errorf("read frozen content of %s: %w", op.Path, err)
		}
		defer src.Close()
		return writeTemp(root, tmp, op.Path, src, op.After, fsync)
	}
	return fmt.Errorf("%s: cannot create an entry of kind %s", op.Path, op.After.Kind)
}

// placeNew makes op i's path hold the file or symlink stageNew wrote, or,
// for a change of mode alone (inPlace), sets the mode in place. With
// fsync, that mode is fsync'd at once: it lives in the file's inode, which
// no directory fsync writes, and a power cut after `committed` could lose
// it. Without, the apply's last flush of the file system covers it.
func placeNew(root *safefs.Root, j *Journal, i int, pl *placer, inPlace, fsync bool) error {
	op := &j.Ops[i]
	if inPlace {
		if err := root.Chmod(op.Path, op.After.Mode); err != nil {
			return err
		}
		if !fsync {
			return nil
		}
		return syncFile(root, op.Path)
	}
	return pl.place(root, op, i, opName(j.TxID, i, op.Path))
}

// place moves the new entry at tmp to op.Path. Off the base it is a plain
// rename. On the base, a path that must be absent now (nothing was there,
// or the removals above took it away) is taken only if still absent: a
// file someone created there meanwhile is drift, never overwritten. A path
// that holds the file or symlink the journal backed up is exchanged with
// tmp in one step, and what it held stays at tmp for settleAside.
func (pl *placer) place(root *safefs.Root, op *Op, i int, tmp string) error {
	if !pl.onBase {
		return root.Rename(tmp, op.Path)
	}
	if op.Before.Kind == manifest.KindNone || needsRemoval(op) {
		err := root.RenameNoReplace(tmp, op.Path)
		if errors.Is(err, errors.ErrUnsupported) {
			err = root.Rename(tmp, op.Path)
		}
		if errors.Is(err, fs.ErrExist) {
			root.Remove(tmp)
			return &DriftError{Path: op.Path}
		}
		return err
	}
	aside, err := swapIn(root, tmp, op.Path)
	if err != nil {
		return err
	}
	if aside == "" {
		// The path vanished after the guard: someone deleted it. The
		// new entry goes back out (a restore's sweep removes it, or
		// keeps whatever else it finds there), and their deletion
		// stands.
		root.Rename(op.Path, tmp)
		return &DriftError{Path: op.Path}
	}
	pl.aside[i] = aside
	return nil
}

// swapIn makes the entry at tmp appear at rel and returns where the entry
// rel held now is ("" if rel was absent): at tmp itself, exchanged
// atomically, so that a reader of rel sees the old entry or the new one and
// nothing in between. Where the file system cannot exchange, the old entry
// is first renamed aside to tmp+"-old"; a reader then finds rel missing for
// the moment between the two renames.
func swapIn(root *safefs.Root, tmp, rel string) (string, error) {
	err := root.Exchange(tmp, rel)
	if err == nil {
		return tmp, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := root.Lstat(tmp); lerr == nil {
			err = root.RenameNoReplace(tmp, rel)
			if errors.Is(err, errors.ErrUnsupported) {
				err = root.Rename(tmp, rel)
			}
			return "", err
		}
		return "", err
	}
	if !errors.Is(err, errors.ErrUnsupported) {
		return "", err
	}
	aside := tmp + asideSuffix
	if err := root.Rename(rel, aside); errors.Is(err, fs.ErrNotExist) {
		return "", root.Rename(tmp, rel)
	} else if err != nil {
		return "", err
	}
	return aside, root.Rename(tmp, rel)
}

// singleLink reports whether the base file at rel is its inode's only name.
func singleLink(root *safefs.Root, rel string) bool {
	info, err := root.Lstat(rel)
	return err == nil && info.Nlink == 1
}

// writeTemp writes src to the new file tmp (beside rel, named for its
// operation), holes kept, checks its digest against want, sets mode and
// mtime and, with fsync, fsyncs it: the new entry is on disk before any
// name of the base points at it. Without, the caller flushes the file
// system before it renames the file into place.
func writeTemp(root *safefs.Root, tmp, rel string, src *os.File, want manifest.Entry, fsync bool) error {
	f, err := root.CreateExcl(tmp)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		f.Close()
		if !ok {
			root.Remove(tmp)
		}
	}()
	shown := filepath.Join(root.Path(), rel)
	// Not cancelled half-way: an apply or a restore that has begun runs
	// to its end.
	d, err := copyHash(context.Background(), f, src)
	if err != nil {
		return fmt.Errorf("write %s: %w", shown, err)
	}
	if d != want.Digest {
		return fmt.Errorf("write %s: content digest %s does not match the recorded %s; the transaction's state was altered", shown, d, want.Digest)
	}
	if err := f.Chmod(want.Mode); err != nil {
		return fmt.Errorf("write %s: %w", shown, err)
	}
	// The times are set before the fsync, so that it makes them durable
	// together with the bytes and the mode.
	if want.MtimeNs != 0 {
		if err := root.Chtimes(tmp, want.MtimeNs); err != nil {
			return err
		}
	}
	if fsync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("write %s: fsync: %w", shown, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", shown, err)
	}
	ok = true
	return nil
}

// syncFile makes a change to rel's inode durable. A file whose new mode
// denies its owner reading cannot be opened to be fsync'd by a user other
// than root: the whole file system is synced then, slower but as durable.
func syncFile(root *safefs.Root, rel string) error {
	err := root.SyncFile(rel)
	if errors.Is(err, fs.ErrPermission) {
		syscall.Sync()
		return nil
	}
	return err
}

// syncTouched makes durable what an apply or restore changed: with fss,
// in one flush of the tree's file system; without, by an fsync of every
// directory whose entries changed.
func syncTouched(root *safefs.Root, fss *safefs.FSSync, dirs map[string]bool) error {
	if fss != nil {
		return fss.Sync()
	}
	return syncDirs(root, dirs)
}

func syncDirs(root *safefs.Root, dirs map[string]bool) error {
	list := make([]string, 0, len(dirs))
	for d := range dirs {
		list = append(list, d)
	}
	sort.Strings(list)
	for _, d := range list {
		err := root.SyncDir(d)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, safefs.ErrSymlink) {
			// Removed, or replaced by a non-directory (a symlink too),
			// later in the same apply; its parent is synced.
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// verify checks that every path now holds what the journal planned.
func verify(root *safefs.Root, j *Journal, kept map[string]bool) error {
	after := make(map[string]manifest.Kind, len(j.Ops))
	for _, op := range j.Ops {
		after[op.Path] = op.After.Kind
	}
	// Each path is read on its own: on several goroutines.
	return fanout.Each(len(j.Ops), func(i int) error {
		op := &j.Ops[i]
		if kept[op.Path] {
			return nil
		}
		if op.After.Kind == manifest.KindNone && Shadowed(op.Path, after) {
			return nil // beneath what is now a symlink or file: absent by construction
		}
		if err := matches(root, op.Path, op.After); errors.Is(err, errMismatch) {
			// What the apply just wrote is not there: another process
			// changed the path meanwhile.
			return &DriftError{Path: op.Path}
		} else if err != nil {
			return fmt.Errorf("verify %s after apply: %w", filepath.Join(root.Path(), op.Path), err)
		}
		return nil
	})
}

// Matches reports, as an error saying how, whether a path under root
// differs from an entry by kind, mode, symlink target or content digest.
func Matches(root *safefs.Root, rel string, want manifest.Entry) error {
	return matches(root, rel, want)
}

// matches checks a base path against an entry by kind, mode, symlink target
// and, for files, content digest.
func matches(root *safefs.Root, rel string, want manifest.Entry) error {
	if want.Kind == manifest.KindFile && want.Digest != "" {
		// The common case in one look: the regular file opened, its
		// facts those of the very file read. Anything else is told
		// apart below.
		if f, info, err := root.OpenRegular(rel); err == nil {
			defer f.Close()
			return fileMatches(f, info, want)
		}
	}
	cur, err := measure(root, rel)
	if err != nil {
		return err
	}
	if cur.Kind != want.Kind {
		return mismatch("is %s, want %s", cur.Kind, want.Kind)
	}
	switch want.Kind {
	case manifest.KindNone:
		return nil
	case manifest.KindSymlink:
		if cur.Target != want.Target {
			return mismatch("links to %q, want %q", cur.Target, want.Target)
		}
		return nil
	}
	if cur.Mode != want.Mode {
		return mismatch("mode %v, want %v", cur.Mode, want.Mode)
	}
	if want.Kind == manifest.KindFile && want.Digest != "" {
		f, err := root.Open(rel)
		if err != nil {
			return err
		}
		defer f.Close()
		d, err := hashOf(f)
		if err != nil {
			return err
		}
		if d != want.Digest {
			return mismatch("content %s, want %s", d, want.Digest)
		}
	}
	return nil
}

// fileMatches checks the opened regular file f, with the facts info, by
// mode and content digest.
func fileMatches(f *os.File, info safefs.Info, want manifest.Entry) error {
	if mode := info.Mode & manifest.ModeMask; mode != want.Mode {
		return mismatch("mode %v, want %v", mode, want.Mode)
	}
	d, err := hashOf(f)
	if err != nil {
		return err
	}
	if d != want.Digest {
		return mismatch("content %s, want %s", d, want.Digest)
	}
	return nil
}

// errMismatch marks a path that could be read and holds something else
// than the entry it was compared with; any other error of matches is one
// of reading it.
var errMismatch = errors.New("differs")

// mismatchError says how a path differs; it matches errMismatch.
type mismatchError struct{ msg string }

func (e *mismatchError) Error() string        { return e.msg }
func (e *mismatchError) Is(target error) bool { return target == errMismatch }

func mismatch(format string, args ...any) error {
	return &mismatchError{fmt.Sprintf(format, args...)}
}
