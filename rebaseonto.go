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
	"strings"
	"syscall"

	"github.com/airlockdev/airlock/internal/basecheck"
	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/merge"
	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/project"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/selector"
	"github.com/airlockdev/airlock/internal/stage"
)

// Rebased is what a rebase took in: each path the base changed since the
// transaction opened (or was last rebased), by how its staged tree took
// the change in. Its JSON form is part of airlock's interface
// (docs/json.md).
type Rebased struct {
	TxID string `json:"tx"`
	// Taken: the staged tree now holds the base's version, as the
	// transaction had not changed the path, or had changed it alike.
	Taken []Bytes `json:"taken"`
	// Merged: changed on both sides, the edits apart: the staged file is
	// the three-way merge.
	Merged []Bytes `json:"merged"`
	// Conflicts: changed on both sides with edits that overlap: the staged
	// file holds both between conflict markers, and a commit refuses
	// (Conflicted) while any marker line remains.
	Conflicts []Bytes `json:"conflicts"`
}

// conflictsFile records the paths a rebase left conflict markers in.
const conflictsFile = "conflicts.json"

type conflictsRecord struct {
	Paths []Bytes `json:"paths"`
}

// rebaseHow is how a rebase takes in one path the base changed.
type rebaseHow int

const (
	rebaseTake     rebaseHow = iota // untouched by the transaction: the base's version
	rebaseSame                      // the transaction made the very same change: nothing to write
	rebaseMerged                    // both changed it, apart: the merge
	rebaseConflict                  // both changed it, overlapping: the marked-up merge
)

// rebaseStep is one path a rebase takes in.
type rebaseStep struct {
	path string
	how  rebaseHow
	// open and now are the base's entries at open (nil: absent) and as
	// measured now (Kind none: absent); now.Digest is set for a file whose
	// bytes were read.
	open *manifest.Entry
	now  manifest.Entry
	// content and mode are what a file step writes in the staged tree.
	content []byte
	mode    fs.FileMode
	// ours is the staged file a merge read: it must still be that file
	// when the merge replaces it, or the command's later write would be
	// lost.
	ours safefs.Info
	// theirs is the base's content a merge took in (now): kept among the
	// originals, it is the ancestor of the next merge of the path, when
	// the base changes it again.
	theirs []byte
}

