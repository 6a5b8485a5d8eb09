package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/project"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/state"
)

// GCOptions select what gc removes. The zero value is a plain gc: every
// settled transaction stays for its base's grace.
type GCOptions struct {
	// OlderThan, when set, replaces every base's grace for this gc: a
	// settled transaction goes once it settled at least this long ago (0:
	// whatever may go now), named ones too. It is also the age an
	// abandoned open transaction must reach (nil: any age) and the age
	// beyond which pooled trees go (nil or 0: 7 days). nil: each base's
	// grace, the gc_keep of the .airlock.toml that governs it, else
	// config.DefaultGCKeep.
	OlderThan *time.Duration
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
	// IDs, when set, limits gc to these transactions and allows removing
	// refused ones and open ones whose owner process is gone. Naming a
	// settled transaction is choosing it: no grace keeps it (as git
	// reflog expire given a ref), only OlderThan when set.
	IDs []string
	// DropPool removes every pooled staged tree (see Staging). Without it
	// gc trims the pools: trees beyond the newest two of a base, and trees
	// older than OlderThan (7 days when OlderThan is nil or 0).
	DropPool bool
}

// GCItem is one transaction gc looked at.
type GCItem struct {
	ID string
	// Pooled marks a recycled staged tree kept in its base's pool (ID is
	// the transaction it came from), not a transaction's state.
	Pooled  bool
	Status  Status
	Bytes   int64 // disk its state uses
	Removed bool  // removed (or, in a dry run, would be)
	// UndoLost marks a committed transaction that could be undone until
	// this removal (or, in a dry run, would be removed): its undo goes
	// with its state. Its receipt stays in its base's chain.
	UndoLost bool
	// GraceEnds, on a settled transaction kept only because its grace has
	// not passed, is when it will have.
	GraceEnds time.Time
	Reason    string
}

// GC removes the state of settled transactions, and the originals no
// remaining transaction needs. It never removes an open transaction whose
// owner process is alive, never an interrupted one or one a base marks in
// flight, never one another process is settling right now (it only tries
// the transaction's lock, and keeps it when busy), and a refused or open
// one only when named by id — except an abandoned open one (owner gone, no
// changes, nobody working in it: see abandoned). Every item carries the bytes its state holds,
// kept ones too; freed is what removal frees (in a dry run, would free),
// originals included.
func (s *Store) GC(ctx context.Context, o GCOptions) (_ []GCItem, _ int64, err error) {
	defer exported(&err)
	if err := s.ensure(); err != nil {
		return nil, 0, err
	}
	ids := o.IDs
	g := &gcRun{o: o, named: len(ids) > 0, bases: map[string]*Tx{}, basePaths: map[string]bool{}, gone: map[string]bool{}, graces: map[string]graceOf{}}
	if !g.named {
		all, err := s.st().IDs()
		if err != nil {
			return nil, 0, err
		}
		ids = all
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return g.items, g.freed, err
		}
		if err := s.gcOne(ctx, g, id); err != nil {
			return g.items, g.freed, err
		}
	}
	items, err := s.gcWorktrees(ctx, o, g.basePaths, g.items)
	if err != nil {
		return items, g.freed, err
	}
	items, freed := s.gcPools(ctx, o, items, g.freed)
	for _, b := range g.bases {
		n, err := s.pruneOriginals(b, g.gone, o.DryRun)
		if err != nil {
			return items, freed, err
		}
		freed += n
	}
	// A grace that cannot be read kept its base's transactions; the rest
	// went as their own graces allow, and the user learns which file to
	// fix.
	return items, freed, g.configErrors()
}

// graceOf is a base's grace as gc read it, once per base and run.
type graceOf struct {
	keep time.Duration
	err  error
}

