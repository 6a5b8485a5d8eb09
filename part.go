package airlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/basecheck"
	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/selector"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/state"
)

// A partial commit (CommitOptions.Paths) lands part of a transaction's
// change set and leaves the rest open.
//
// It is carried out as a transaction of its own, the part: its id is the
// transaction's with a number (ID.1, ID.2, ...), its state holds the
// journal, the applied record and the receipt of this one commit, so that
// log, undo and receipt verify name it as they name any commit. The part
// reads the transaction's staged tree and manifests and has no staged tree
// of its own. Once it has landed, the transaction's manifests advance for
// the landed paths: its base manifest takes what the base holds now (so a
// later commit does not call the transaction's own landing drift), its
// staged manifest what was frozen (so a landed path is no change any more,
// until the command writes it again).

// part is what makes a Tx the part of another that a partial commit lands.
type part struct {
	whole *Tx
	id    string // the part's own id
	sel   *selector.Set
	// args are the paths as the caller gave them, each their selectors
	// one by one (nil for a negation), for the errors that name one.
	args []string
	each []*selector.Set
	// landed are the base's entries of the paths the commit applied, as
	// measured right after the apply under the base's lock; set is the
	// frozen change set that landed, its results the staged entries as
	// the command left them (not a merge's result: that is in landed).
	landed []manifest.Entry
	set    *changeset.Set
}

// whole is the transaction a partial commit takes part of: t itself for
// any other.
func (t *Tx) whole() *Tx {
	if t.part != nil {
		return t.part.whole
	}
	return t
}

// SelectionError is a partial commit's selection that cannot be taken:
// a selector that leaves the base or names no changed path. Nothing was
// committed or recorded.
type SelectionError struct {
	TxID string
	// Selector is the argument as given; Paths the changed paths the
	// reason names, if any.
	Selector string
	Paths    []string
	Reason   string
}

func (e *SelectionError) Error() string {
	msg := fmt.Sprintf("commit %s: path %q %s", e.TxID, e.Selector, e.Reason)
	if len(e.Paths) > 0 {
		msg += " (" + strings.Join(e.Paths, ", ") + ")"
	}
	return msg
}

// selection compiles a partial commit's paths into selectors anchored at
// the base. A path that is, byte for byte, a changed path of the
// transaction or a directory above one (changed reports which) selects
// exactly that path and what is beneath it, whatever bytes its name
// holds. Any other path is a gitignore selector: the wildcards (*, ?,
// [...], **) match as in a .gitignore at the base's root, a leading !
// takes back what an earlier path selected. An absolute path must lie
// inside the base. changed may be nil: every path is then read as a
// selector, which is enough to refuse one that leaves the base.
func selection(id, base string, paths []string, changed func(rel string) bool) (*selector.Set, []*selector.Set, error) {
	all := make([]string, 0, len(paths))
	var each []*selector.Set
	for _, arg := range paths {
		pat, err := anchor(base, arg, changed)
		if err != nil {
			return nil, nil, &SelectionError{TxID: id, Selector: arg, Reason: err.Error()}
		}
		all = append(all, pat)
		var one *selector.Set
		if !strings.HasPrefix(pat, "!") {
			if one, err = selector.New([]string{pat}); err != nil {
				return nil, nil, &SelectionError{TxID: id, Selector: arg, Reason: err.Error()}
			}
		}
		each = append(each, one)
	}
	sel, err := selector.New(all)
	if err != nil {
		return nil, nil, &SelectionError{TxID: id, Selector: strings.Join(paths, " "), Reason: err.Error()}
	}
	return sel, each, nil
}

// changedPaths reports whether rel is a path of set (a change or an
// unsupported entry) or a directory above one: the names a partial
// commit's path selects literally.
func changedPaths(set *changeset.Set) func(rel string) bool {
	names := map[string]bool{}
	add := func(p string) {
		for ; p != "." && p != "/" && !names[p]; p = path.Dir(p) {
			names[p] = true
		}
	}
	for _, c := range set.Changes {
		add(c.Path)
	}
	for _, u := range set.Unsupported {
		add(string(u))
	}
	return func(rel string) bool { return names[rel] }
}