// Rebase moves the transaction onto the base as it is now. For each path
// the base changed since the transaction opened (or was last rebased):
// one the transaction did not change takes the base's version; one both
// changed alike needs nothing; a regular text file both changed is three-way
// merged with the base's version at open as the ancestor (the original an
// airlock commit kept, or in a git repository HEAD's blob), and where the
// edits overlap it holds both between git-style conflict markers (see
// merge.Marked), recorded so that a commit refuses (Conflicted) until
// they are resolved. Then the transaction's manifest of the base becomes
// the base as measured, so that a commit sees no drift for what the
// rebase took in.
//
// It is exact and fail-closed: it runs under the transaction's lock and
// the base's, and refuses (a *Refusal of kind BaseDrift, leaving the
// transaction as it was) where both sides changed a path in a way it
// cannot merge or mark (binary or oversized content, a file against a
// directory or a deletion, no known ancestor), and where the base moves
// again between its measurement and its record.
//
// A transaction staged by overlay, whose staged tree reads through to the
// live base, is not rebased: its untouched paths already follow the base.
func (t *Tx) Rebase(ctx context.Context) (_ *Rebased, err error) {
	defer exported(&err)
	unlockTx, err := t.settleLock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockTx()
	if err := t.finishParts(ctx); err != nil {
		return nil, err
	}
	status, err := t.Status()
	if err != nil {
		return nil, err
	}
	switch status {
	case StatusOpen, StatusRefused:
	case StatusInterrupted:
		return nil, interrupted(t.Base(), t.ID())
	default:
		return nil, fmt.Errorf("rebase %s: the transaction is %s; only an open or refused one can be rebased", t.ID(), status)
	}
	if b, err := stage.Get(t.rec.Backend); err == nil {
		if _, ok := b.(stage.Differ); ok {
			return nil, fmt.Errorf("rebase %s: its staged workspace (backend %s) reads through to the live base, so it follows the base already; a commit merges what both changed", t.ID(), t.rec.Backend)
		}
	}
	sb, err := t.stateBase()
	if err != nil {
		return nil, err
	}
	if err := t.checkBaseState(sb); err != nil {
		return nil, err
	}
	// The base's lock keeps airlock's own commits out while the rebase
	// reads it; other writers are caught by the measurement's recheck.
	unlockBase, err := sb.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockBase()
	root, r, err := t.openBase(t.Base())
	if err != nil {
		return nil, err
	}
	if r != nil {
		return nil, r
	}
	defer root.Close()
	staged, err := safefs.OpenRootNoFollow(t.Path())
	if err != nil {
		return nil, fmt.Errorf("rebase %s: open the staged workspace %s: %w", t.ID(), t.Path(), err)
	}
	defer staged.Close()

	t.opened = nil
	steps, refusal, err := t.planRebase(ctx, root, staged)
	if err != nil || refusal != nil {
		if refusal != nil {
			err = refusal
		}
		return nil, err
	}
	// A test changes the base here: what the rebase read must still be
	// the base when it records it.
	fault.Point("rebase-measured")
	var moved []string
	for _, s := range steps {
		cur, err := basecheck.Measure(root, s.path)
		if err != nil {
			return nil, err
		}
		if !basecheck.Unchanged(cur, s.now) {
			moved = append(moved, s.path)
		}
	}
	if len(moved) > 0 {
		return nil, refuse(BaseDrift, moved, "changed in the base again while the rebase read it; the transaction is as it was: rebase again")
	}
	// A path the transaction had not changed takes the base's version;
	// one written in the staged workspace since the plan read it (an
	// agent working there, which airlock does not contain) is the
	// transaction's now, and taking the base's would lose that write.
	openStaged, err := t.loadManifest(stagedOpenFile)
	if err != nil {
		return nil, err
	}
	var written []string
	for _, s := range steps {
		if s.how == rebaseTake && !stillUntouched(staged, s.path, openStaged) {
			written = append(written, s.path)
		}
	}
	if len(written) > 0 {
		return nil, fmt.Errorf("rebase %s: %s changed in the staged workspace %s while the rebase read it (a command still writing there?); nothing was rebased: stop it and rebase again", t.ID(), quotePaths(written, 10), t.Path())
	}
	out := &Rebased{TxID: t.ID(), Taken: []Bytes{}, Merged: []Bytes{}, Conflicts: []Bytes{}}
	if len(steps) == 0 {
		return out, nil
	}
	var conflicts []Bytes
	for _, s := range steps {
		switch s.how {
		case rebaseTake, rebaseSame:
			out.Taken = append(out.Taken, Bytes(s.path))
		case rebaseMerged:
			out.Merged = append(out.Merged, Bytes(s.path))
		case rebaseConflict:
			out.Conflicts = append(out.Conflicts, Bytes(s.path))
		}
	}
	conflicts, err = t.recordedConflicts()
	if err != nil {
		return nil, err
	}
	for _, p := range out.Conflicts {
		if !slices.Contains(conflicts, p) {
			conflicts = append(conflicts, p)
		}
	}
	// The conflicts are recorded before any marker is written: a rebase
	// cut short after writing one leaves a commit that refuses it, never
	// one that lands it.
	if err := t.st.Write(conflictsFile, conflictsRecord{Paths: conflicts}); err != nil {
		return nil, err
	}
	if err := t.keepMerged(steps); err != nil {
		return nil, err
	}
	stagedNow, err := t.writeRebase(staged, steps)
	if err != nil {
		return nil, err
	}
	if err := t.recordRebase(steps, stagedNow); err != nil {
		return nil, err
	}
	if err := t.event("rebased", map[string]any{"taken": out.Taken, "merged": out.Merged, "conflicts": out.Conflicts}); err != nil {
		return nil, err
	}
	return out, nil
}