// grace is how long tx stays after it settled: OlderThan when given, else
// the gc_keep of the config that governs its base as it is now (read once
// per base), else config.DefaultGCKeep. A named transaction has none
// unless OlderThan is given: naming it is the user's choice.
func (g *gcRun) grace(tx *Tx) (time.Duration, error) {
	if g.o.OlderThan != nil {
		return *g.o.OlderThan, nil
	}
	if g.named {
		return 0, nil
	}
	key := tx.baseKey()
	if gr, ok := g.graces[key]; ok {
		return gr.keep, gr.err
	}
	var gr graceOf
	if p, err := project.Find(tx.Base()); err != nil {
		gr.err = err
	} else {
		gr.keep = p.Cfg.GCKeep
	}
	g.graces[key] = gr
	return gr.keep, gr.err
}

// configErrors are the distinct errors reading the bases' graces.
func (g *gcRun) configErrors() error {
	var errs []error
	seen := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(g.graces)) {
		if err := g.graces[key].err; err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			errs = append(errs, fmt.Errorf("gc kept the settled transactions over the base this config governs: %w", err))
		}
	}
	return errors.Join(errs...)
}

// gcRun is one gc over the store's transactions: what it looked at, what
// it freed, and what the originals' pruning needs afterwards.
type gcRun struct {
	o     GCOptions
	named bool
	items []GCItem
	freed int64
	bases map[string]*Tx // one transaction per base directory (its identity)
	// basePaths are the bases' paths, for the worktree sweep.
	basePaths map[string]bool
	gone      map[string]bool   // removed, or in a dry run would be
	marks     map[string]string // the bases' in-flight marks, read once when needed
	graces    map[string]graceOf
}

// add records an item, and what its removal frees.
func (g *gcRun) add(it GCItem) {
	if it.Removed {
		g.freed += it.Bytes
		g.gone[it.ID] = true
	}
	g.items = append(g.items, it)
}

// gcOne decides one transaction and removes it where it may go. An error
// ends the gc, with the item it was about recorded.
func (s *Store) gcOne(ctx context.Context, g *gcRun, id string) error {
	tx, err := s.Tx(id)
	var corrupt *state.CorruptError
	if err != nil && g.named && errors.As(err, &corrupt) {
		return s.gcCorrupt(ctx, g, id)
	}
	if err != nil {
		if g.named {
			return err
		}
		g.add(GCItem{ID: id, Bytes: diskUsage(filepath.Join(s.dir, "tx", id)), Reason: "kept: " + err.Error()})
		return nil
	}
	g.bases[tx.baseKey()] = tx
	g.basePaths[tx.Base()] = true
	it := GCItem{ID: id, Bytes: diskUsage(tx.StateDir())}
	it.Status, err = tx.Status()
	if err != nil {
		it.Reason = "kept: " + err.Error()
		g.add(it)
		return nil
	}
	if it.Status == StatusInterrupted {
		// Interrupted: recover decides, never gc; where its base is
		// not there, gc says how to tell recover what happened.
		if why, err := s.gcGoneBase(tx); err != nil {
			g.items = append(g.items, it)
			return err
		} else if why != "" {
			it.Reason = why
			g.add(it)
			return nil
		}
	}
	d := s.gcDecide(ctx, g, tx, it.Status)
	it.Removed, it.Reason, it.GraceEnds = d.remove, d.reason, d.graceEnds
	if it.Removed {
		if err := s.gcRemove(ctx, g, &it); err != nil {
			g.items = append(g.items, it)
			return err
		}
	}
	g.add(it)
	return nil
}