// anchor turns one path argument into a selector anchored at the base. A
// name changed reports is quoted (PathSelector), so that it selects
// itself: without that, gitignore would drop its trailing spaces and read
// its backslashes as escapes, and a typed name could land another file.
// The argument is tried whole first, so a changed file named "!x" is
// that file, not a negation.
func anchor(base, arg string, changed func(rel string) bool) (string, error) {
	if changed != nil {
		if rel, dirOnly, err := baseRel(base, arg); err == nil && rel != "." && changed(rel) {
			return literal(rel, dirOnly), nil
		}
	}
	neg := strings.HasPrefix(arg, "!")
	p, dirOnly, err := baseRel(base, strings.TrimPrefix(arg, "!"))
	if err != nil {
		return "", err
	}
	var pat string
	switch {
	case p == ".":
		// The whole base: everything at its top, and so beneath.
		pat = "/*"
	case changed != nil && changed(p):
		pat = literal(p, dirOnly)
	default:
		if changed != nil && strings.HasSuffix(p, " ") && !strings.HasSuffix(p, `\ `) {
			return "", errors.New(`ends in a space, which a selector drops, and names no changed path of the transaction (a selector for a name ending in a space puts \ before the space: "x\ ")`)
		}
		pat = "/" + p
		if dirOnly {
			pat += "/"
		}
	}
	if neg {
		pat = "!" + pat
	}
	return pat, nil
}

// literal is the anchored selector of exactly the base-relative path rel.
func literal(rel string, dirOnly bool) string {
	pat := "/" + PathSelector(rel)
	if dirOnly {
		pat += "/"
	}
	return pat
}

// baseRel is arg as a clean slash-separated path relative to the base,
// and whether it ended in a slash (a directory only).
func baseRel(base, arg string) (string, bool, error) {
	p := arg
	if p == "" {
		return "", false, errors.New("is empty")
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(base, filepath.Clean(p))
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", false, fmt.Errorf("is outside the base %s", base)
		}
		if strings.HasSuffix(p, "/") && rel != "." {
			rel += "/"
		}
		p = filepath.ToSlash(rel)
	}
	dirOnly := strings.HasSuffix(p, "/")
	for _, c := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if c == ".." {
			return "", false, errors.New("leaves the base (a path is relative to the base and has no .. in it)")
		}
	}
	p = path.Clean(p)
	return p, dirOnly && p != ".", nil
}