// planRebase measures the base and decides, path by path, how the staged
// tree takes in what the base changed, reading every byte it will write.
// Nothing is written.
func (t *Tx) planRebase(ctx context.Context, root, staged *safefs.Root) ([]rebaseStep, *Refusal, error) {
	open, err := t.loadManifest(baseManifestFile)
	if err != nil {
		return nil, nil, err
	}
	set, err := t.diff(ctx)
	if err != nil {
		return nil, nil, err
	}
	changes := make(map[string]changeset.Change, len(set.Changes))
	for _, c := range set.Changes {
		changes[c.Path] = c
	}
	// The base is measured as open measured it: what it excluded from the
	// staged tree stays out.
	excl, err := project.NewSelector(t.rec.Exclude, string(t.rec.Under))
	if err != nil {
		return nil, nil, fmt.Errorf("exclude selectors in %s: %w", t.st.Path(recordFile), err)
	}
	noise, err := selector.New(t.rec.Noise)
	if err != nil {
		return nil, nil, fmt.Errorf("default excludes in %s: %w", t.st.Path(recordFile), err)
	}
	now, err := manifest.Walk(ctx, t.Base(), manifest.WalkOptions{Skip: func(rel string, isDir bool) bool {
		return excl.MatchSelf(rel, isDir) || noise.MatchSelf(rel, isDir)
	}})
	if err != nil {
		return nil, nil, fmt.Errorf("measure the base %s: %w", t.Base(), err)
	}
	orig, err := t.originals()
	if err != nil {
		return nil, nil, err
	}
	var steps []rebaseStep
	var cannot []string
	oe, ne := open.Entries, now.Entries
	for i, j := 0, 0; i < len(oe) || j < len(ne); {
		var o, n *manifest.Entry
		switch {
		case j == len(ne) || (i < len(oe) && oe[i].Path < ne[j].Path):
			o = &oe[i]
			i++
		case i == len(oe) || ne[j].Path < oe[i].Path:
			n = &ne[j]
			j++
		default:
			o, n = &oe[i], &ne[j]
			i++
			j++
		}
		s := rebaseStep{open: o}
		if n != nil {
			s.now = *n
			s.now.Digest = ""
		}
		s.path = pathOfEntries(o, n)
		switch {
		case manifest.IsGitMeta(s.path),
			o != nil && n != nil && basecheck.Unchanged(*n, *o),
			(o == nil || o.Kind == manifest.KindOther) && (n == nil || n.Kind == manifest.KindOther):
			continue
		}
		ok, err := t.planPath(ctx, root, staged, orig, changes, &s)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			cannot = append(cannot, s.path)
			continue
		}
		steps = append(steps, s)
	}
	if len(cannot) > 0 {
		return nil, refuse(BaseDrift, cannot, "changed both in the base and in the transaction, in a way a rebase can neither merge nor mark (not text, a file against a directory or a deletion, a mode both changed, or no known ancestor); the transaction is as it was: make the staged version agree with the base's, or discard the transaction"), nil
	}
	return steps, nil, nil
}