// gcRemove removes a transaction gc decided to remove without its lock,
// deciding again under the lock, since a commit may have started or ended
// meanwhile; it says in it why the transaction was kept after all.
func (s *Store) gcRemove(ctx context.Context, g *gcRun, it *GCItem) error {
	err := s.removeSettling(ctx, it.ID, func(tx *Tx) (bool, string, error) {
		st, err := tx.Status()
		if err != nil {
			return false, "", err
		}
		it.Status = st
		d := s.gcDecide(ctx, g, tx, st)
		it.GraceEnds = d.graceEnds
		if d.remove && st == StatusCommitted {
			// Decided under the lock that a commit, undo or gc of
			// another process takes too: what goes is what undo would
			// have read.
			_, err := tx.readJournal(appliedFile)
			it.UndoLost = err == nil
		}
		return d.remove, d.reason, nil
	}, g.o.DryRun)
	var k *keptError
	switch {
	case errors.As(err, &k):
		it.Removed, it.Reason, it.UndoLost = false, k.reason, false
	case errors.Is(err, state.ErrLocked):
		it.Removed, it.Reason, it.UndoLost = false, keptReason(err), false
	case errors.Is(err, fs.ErrNotExist):
		it.Removed, it.Reason, it.UndoLost = false, "gone: another airlock process removed it meanwhile", false
	case err != nil:
		return err
	}
	return nil
}

// gcCorrupt is a transaction the user named whose state is corrupt: it is
// removed whole (its staged tree too), never acted on — unless a base
// still marks its apply in flight or a process is settling it, which its
// own record can no longer tell.
func (s *Store) gcCorrupt(ctx context.Context, g *gcRun, id string) error {
	if g.marks == nil {
		marks, err := s.st().InflightMarks()
		if err != nil {
			return err
		}
		g.marks = marks
	}
	it := GCItem{ID: id, Status: StatusCorrupt, Bytes: diskUsage(filepath.Join(s.dir, "tx", id)), Removed: true, Reason: "corrupt, named"}
	if base, ok := g.marks[id]; ok {
		it.Removed, it.Reason = false, fmt.Sprintf("kept: corrupt, but base %s marks its apply in flight; run airlock recover --workdir %s", base, base)
	} else if err := s.removeSettling(ctx, id, nil, g.o.DryRun); err != nil {
		it.Removed, it.Reason = false, keptReason(err)
		if !errors.Is(err, state.ErrLocked) {
			g.items = append(g.items, it)
			return err
		}
	}
	g.add(it)
	return nil
}

// gcDecide is gcDecision plus the in-flight marker, which keeps a
// transaction whatever its status says: its journal is what recover needs.
func (s *Store) gcDecide(ctx context.Context, g *gcRun, tx *Tx, st Status) gcVerdict {
	d := gcDecision(ctx, g, tx, st)
	// Within its grace or not, a transaction its base marks in flight is
	// kept for recover, and the user is told so rather than of a grace.
	if (d.remove || !d.graceEnds.IsZero()) && s.inFlight(tx) {
		return gcVerdict{reason: fmt.Sprintf("kept: its base marks its apply in flight; run airlock recover --workdir %s", tx.Base())}
	}
	if d.remove {
		// Content a rollback or recover saved from the base is the only
		// copy of someone's edit: it goes only when the user names it.
		if saved := savedContent(tx); len(saved) > 0 {
			if !g.named {
				return gcVerdict{reason: fmt.Sprintf("kept: holds content saved from the base at %s; look at it, then airlock gc %s", describeSaved(tx, saved), tx.ID())}
			}
			d.reason += fmt.Sprintf("; with the content it had saved from the base at %s", describeSaved(tx, saved))
		}
	}
	return d
}

// gcVerdict is what gc decided about one transaction.
type gcVerdict struct {
	remove bool
	reason string
	// graceEnds: kept only for its grace, which ends then.
	graceEnds time.Time
}

// keptError carries why a transaction gc meant to remove is kept after
// all, decided under its lock.
type keptError struct{ reason string }

func (k *keptError) Error() string { return k.reason }

func keptReason(err error) string {
	if errors.Is(err, state.ErrLocked) {
		return "kept: another airlock process is settling it right now (a commit, discard or recover holds its lock); run gc again once that is done"
	}
	return "kept: " + err.Error()
}