// take is the part of set the selection names: each change whose path it
// selects (a selected directory selects everything beneath it), with the
// directories the change set creates on the way to a selected path, which
// it cannot land without. Unsupported entries it selects are kept, for
// the commit to refuse; changes under .git never land and are left out.
// A selector that names no change is a *SelectionError.
func (p *part) take(id string, set *changeset.Set, args []string, each []*selector.Set, content func(c changeset.Change) string) (*changeset.Set, error) {
	isDir := func(c changeset.Change) bool {
		return c.Result.Kind == manifest.KindDir || (c.Result.Kind == manifest.KindNone && c.Base.Kind == manifest.KindDir)
	}
	for i, one := range each {
		if one == nil {
			continue
		}
		hit := slices.ContainsFunc(set.Changes, func(c changeset.Change) bool { return one.Match(c.Path, isDir(c)) }) ||
			slices.ContainsFunc(set.Unsupported, func(u manifest.Bytes) bool { return one.Match(string(u), false) })
		if !hit {
			return nil, &SelectionError{TxID: id, Selector: args[i], Reason: "names no changed path of the transaction (airlock diff " + id + " lists them)"}
		}
	}
	chosen := map[string]bool{}
	for _, c := range set.Changes {
		if p.sel.Match(c.Path, isDir(c)) {
			chosen[c.Path] = true
		}
	}
	created := map[string]bool{}
	for _, c := range set.Changes {
		if c.Result.Kind == manifest.KindDir && c.Base.Kind != manifest.KindDir {
			created[c.Path] = true
		}
	}
	for q := range chosen {
		for d := path.Dir(q); d != "."; d = path.Dir(d) {
			if created[d] {
				chosen[d] = true
			}
		}
	}
	out := &changeset.Set{}
	for _, c := range set.Changes {
		if chosen[c.Path] {
			out.Changes = append(out.Changes, c)
		}
	}
	for _, u := range set.Unsupported {
		if p.sel.Match(string(u), false) {
			out.Unsupported = append(out.Unsupported, u)
		}
	}
	if out.Empty() {
		return nil, &SelectionError{TxID: id, Selector: strings.Join(args, " "), Reason: "names no changed path of the transaction (airlock diff " + id + " lists them)"}
	}
	if content != nil {
		if err := renamesWhole(id, set, out, content); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// renamesWhole refuses a selection that takes one side of a rename and
// not the other: a file added with exactly the bytes of a file the change
// set deletes (content gives a change's bytes' digest, "" where they
// cannot be read). Landing the add alone would leave the file twice in
// the base; landing the delete alone would lose it from the base until
// the rest is committed. Both sides, or neither.
func renamesWhole(id string, set, sel *changeset.Set, content func(c changeset.Change) string) error {
	in := map[string]bool{}
	for _, c := range sel.Changes {
		in[c.Path] = true
	}
	var adds, dels []changeset.Change
	for _, c := range set.Changes {
		switch {
		case c.Op == changeset.Add && c.Result.Kind == manifest.KindFile:
			adds = append(adds, c)
		case c.Op == changeset.Delete && c.Base.Kind == manifest.KindFile:
			dels = append(dels, c)
		}
	}
	for _, a := range adds {
		for _, d := range dels {
			// Only a pair split by the selection is read, and only where
			// the sizes agree.
			if in[a.Path] == in[d.Path] || a.Result.Size != d.Base.Size {
				continue
			}
			if da := content(a); da == "" || da != content(d) {
				continue
			}
			taken, left := a.Path, d.Path
			if in[d.Path] {
				taken, left = d.Path, a.Path
			}
			return &SelectionError{TxID: id, Selector: taken,
				Reason: fmt.Sprintf("is one side of a rename (%s to %s, the same bytes): name %s too, or neither", d.Path, a.Path, left)}
		}
	}
	return nil
}

// contentDigest gives the digest of a change's bytes for renamesWhole: an
// add's staged file, a delete's original in the base. The base root is
// opened on first use; close it with the returned func.
func (t *Tx) contentDigest() (func(c changeset.Change) string, func()) {
	var root *safefs.Root
	digest := func(c changeset.Change) string {
		var f io.ReadCloser
		var err error
		if c.Op == changeset.Delete {
			if root == nil {
				if root, err = safefs.OpenRoot(t.Base()); err != nil {
					return ""
				}
			}
			f, err = changeset.OpenOriginal(root, c.Base)
		} else {
			f, err = t.openStaged(c.Path, c.Result)
		}
		if err != nil {
			return ""
		}
		defer f.Close()
		d, err := manifest.HashReader(f)
		if err != nil {
			return ""
		}
		return d
	}
	return digest, func() {
		if root != nil {
			root.Close()
		}
	}
}

// commitPart is Commit with o.Paths: it lands the selected part of the
// change set as the transaction's next part, or, where the selection
// names the whole change set, commits the transaction itself.
func (t *Tx) commitPart(ctx context.Context, o CommitOptions) (*Result, error) {
	// Read as selectors first, so that a path leaving the base is
	// refused before anything is locked or measured.
	if _, _, err := selection(t.ID(), t.Base(), o.Paths, nil); err != nil {
		return nil, err
	}
	if b, err := stage.Get(t.rec.Backend); err == nil {
		if _, ok := b.(stage.Differ); ok {
			return nil, fmt.Errorf("commit %s: a partial commit is not available for %s transactions (the change set is the upper layer, kept in no manifest a landed part could be taken out of); commit it whole, or open the work with --backend copy", t.ID(), t.rec.Backend)
		}
	}
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
	switch {
	case status == StatusInterrupted:
		return nil, interrupted(t.Base(), t.ID())
	case status.Settled():
		return nil, fmt.Errorf("transaction %s is already %s: it has nothing left to commit part of", t.ID(), status)
	}
	set, err := t.diff(ctx)
	if err != nil {
		return nil, err
	}
	sel, each, err := selection(t.ID(), t.Base(), o.Paths, changedPaths(set))
	if err != nil {
		return nil, err
	}
	probe := &part{sel: sel}
	content, closeBase := t.contentDigest()
	chosen, err := probe.take(t.ID(), set, o.Paths, each, content)
	closeBase()
	if err != nil {
		return nil, err
	}
	if len(chosen.Changes) == len(set.Changes) && len(chosen.Unsupported) == len(set.Unsupported) {
		// The whole change set: a plain commit, which settles the
		// transaction (and keeps the git commits made in it, which no
		// part takes).
		o.Paths = nil
		return t.commitLocked(ctx, o)
	}
	pt, err := t.newPart(sel)
	if err != nil {
		return nil, err
	}
	pt.part.args, pt.part.each = o.Paths, each
	res, err := pt.commitLocked(ctx, o)
	if res != nil && res.Outcome == Committed && !res.Repeat {
		fault.Point("part-landed")
		if aerr := t.advance(pt.part); aerr != nil {
			return res, fmt.Errorf("%s landed as %s, but transaction %s could not record it (%w): its diff still shows the landed paths until the next commit or rebase of %s records the landing from %s", strings.Join(res.Receipt.Paths, ", "), pt.ID(), t.ID(), aerr, t.ID(), pt.ID())
		}
		res.PartOf = t.ID()
		return res, err
	}
	// Not landed: the part goes, unless an apply of it was cut short and
	// its journal is what recover needs.
	if st, serr := pt.Status(); serr == nil && (st == StatusOpen || st == StatusRefused || st == StatusNoChanges) {
		t.store.st().RemoveTx(pt.ID())
	} else {
		return res, err
	}
	var r *Refusal
	if res != nil && errors.As(err, &r) {
		// Refused like any commit: the transaction records it and stays
		// to be committed again, of the same paths.
		if r.Remedy.Tx == pt.ID() {
			r.Remedy.Tx = t.ID()
		}
		if r.Remedy.Kind != "" {
			r.Remedy.Paths = append([]string(nil), o.Paths...)
		}
		sc := o.settlement()
		sc.validated = res.Validators
		refused := pt.part.set
		if refused == nil {
			refused = &changeset.Set{}
		}
		rs, rerr := t.settle(ctx, Refused, r, refused, sc)
		if rerr != nil && !errors.As(rerr, &r) {
			return nil, rerr
		}
		return rs, rerr
	}
	if err == nil && res != nil && res.Outcome == NoChanges {
		return nil, &SelectionError{TxID: t.ID(), Selector: strings.Join(o.Paths, " "), Reason: "names no changed path of the transaction any more (airlock diff " + t.ID() + " lists them)"}
	}
	return nil, err
}

// newPart makes the state of the next part of t: a record like t's with
// its own id and no staged tree, and copies of the state a commit reads.
func (t *Tx) newPart(sel *selector.Set) (*Tx, error) {
	var st *state.Tx
	var err error
	for n := 1; ; n++ {
		id := t.ID() + "." + strconv.Itoa(n)
		if len(id) > 64 {
			st, err = createTx(t.store.st(), "", func() string { return state.NewID(time.Now()) })
			break
		}
		st, err = t.store.st().Create(id)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			t.store.st().RemoveTx(st.ID())
		}
	}()
	rec := t.rec
	rec.ID, rec.Staged, rec.PID, rec.PartOf = st.ID(), Bytes(st.Path(stagedDir)), os.Getpid(), t.ID()
	rec.Select = Selectors(sel.Patterns())
	rec.Undoes, rec.Warnings = "", nil
	if rec.Digest, err = rec.seal(); err != nil {
		return nil, err
	}
	// The part measures the change set against the transaction's
	// manifests, and reads what its checks read from the transaction's
	// state: the base's symlinks at open, the git snapshot its merges
	// take ancestors from.
	for _, name := range []string{baseManifestFile, stagedOpenFile, baseLinksFile, gitFile} {
		b, err := t.st.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := safefs.WriteFile(st.Path(name), b, 0o600); err != nil {
			return nil, err
		}
	}
	if err := st.WriteOnceUnsynced(recordFile, rec); err != nil {
		return nil, err
	}
	if err := st.Append(state.Event{Time: time.Now().UTC(), Event: eventOpened, Detail: map[string]any{"part_of": t.ID()}}); err != nil {
		return nil, err
	}
	ok = true
	return &Tx{store: t.store, st: st, rec: rec, part: &part{whole: t, id: st.ID(), sel: sel}}, nil
}

// landedEntries measures, under the base's lock right after the apply,
// what the base holds at each path the journal applied. A file keeps the
// digest of the bytes written: its stat facts are too fresh to prove that
// nothing wrote it again within the same timestamp step (see rebaseOpen).
func landedEntries(root *safefs.Root, ops []journal.Op) ([]manifest.Entry, error) {
	out := make([]manifest.Entry, 0, len(ops))
	for _, op := range ops {
		e, err := basecheck.Measure(root, op.Path)
		if err != nil {
			return nil, fmt.Errorf("measure %s after the apply: %w", op.Path, err)
		}
		if e.Kind == manifest.KindFile && op.After.Kind == manifest.KindFile {
			e.Digest = op.After.Digest
		}
		e.Path = op.Path
		out = append(out, e)
	}
	return out, nil
}

// advance records in t that its part p landed: the staged manifest takes
// the staged entries p froze, the base manifest what the base held right
// after the apply. The staged manifest is written first: a landed path
// whose staged entry is as frozen is no change, whatever the base
// manifest says, so a crash between the two writes leaves it out of the
// change set either way.
func (t *Tx) advance(p *part) error {
	t.opened = nil
	staged, err := t.loadManifest(stagedOpenFile)
	if err != nil {
		return err
	}
	var se []manifest.Entry
	for _, c := range p.set.Changes {
		e := c.Result
		e.Path = c.Path
		se = append(se, e)
	}
	if err := replaceEntries(staged, se).Save(t.st.Path(stagedOpenFile)); err != nil {
		return err
	}
	base, err := t.loadManifest(baseManifestFile)
	if err != nil {
		return err
	}
	if err := replaceEntries(base, p.landed).Save(t.st.Path(baseManifestFile)); err != nil {
		return err
	}
	return t.event(eventPartCommitted, map[string]any{"part": p.id, "paths": rawPaths(p.set.Paths())})
}

// replaceEntries is m with each entry of es in place of m's entry at its
// path: an entry of kind none removes the path.
func replaceEntries(m *manifest.Manifest, es []manifest.Entry) *manifest.Manifest {
	by := make(map[string]manifest.Entry, len(es))
	for _, e := range es {
		by[e.Path] = e
	}
	out := &manifest.Manifest{Entries: make([]manifest.Entry, 0, len(m.Entries)+len(es))}
	for _, e := range m.Entries {
		if _, ok := by[e.Path]; !ok {
			out.Entries = append(out.Entries, e)
		}
	}
	for _, e := range es {
		if e.Kind != manifest.KindNone {
			out.Entries = append(out.Entries, e)
		}
	}
	out.Sort()
	return out
}

// takePart is the preflight's first step in a part: it takes the part of
// the whole's change set p.set that the selection names, frozen, into
// p.set and p.prepared. A commit bound to a review (ExpectDiffDigest) is
// bound to the whole change set the person saw: the whole is frozen and
// its digest checked, then the part taken from that very freeze, so that
// what lands is a part of what was reviewed; o's binding is then spent.
func (t *Tx) takePart(ctx context.Context, w *workspace, p *preflight, o *CommitOptions) (*Refusal, error) {
	whole := p.set
	frozen := false
	if o.ExpectDiffDigest != "" && !whole.Empty() {
		if err := t.freeze(ctx, w, whole); err != nil {
			if r, ok := stagedChanged(err); ok {
				return r, nil
			}
			return nil, err
		}
		if r := checkReviewed(t.part.whole.ID(), whole, *o); r != nil {
			return r, nil
		}
		frozen = true
		o.ExpectDiffDigest = ""
	}
	set, err := t.part.take(t.part.whole.ID(), whole, t.part.args, t.part.each, nil)
	if err != nil {
		return nil, err
	}
	p.set, p.prepared, t.part.set = set, set, set
	if frozen {
		return nil, set.Save(w.path(changeSetFile))
	}
	if err := t.freeze(ctx, w, set); err != nil {
		if r, ok := stagedChanged(err); ok {
			return r, nil
		}
		return nil, err
	}
	return nil, nil
}

// PathSelector is a CommitOptions.Paths entry that selects exactly the
// base-relative path p (and, if it is a directory, what is beneath it),
// whatever bytes its name holds: the wildcards, the backslash, a leading
// ! and trailing spaces, which a selector reads otherwise, are quoted.
// A front end that lets a person pick changed paths (the review page)
// passes them through it.
func PathSelector(p string) string {
	var b strings.Builder
	trail := len(p) - len(strings.TrimRight(p, " "))
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' || c == '*' || c == '?' || c == '[':
			b.WriteByte('\\')
		case c == '!' && i == 0:
			b.WriteByte('\\')
		case c == ' ' && i >= len(p)-trail:
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// partLanded reports whether a partial commit landed part of t. Such a
// tree is never pooled: pooling takes a staged entry untouched since open
// to be a copy of the base's entry at that path, and a part whose path
// was three-way merged left the staged file as the command wrote it, the
// base with the merge. An event log that cannot be read counts as landed.
func (t *Tx) partLanded() bool {
	evs, err := t.st.Events()
	if err != nil {
		return true
	}
	return slices.ContainsFunc(evs, func(e state.Event) bool { return e.Event == eventPartCommitted })
}

// advanced reports whether t recorded the landing of its part id (the
// event advance writes last).
func (t *Tx) advanced(id string) (bool, error) {
	evs, err := t.st.Events()
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(evs, func(e state.Event) bool {
		return e.Event == eventPartCommitted && e.Detail["part"] == id
	}), nil
}

// finishAdvance records in t the landing of its committed part pt, if the
// process that landed it died between the part's receipt and the advance.
// Everything the advance needs is in the part's state: the frozen change
// set that landed, and the applied journal, whose paths are measured in
// the base now (root, under the base's lock) keeping the digests of the
// bytes written, so a later change of a path by anyone is drift against
// what landed. Idempotent: a part already recorded is left alone, and a
// crash within it leaves it to be done again.
func (t *Tx) finishAdvance(root *safefs.Root, pt *Tx) error {
	if done, err := t.advanced(pt.ID()); err != nil || done {
		return err
	}
	set, err := changeset.Load(pt.st.Path(changeSetFile))
	if err != nil {
		return fmt.Errorf("part %s landed, but its change set cannot be read: %w", pt.ID(), err)
	}
	j, err := pt.readJournal(appliedFile)
	if err != nil {
		return fmt.Errorf("part %s landed, but its applied journal cannot be read: %w", pt.ID(), err)
	}
	landed, err := landedEntries(root, j.Ops)
	if err != nil {
		return fmt.Errorf("part %s landed, but %w", pt.ID(), err)
	}
	return t.advance(&part{id: pt.ID(), set: set, landed: landed})
}

// finishParts completes the advance of every part of t that committed
// without t recording it (finishAdvance), before an operation on t reads
// its manifests; t's settle lock is held. A part whose apply is still
// marked in flight is recover's to finish. Parts are found by their ids,
// ID.N; a part that was given a fresh id (ID.N would pass 64 characters)
// is finished by recover only.
func (t *Tx) finishParts(ctx context.Context) error {
	ids, err := t.store.st().IDs()
	if err != nil {
		return err
	}
	var pending []*Tx
	for _, id := range ids {
		n, ok := strings.CutPrefix(id, t.ID()+".")
		if !ok || strings.Trim(n, "0123456789") != "" {
			continue
		}
		pt, err := t.store.Tx(id)
		if err != nil || pt.rec.PartOf != t.ID() {
			continue
		}
		if st, err := pt.Status(); err != nil || st != StatusCommitted {
			continue
		}
		if done, err := t.advanced(id); err != nil {
			return err
		} else if !done {
			pending = append(pending, pt)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	b, err := t.stateBase()
	if err != nil {
		return err
	}
	unlock, err := b.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, inflight, err := b.Inflight(); err != nil || inflight {
		return err
	}
	root, err := safefs.OpenRoot(t.Base())
	if err != nil {
		return err
	}
	defer root.Close()
	for _, pt := range pending {
		if err := t.finishAdvance(root, pt); err != nil {
			return err
		}
	}
	return nil
}

// finishWholeAdvance is finishAdvance for the part t over the base at
// base, whose lock the caller (recover) holds.
func (t *Tx) finishWholeAdvance(base string) error {
	root, err := safefs.OpenRoot(base)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := t.part.whole.finishAdvance(root, t); err != nil {
		return fmt.Errorf("recover %s: %w", base, err)
	}
	return nil
}