// parentDir is the slash-separated parent of rel, "" at the top.
func parentDir(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

func pathOfEntries(a, b *manifest.Entry) string {
	if a != nil {
		return a.Path
	}
	return b.Path
}

// planPath decides how the staged tree takes in the base's change of one
// path, and reads what it will write; false: it cannot.
func (t *Tx) planPath(ctx context.Context, root, staged *safefs.Root, orig *originals.Store, changes map[string]changeset.Change, s *rebaseStep) (bool, error) {
	// Beneath a directory the transaction deleted or made something else,
	// the base's change has nowhere to go.
	for p := parentDir(s.path); p != ""; p = parentDir(p) {
		if c, ok := changes[p]; ok && c.Result.Kind != manifest.KindDir {
			return false, nil
		}
	}
	c, touched := changes[s.path]
	if !touched {
		// A directory the base deleted or retyped, in which the
		// transaction changed something, cannot go.
		if s.open != nil && s.open.Kind == manifest.KindDir && s.now.Kind != manifest.KindDir {
			for p := range changes {
				if strings.HasPrefix(p, s.path+"/") {
					return false, nil
				}
			}
		}
		s.how = rebaseTake
		return true, t.readBase(root, s)
	}
	if err := t.readBase(root, s); err != nil {
		return false, err
	}
	n := s.now
	switch {
	case c.Result.Kind != n.Kind:
		return false, nil
	case n.Kind == manifest.KindNone:
		s.how = rebaseSame
		return true, nil
	case n.Kind == manifest.KindDir:
		s.how = rebaseSame
		return c.Result.Mode == n.Mode, nil
	case n.Kind == manifest.KindSymlink:
		s.how = rebaseSame
		return c.Result.Target == n.Target, nil
	case n.Kind != manifest.KindFile:
		return false, nil
	}
	ours, info, err := readStaged(staged, s.path)
	if err != nil {
		return false, err
	}
	s.ours = info
	if bytes.Equal(ours, s.content) && c.Result.Mode == n.Mode {
		s.how = rebaseSame
		return true, nil
	}
	if c.Op != changeset.Modify || s.open == nil || s.open.Kind != manifest.KindFile {
		return false, nil
	}
	anc, ok, err := t.ancestor(ctx, orig, *s.open)
	if err != nil {
		return false, fmt.Errorf("read the merge base of %s: %w", s.path, err)
	}
	if !ok {
		return false, nil
	}
	mode, ok := merge.Mode(s.open.Mode, c.Result.Mode, n.Mode)
	if !ok {
		return false, nil
	}
	theirs := s.content
	s.theirs = theirs
	content, how, err := mergeContent(anc, ours, theirs)
	if err != nil {
		return false, fmt.Errorf("merge %s: %w", s.path, err)
	}
	switch how {
	case mergeImpossible:
		return false, nil
	case mergeConflict:
		marked, _, err := merge.Marked(anc, ours, theirs, rebaseLabels(t.ID()))
		if errors.Is(err, merge.ErrNotText) || errors.Is(err, merge.ErrTooCostly) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("mark the conflicts in %s: %w", s.path, err)
		}
		s.how, content = rebaseConflict, marked
	default:
		s.how = rebaseMerged
	}
	s.content, s.mode = content, mode
	return true, nil
}

// readBase reads the base's version of a file step into s.content, and
// sets s.now's digest to those very bytes: a later commit's drift check
// then compares bytes where stat cannot tell an edit in the same
// timestamp step.
func (t *Tx) readBase(root *safefs.Root, s *rebaseStep) error {
	if s.now.Kind != manifest.KindFile {
		return nil
	}
	f, info, err := root.OpenRegular(s.path)
	if err != nil {
		return fmt.Errorf("read the base's %s: %w", s.path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, info.Size+1))
	if err != nil {
		return fmt.Errorf("read the base's %s: %w", s.path, err)
	}
	s.content, s.mode = b, s.now.Mode
	s.now.Digest = manifest.HashBytes(b)
	return nil
}

func readStaged(staged *safefs.Root, rel string) ([]byte, safefs.Info, error) {
	f, info, err := staged.OpenRegular(rel)
	if err != nil {
		return nil, safefs.Info{}, fmt.Errorf("read the staged %s: %w", rel, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, info.Size+1))
	if err != nil {
		return nil, safefs.Info{}, fmt.Errorf("read the staged %s: %w", rel, err)
	}
	return b, info, nil
}