// removeSettling removes transaction id while holding its settle lock, the
// lock Commit, Discard and Recover hold from start to end: a transaction
// one of them is working on is never removed from under it (its commit
// would fail half-way with its journal gone and leave the base marked in
// flight for a transaction that no longer exists). The lock is only tried,
// never waited for: a busy transaction fails with state.ErrLocked and is
// kept. recheck, if set, decides again under the lock; a "no" comes back
// as a *keptError. A dry run takes the lock the same way and removes
// nothing.
func (s *Store) removeSettling(ctx context.Context, id string, recheck func(*Tx) (bool, string, error), dryRun bool) error {
	st, err := s.st().Tx(id)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(st.Path("lock")); !dryRun || err == nil {
		// (A dry run writes nothing: a lock file never created was
		// never taken.)
		unlock, err := st.TryLock()
		if err != nil {
			return err
		}
		defer unlock()
		// Another gc may have removed it between the look and the lock.
		if _, err := os.Lstat(st.Dir()); err != nil {
			return fmt.Errorf("transaction %s: %w", id, err)
		}
	}
	var tx *Tx
	if recheck != nil {
		if tx, err = s.loadTx(st); err != nil {
			return err
		}
		ok, why, err := recheck(tx)
		if err != nil {
			return err
		}
		if !ok {
			return &keptError{why}
		}
	}
	if dryRun {
		return nil
	}
	if tx != nil {
		if err := tx.removeStagedNow(ctx); err != nil {
			return err
		}
	}
	return s.st().RemoveTx(id)
}

// removeStagedNow removes the staged workspace through its backend, here
// and now. gc never hands it to the detached remover commit uses: that
// process would delete the same files as the removal of the transaction
// right after, and the two raced ("readdirent: no such file or
// directory").
func (t *Tx) removeStagedNow(ctx context.Context) error {
	b, err := stage.Get(t.rec.Backend)
	if err != nil {
		return err
	}
	if err := b.Remove(ctx, t.Path()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove staged workspace %s: %w", t.Path(), err)
	}
	return nil
}

// inFlight reports whether the transaction's base names it as the apply in
// flight (or cannot tell: then it is kept too).
func (s *Store) inFlight(tx *Tx) bool {
	b, err := tx.stateBase()
	if err != nil {
		return true
	}
	id, ok, err := b.Inflight()
	return err != nil || (ok && id == tx.ID())
}

func gcDecision(ctx context.Context, g *gcRun, tx *Tx, st Status) gcVerdict {
	switch st {
	case StatusInterrupted:
		return gcVerdict{reason: fmt.Sprintf("kept: its apply was interrupted; run airlock recover --workdir %s (if that directory no longer exists, airlock gc %s clears it and keeps its journal)", tx.Base(), tx.ID())}
	case StatusOpen:
		if alive(tx.rec.PID) && tx.rec.PID != os.Getpid() {
			return gcVerdict{reason: fmt.Sprintf("kept: open, owner process %d is alive", tx.rec.PID)}
		}
		if !g.named {
			// Nothing of an abandoned one is lost: no grace, only the
			// age OlderThan asks for.
			var age time.Duration
			if g.o.OlderThan != nil {
				age = *g.o.OlderThan
			}
			ok, why := abandoned(ctx, tx, age)
			return gcVerdict{remove: ok, reason: why}
		}
		return gcVerdict{remove: true, reason: "open, owner gone, named"}
	case StatusRefused:
		if !g.named {
			return gcVerdict{reason: "kept: refused; fix and commit it, discard it, or name it to gc"}
		}
		return gcVerdict{remove: true, reason: "refused, named"}
	}
	grace, err := g.grace(tx)
	if err != nil {
		return gcVerdict{reason: "kept: its grace cannot be read: " + err.Error()}
	}
	settled := tx.rec.CreatedAt
	if evs, err := tx.Events(); err == nil && len(evs) > 0 {
		settled = evs[len(evs)-1].Time
	}
	if age := time.Since(settled); age < grace {
		ends := settled.Add(grace)
		why := fmt.Sprintf("kept: settled %s ago, within ", age.Round(time.Second))
		if g.o.OlderThan != nil {
			why += fmt.Sprintf("the %s asked for", fmtDuration(grace))
		} else {
			why += fmt.Sprintf("its base's grace of %s (gc_keep); it goes after %s, or now with airlock gc %s", fmtDuration(grace), ends.Local().Format("2006-01-02 15:04"), tx.ID())
		}
		return gcVerdict{reason: why, graceEnds: ends}
	}
	return gcVerdict{remove: true, reason: string(st)}
}

// fmtDuration says a grace as a person would: in days where it is whole
// days, else as Go does.
func fmtDuration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == 0:
		return "0"
	case d%day == 0:
		n := int64(d / day)
		return fmt.Sprintf("%d day%s", n, plural(int(n)))
	}
	return d.String()
}

// abandoned decides an open transaction whose owner is gone and that was
// not named: a headless agent run that never settled it (Claude Code's
// `claude -p --worktree` fires no WorktreeRemove) leaves one behind with
// its staged copy. It is removed when nothing would be lost and nobody
// works in it: no change (and no change under its staged .git, whose
// commits a settle would keep), no process with its working directory in
// the staged workspace, opened at least olderThan ago.
func abandoned(ctx context.Context, tx *Tx, olderThan time.Duration) (bool, string) {
	const keep = "kept: open; commit or discard it, or name it to gc"
	if age := time.Since(tx.rec.CreatedAt); age < olderThan {
		return false, fmt.Sprintf("%s (opened %s ago)", keep, age.Round(time.Second))
	}
	set, err := tx.diff(ctx)
	switch {
	case err != nil:
		return false, fmt.Sprintf("%s (its changes cannot be read: %v)", keep, err)
	case !set.Empty():
		a, m, d := set.Counts()
		return false, fmt.Sprintf("kept: open, owner gone, with changes (%d added, %d modified, %d deleted); commit or discard it, or name it to gc", a, m, d)
	case set.GitMeta > 0:
		return false, "kept: open, owner gone, its staged repository changed (commits a discard would keep); discard it, or name it to gc"
	}
	if pid, busy := workspaceUser(tx.Path()); busy {
		if pid > 0 {
			return false, fmt.Sprintf("%s (process %d works in its staged workspace)", keep, pid)
		}
		return false, keep
	}
	return true, "open, owner gone, no changes: abandoned"
}

// alive reports whether a process exists (signal 0 reaches it, or it
// exists but is not ours).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// pruneOriginals drops originals no remaining transaction over the base
// needs: neither as a merge base (its stat facts are in an unsettled
// transaction's base manifest) nor for undo (named by a committed
// transaction's applied journal) nor by a rewind (a checkpoint's content,
// kept while its transaction is open).
func (s *Store) pruneOriginals(rep *Tx, gone map[string]bool, dryRun bool) (int64, error) {
	b, err := rep.stateBase()
	if err != nil {
		return 0, err
	}
	if _, err := b.OriginalsDir(); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if !dryRun {
		// A commit over the base adds originals while it holds the base's
		// lock; a prune rewriting the index meanwhile would drop them.
		// Pruning can wait for the next gc: a busy base is skipped.
		unlock, err := b.TryLock()
		if errors.Is(err, state.ErrLocked) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		defer unlock()
	}
	ids, err := s.st().IDs()
	if err != nil {
		return 0, err
	}
	var open []*manifest.Manifest
	undo := map[string]bool{}
	// A checkpoint's content is kept while its transaction is open:
	// rewind reads it from here.
	checkpointed := map[string]bool{}
	for _, id := range ids {
		if gone[id] && dryRun {
			continue // counted as removed
		}
		tx, err := s.Tx(id)
		if err != nil {
			return 0, fmt.Errorf("cannot tell whether transaction %s needs kept originals (%w); nothing pruned", id, err)
		}
		if tx.baseKey() != rep.baseKey() {
			continue
		}
		st, err := tx.Status()
		if err != nil {
			return 0, err
		}
		switch {
		case st == StatusCommitted:
			if j, err := tx.readJournal(appliedFile); err == nil {
				for _, op := range j.Ops {
					undo[op.Before.Digest] = true
				}
			}
		case !st.Settled():
			checkpointed[id] = true
			m, err := tx.loadManifest(baseManifestFile)
			if err != nil {
				return 0, err
			}
			open = append(open, m)
		}
	}
	store, err := openOriginals(b)
	if err != nil {
		return 0, err
	}
	prune := store.Prune
	if dryRun {
		prune = store.Unused
	}
	return prune(func(r originals.Record) bool {
		if undo[r.Entry.Digest] {
			return true
		}
		if r.Kind == originals.KindCheckpoint {
			return checkpointed[r.TxID]
		}
		return slices.ContainsFunc(open, func(m *manifest.Manifest) bool {
			e, ok := m.Lookup(r.Entry.Path)
			return ok && manifest.SameStat(*e, r.Entry)
		})
	})
}