// writeRebase writes the steps into the staged tree: first it removes what
// the base removed or retyped, deepest first, then it writes what the base
// holds now, parents first. It returns the staged entries of the paths it
// took from the base, measured once written, for the staged tree's
// manifest at open: the path is then unchanged by the transaction.
func (t *Tx) writeRebase(staged *safefs.Root, steps []rebaseStep) (map[string]manifest.Entry, error) {
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		if s.how != rebaseTake || s.open == nil || s.open.Kind == manifest.KindOther || s.open.Kind == s.now.Kind {
			continue
		}
		rm := staged.Remove
		if s.open.Kind == manifest.KindDir {
			rm = staged.RemoveDir
		}
		if err := rm(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("rebase %s: remove the staged %s, which the base removed: %w", t.ID(), s.path, err)
		}
	}
	written := map[string]manifest.Entry{}
	for _, s := range steps {
		var err error
		switch {
		case s.how == rebaseSame:
			continue
		case s.how != rebaseTake:
			// The command may still be writing: replace only the file the
			// merge read.
			cur, lerr := staged.Lstat(s.path)
			if lerr != nil || cur.Ino != s.ours.Ino || cur.Dev != s.ours.Dev || cur.Size != s.ours.Size || cur.MtimeNs != s.ours.MtimeNs || cur.CtimeNs != s.ours.CtimeNs {
				return nil, fmt.Errorf("rebase %s: the staged %s changed while the rebase merged it (a command still writing in %s?); stop it and rebase again", t.ID(), s.path, t.Path())
			}
			err = writeStagedFile(staged, s.path, s.content, s.mode)
		case s.now.Kind == manifest.KindFile:
			err = writeStagedFile(staged, s.path, s.content, s.mode)
		case s.now.Kind == manifest.KindSymlink:
			if s.open != nil && s.open.Kind == manifest.KindSymlink {
				if err = staged.Remove(s.path); err != nil {
					break
				}
			}
			err = staged.Symlink(s.now.Target, s.path)
		case s.now.Kind == manifest.KindDir:
			if s.open == nil || s.open.Kind != manifest.KindDir {
				err = staged.Mkdir(s.path, 0o700)
			}
			if err == nil {
				err = staged.Chmod(s.path, s.now.Mode)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("rebase %s: write the base's change of %s into the staged workspace: %w", t.ID(), s.path, err)
		}
		if s.how != rebaseTake {
			continue
		}
		e, err := basecheck.Measure(staged, s.path)
		if err != nil {
			return nil, err
		}
		if e.Kind == manifest.KindFile {
			// Just written: too fresh for stat to prove it unchanged later.
			e.Digest = s.now.Digest
		}
		written[s.path] = e
	}
	return written, nil
}

// writeStagedFile replaces rel in the staged tree with content, whole or
// not at all: a temporary file beside it, renamed over it.
func writeStagedFile(staged *safefs.Root, rel string, content []byte, mode fs.FileMode) error {
	f, tmp, err := staged.CreateTemp(parentDir(rel), ".airlock-rebase-*")
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = staged.Rename(tmp, rel)
	}
	if err != nil {
		staged.Remove(tmp)
	}
	return err
}

// recordRebase makes the base as measured the transaction's base, and the
// paths taken from it unchanged in its staged tree. The staged manifest
// goes first: should the base's not follow, a taken path reads as the
// transaction's change to exactly the base's content, which a commit
// merges as the same change on both sides.
func (t *Tx) recordRebase(steps []rebaseStep, written map[string]manifest.Entry) error {
	sopen, err := t.loadManifest(stagedOpenFile)
	if err != nil {
		return err
	}
	open, err := t.loadManifest(baseManifestFile)
	if err != nil {
		return err
	}
	sset, bset := map[string]*manifest.Entry{}, map[string]*manifest.Entry{}
	for _, s := range steps {
		if s.how == rebaseTake {
			e := written[s.path]
			sset[s.path] = &e
		}
		e := s.now
		e.Path = s.path
		bset[s.path] = &e
	}
	t.opened = nil
	if t.watch != nil && t.watch.changes != nil {
		// The watch did not see the rebase write: measure the whole tree.
		t.watch.changes, t.watch.off = nil, "the transaction was rebased"
	}
	if err := patchManifest(sopen, sset).Save(t.st.Path(stagedOpenFile)); err != nil {
		return err
	}
	return patchManifest(open, bset).Save(t.st.Path(baseManifestFile))
}