// diskUsage sums the sizes of the files under dir. A dir that is a
// symlink (a worktree transaction's staged subdirectory) is followed.
func diskUsage(dir string) int64 {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// baseKey names the directory a transaction opened, by its identity:
// transactions over one directory share its state whatever path they
// reached it by.
func (t *Tx) baseKey() string { return t.baseIdentity().Key() }

// savedContent lists the directories in a transaction's state that hold
// content a rollback or recover saved from the base (displaced-*): what
// another process wrote to a path the apply had changed, kept nowhere
// else.
func savedContent(tx *Tx) []string {
	ents, err := os.ReadDir(tx.StateDir())
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "displaced-") {
			out = append(out, filepath.Join(tx.StateDir(), e.Name()))
		}
	}
	return out
}

// describeSaved names saved-content directories and the files in them
// (the first few), each with the base path it was saved from where the
// transaction's events say (a recover or rollback records "PATH -> FILE").
func describeSaved(tx *Tx, dirs []string) string {
	from := map[string]string{}
	if evs, err := tx.Events(); err == nil {
		for _, e := range evs {
			list, _ := e.Detail["displaced"].([]any)
			for _, v := range list {
				str, _ := v.(string)
				if p, file, ok := strings.Cut(str, " -> "); ok {
					from[filepath.Base(file)] = p
				}
			}
		}
	}
	var files []string
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				if orig, ok := from[e.Name()]; ok {
					p = fmt.Sprintf("%s, saved from %s", p, orig)
				}
				files = append(files, p)
			}
			return nil
		})
	}
	desc := strings.Join(dirs, ", ")
	switch {
	case len(files) == 0:
	case len(files) <= 5:
		desc += fmt.Sprintf(" (%d file%s: %s)", len(files), plural(len(files)), strings.Join(files, "; "))
	default:
		desc += fmt.Sprintf(" (%d files: %s; …)", len(files), strings.Join(files[:5], "; "))
	}
	return desc
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// gcGoneBase says why gc keeps tx, interrupted over a base that is not
// there (no directory with its identity at its path), and how to
// resolve it: gc cannot tell a base deleted for good from one that is only
// not mounted right now, so it never clears one (see RecoverOptions). ""
// when the base is there: the usual rules keep it for recover.
func (s *Store) gcGoneBase(tx *Tx) (string, error) {
	if sameDir(tx.Base(), tx.baseIdentity()) {
		return "", nil // the base is there: recover it
	}
	b, err := tx.stateBase()
	if err != nil {
		return "", err
	}
	id, ok, err := b.Inflight()
	if err != nil {
		return "", err
	}
	if !ok || id != tx.ID() {
		return "", nil
	}
	// A base that is not there right now may come back (a volume not
	// mounted yet): gc never decides it is gone.
	return fmt.Sprintf("kept: its apply was interrupted and its base %s is not there; if it was deleted for good, run `airlock recover --workdir %s --base-gone` (its journal is kept); if it was moved, `airlock recover --workdir NEWPATH --moved`", tx.Base(), tx.Base()), nil
}