// patchManifest is m with the entries of set in place of its own (an
// entry of kind none, or nil, removes the path).
func patchManifest(m *manifest.Manifest, set map[string]*manifest.Entry) *manifest.Manifest {
	out := &manifest.Manifest{Entries: make([]manifest.Entry, 0, len(m.Entries)+len(set))}
	for _, e := range m.Entries {
		if _, ok := set[e.Path]; !ok {
			out.Entries = append(out.Entries, e)
		}
	}
	for p, e := range set {
		if e != nil && e.Kind != manifest.KindNone {
			e.Path = p
			out.Entries = append(out.Entries, *e)
		}
	}
	slices.SortFunc(out.Entries, func(a, b manifest.Entry) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// recordedConflicts is the paths rebases left conflict markers in, as
// recorded (resolved or not).
func (t *Tx) recordedConflicts() ([]Bytes, error) {
	var rec conflictsRecord
	if err := t.st.Read(conflictsFile, &rec); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return rec.Paths, nil
}

// Conflicts is the paths a rebase left conflict markers in that still
// hold a marker line in the staged workspace.
func (t *Tx) Conflicts() (_ []Bytes, err error) {
	defer exported(&err)
	paths, err := t.recordedConflicts()
	if err != nil || len(paths) == 0 {
		return nil, err
	}
	staged, err := safefs.OpenRootNoFollow(t.Path())
	if err != nil {
		return nil, err
	}
	defer staged.Close()
	var out []Bytes
	for _, p := range paths {
		b, _, err := readStaged(staged, string(p))
		if err == nil && hasMarkers(b) {
			out = append(out, p)
		}
	}
	return out, nil
}

// rebaseLabels are the labels a rebase of transaction id writes after
// its conflict markers: the transaction's own, so that a marker it wrote
// is told from one a file holds of its own (a Markdown page showing git's).
func rebaseLabels(id string) merge.Labels {
	return merge.Labels{Ours: "transaction " + id, Ancestor: "base as " + id + " had it", Theirs: "base now"}
}

// checkConflicts refuses Conflicted while what the commit would land (its
// frozen content) holds a conflict marker a rebase wrote: in any file of
// the change set, a marker line with this transaction's labels (a marked
// file renamed, or copied, carries them); in a path the rebase marked
// up, also more marker lines of any form than the base's own version of
// it holds (a marker whose label was edited away; an example of git's
// markers the file had all along is no conflict).
func (t *Tx) checkConflicts(set *changeset.Set, objects string) (*Refusal, error) {
	recorded, err := t.recordedConflicts()
	if err != nil || len(recorded) == 0 {
		return nil, err
	}
	labeled := labeledMarkers(t.ID())
	var base *safefs.Root
	defer func() {
		if base != nil {
			base.Close()
		}
	}()
	var marked []string
	for _, c := range set.Changes {
		if c.Result.Kind != manifest.KindFile {
			continue
		}
		b, err := os.ReadFile(changeset.ObjectPath(objects, c.Result.Digest))
		if err != nil {
			return nil, fmt.Errorf("read the frozen content of %s: %w", c.Path, err)
		}
		if hasLine(b, labeled) {
			marked = append(marked, c.Path)
			continue
		}
		if !slices.Contains(recorded, Bytes(c.Path)) {
			continue
		}
		var own []byte
		if base == nil {
			if base, err = safefs.OpenRootNoFollow(t.Base()); err != nil {
				return nil, fmt.Errorf("open the base %s: %w", t.Base(), err)
			}
		}
		if b, _, err := readStaged(base, c.Path); err == nil {
			own = b
		}
		if markerLines(b) > markerLines(own) {
			marked = append(marked, c.Path)
		}
	}
	if len(marked) == 0 {
		return nil, nil
	}
	r := refuse(Conflicted, marked, "the rebase left conflict markers in them, and some remain")
	r.Remedy = Remedy{Kind: RemedyResolve, Tx: t.ID(), Dir: t.Path()}
	return r, nil
}

// labeledMarkers are the marker lines a rebase of transaction id writes
// with its labels.
func labeledMarkers(id string) []string {
	l := rebaseLabels(id)
	return []string{"<<<<<<< " + l.Ours, "||||||| " + l.Ancestor, ">>>>>>> " + l.Theirs}
}

// hasLine reports whether b holds one of lines as a whole line (a CR
// before its newline aside).
func hasLine(b []byte, lines []string) bool {
	for line := range bytes.Lines(b) {
		if slices.Contains(lines, string(bareLine(line))) {
			return true
		}
	}
	return false
}

// markerLines counts the lines of b that open, split or close a conflict.
func markerLines(b []byte) int {
	n := 0
	for line := range bytes.Lines(b) {
		if isMarker(line) {
			n++
		}
	}
	return n
}

// hasMarkers reports whether b holds a line that opens, splits or closes
// a conflict.
func hasMarkers(b []byte) bool {
	for line := range bytes.Lines(b) {
		if isMarker(line) {
			return true
		}
	}
	return false
}

// bareLine is line without its newline and the one CR before it.
func bareLine(line []byte) []byte {
	return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
}

// isMarker reports whether line (its CR and newline aside) opens, splits
// or closes a conflict: seven '<', '|' or '>', then a space or the line's
// end. A line of seven '=' alone is not counted: it underlines headings
// in reStructuredText and Markdown.
func isMarker(line []byte) bool {
	line = bareLine(line)
	for _, m := range []string{"<<<<<<<", "|||||||", ">>>>>>>"} {
		if rest, ok := bytes.CutPrefix(line, []byte(m)); ok && (len(rest) == 0 || rest[0] == ' ') {
			return true
		}
	}
	return false
}

// stillUntouched reports whether the staged path p is as the transaction's
// staged manifest holds it: absent from both, a directory in both, or the
// same inode with the same size and times.
func stillUntouched(staged *safefs.Root, p string, open *manifest.Manifest) bool {
	e, had := open.Lookup(p)
	cur, err := staged.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		// Absent, or beneath something that is no directory (a file the
		// base made a directory of, its new entries beneath it).
		return !had
	case err != nil || !had:
		return false
	case e.Kind == manifest.KindDir:
		return cur.Mode.IsDir()
	case e.Kind == manifest.KindSymlink:
		// A manifest keeps no size for a symlink.
		return cur.Mode&fs.ModeSymlink != 0 && cur.Ino == e.Ino && cur.MtimeNs == e.MtimeNs && cur.CtimeNs == e.CtimeNs
	}
	return cur.Mode.IsRegular() && cur.Ino == e.Ino && cur.Size == e.Size && cur.MtimeNs == e.MtimeNs && cur.CtimeNs == e.CtimeNs
}

// keepMerged keeps, among the base's originals, the base's content each
// merge of the rebase took in, under the stat facts the rebase records
// for the path: once the base changes that path again, it is the ancestor
// of the next merge (Tx.ancestor), as the original of an airlock commit
// is. Without it, a path a rebase merged could be neither committed nor
// rebased once the base moved again.
func (t *Tx) keepMerged(steps []rebaseStep) error {
	var orig *originals.Store
	for _, s := range steps {
		if (s.how != rebaseMerged && s.how != rebaseConflict) || s.theirs == nil || s.now.Kind != manifest.KindFile {
			continue
		}
		if orig == nil {
			var err error
			if orig, err = t.originals(); err != nil {
				return err
			}
		}
		e := s.now
		e.Path = s.path
		e.Digest = manifest.HashBytes(s.theirs)
		if orig.Has(e.Digest) {
			if d, ok := orig.Lookup(e); ok && d == e.Digest {
				continue
			}
		}
		f, err := os.CreateTemp(t.StateDir(), ".merged-*")
		if err != nil {
			return fmt.Errorf("rebase %s: keep the base's %s: %w", t.ID(), s.path, err)
		}
		_, werr := f.Write(s.theirs)
		if werr == nil {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = orig.Add(t.ID(), e, f.Name())
		}
		if werr != nil {
			os.Remove(f.Name())
			return fmt.Errorf("rebase %s: keep the base's %s: %w", t.ID(), s.path, werr)
		}
	}
	return nil
}
