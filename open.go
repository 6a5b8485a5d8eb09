package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlockdev/airlock/internal/config"
	"github.com/airlockdev/airlock/internal/gitbase"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/project"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/selector"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/state"
	"github.com/airlockdev/airlock/internal/watch"
	"github.com/airlockdev/airlock/internal/watchd"
)

// Open opens a transaction: it checks the preconditions, measures the base
// and stages the workspace. On any failure nothing is left behind and the
// base is untouched.
func (s *Store) Open(ctx context.Context, o OpenOptions) (_ *Tx, err error) {
	defer exported(&err)
	return s.open(ctx, o, nil)
}

// replay is what undo opens its transaction with besides OpenOptions: a
// NoConfig open reads no config, even to find the project, so the project
// comes from the transaction it reverts, as that one recorded it, and the
// project's validate from undoGate.
type replay struct {
	project  *project.Project
	validate string
	undoes   string // the transaction whose commit it reverts
}

// open is Open, with the project an undo replays (rp, nil for any other
// open). Its steps: the base and its state; the rules the project's config
// and o give; the backend; the transaction's state; the staged workspace
// with the base's manifest; the open record.
func (s *Store) open(ctx context.Context, o OpenOptions, rp *replay) (*Tx, error) {
	base, err := resolveBase(o.Base)
	if err != nil {
		return nil, err
	}
	if err := s.checkBase(base); err != nil {
		return nil, err
	}
	bid, err := identity(base)
	if err != nil {
		return nil, err
	}
	b, err := s.st().Base(base)
	if err != nil {
		return nil, err
	}
	if err := s.checkNotInterrupted(ctx, b, bid); err != nil {
		return nil, err
	}
	r, err := openRules(base, o, rp)
	if err != nil {
		return nil, err
	}
	backend, hosted, err := s.chooseBackend(base, o, r)
	if err != nil {
		return nil, err
	}
	if o.ID != "" {
		if err := state.ValidID(o.ID); err != nil {
			return nil, fmt.Errorf("--id: %w", err)
		}
	}
	st, err := createTx(s.st(), o.ID, func() string { return state.NewID(time.Now()) })
	if err != nil {
		return nil, err
	}
	id := st.ID()
	// The ports are allocated while the workspace is staged: neither
	// depends on the other, and the allocation waits on the global lock
	// and reads the open transactions' records.
	ports := allocatePorts(ctx, s, id)
	ok := false
	defer func() {
		if !ok {
			ports() // nothing may write into the transaction's state once it is removed
			s.st().RemoveTx(id)
		}
	}()
	// From the tree's measurement on, a run's every write is watched
	// (watch.go): the watch is set while open saves what it measured.
	// A recycled tree's watch was set before anything measured it (early).
	var wd *watched
	watchRun := func(res *stage.Result, early *watch.Watch) {
		if o.ForRun {
			wd = startWatch(backend.Name(), st.Path(stagedDir), res.Staged, hosted, early)
		} else if early != nil {
			early.Stop()
		}
	}
	res, staging, err := s.stageOpen(ctx, b, st, base, backend, hosted, o, r, watchRun)
	defer func() {
		if !ok {
			wd.stop(false)
		}
	}()
	if err != nil {
		return nil, err
	}
	port, err := ports()
	if err != nil {
		return nil, err
	}
	rec := Record{
		ID: id, Base: Bytes(base), BaseDevice: bid.Dev, BaseInode: bid.Ino, BaseFS: bid.FS,
		Backend: backend.Name(), Staged: Bytes(st.Path(stagedDir)),
		Exclude: r.exclude, Noise: r.noise, Protect: r.protect, CreatedAt: time.Now().UTC(), PID: os.Getpid(),
		PortBase: port, Warnings: res.Warnings,
		Config: r.cfg.Path, Validate: r.cfg.Validate, StopHook: string(r.cfg.Hooks.Stop),
		Staging: staging, Session: o.Session,
	}
	if r.proj.Under != "" {
		rec.Project, rec.Under = manifest.Bytes(r.proj.Root), manifest.Bytes(r.proj.Under)
	}
	for _, a := range o.Command {
		rec.Command = append(rec.Command, Bytes(a))
	}
	if rp != nil {
		rec.Undoes = rp.undoes
	}
	if rec.Digest, err = rec.seal(); err != nil {
		return nil, err
	}
	// The record's name is made durable by the append of the opened event
	// below: it creates the event log, and so syncs the directory (once
	// for the record, the log and the port file). Everything the record
	// depends on was synced before it was published (see saveOpened).
	if err := st.WriteOnceUnsynced(recordFile, rec); err != nil {
		return nil, err
	}
	if err := st.Append(state.Event{Time: time.Now().UTC(), Event: eventOpened, Detail: map[string]any{"entries": len(res.Base.Entries)}}); err != nil {
		return nil, err
	}
	tx := &Tx{store: s, st: st, rec: rec, opened: map[string]*manifest.Manifest{baseManifestFile: res.Base, stagedOpenFile: res.Staged}, watch: wd}
	if err := tx.guardRepo(ctx); err != nil {
		return nil, err
	}
	ok = true
	return tx, nil
}

// allocatePorts starts the allocation of transaction id's ports
// (state.Store.AllocatePorts) and returns what waits for its result; the
// wait may be called more than once.
func allocatePorts(ctx context.Context, s *Store, id string) func() (int, error) {
	type result struct {
		port int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		port, err := s.st().AllocatePorts(ctx, id, s.portsTaken)
		done <- result{port, err}
	}()
	return sync.OnceValues(func() (int, error) {
		r := <-done
		return r.port, r.err
	})
}

// createTx makes the state of a new transaction: id, or where id is ""
// one newID generates. A generated id is the second and 16 random bits,
// so opens started in the same second may draw the same one (one chance
// in 65536 for two): that is no reason to fail, and another is drawn. A
// chosen id that is taken fails.
func createTx(st *state.Store, id string, newID func() string) (*state.Tx, error) {
	if id != "" {
		return st.Create(id)
	}
	for tries := 1; ; tries++ {
		tx, err := st.Create(newID())
		if err == nil || !errors.Is(err, fs.ErrExist) || tries == 8 {
			return tx, err
		}
	}
}

// rules are what a transaction is opened under: the project and its
// config, and the selectors the config and the options give.
type rules struct {
	proj *project.Project
	cfg  *config.Config
	// exclude are the excludes recorded (noise included), excludeSel
	// matches them relative to the project's root; noise are the default
	// excludes for agent noise in effect, relative to the base.
	exclude    []string
	excludeSel *project.Selector
	noise      []string
	protect    []string
}

// openRules reads the project config and gathers the selectors. The
// config comes from the base, never from a staged tree, and is recorded:
// later changes to it do not alter this transaction. It is the project's:
// the nearest .airlock.toml at or above the base (see project), whose
// selectors are matched relative to its root.
func openRules(base string, o OpenOptions, rp *replay) (*rules, error) {
	r := &rules{}
	if rp != nil {
		r.proj = rp.project
	} else {
		p, err := project.Find(base)
		if err != nil {
			return nil, err
		}
		r.proj = p
	}
	r.cfg = r.proj.Cfg
	if o.NoConfig {
		r.cfg = config.Default()
		if rp != nil {
			r.cfg.Validate = rp.validate
		}
	}
	r.exclude = slices.Concat(r.cfg.Exclude, o.Exclude)
	if !o.NoDefaultExclude && r.cfg.DefaultExcludes {
		r.noise = DefaultExclude
		r.exclude = append(slices.Clone(DefaultExclude), r.exclude...)
	}
	sel, err := project.NewSelector(r.exclude, r.proj.Under)
	if err != nil {
		return nil, fmt.Errorf("--exclude: %w", err)
	}
	r.excludeSel = sel
	r.protect = protectOf(r.cfg, o.Protect, o.NoDefaultProtect)
	if _, err := selector.New(r.protect); err != nil {
		return nil, fmt.Errorf("--protect: %w", err)
	}
	return r, nil
}

// chooseBackend picks the backend o or the project config names, and says
// whether it stages hosted: only in the command's namespace (see
// OpenOptions.ForRun). An error names the config where the config chose.
func (s *Store) chooseBackend(base string, o OpenOptions, r *rules) (stage.Backend, bool, error) {
	name, from := o.Backend, ""
	if name == "" || name == stage.Auto {
		name = r.cfg.Backend
		if name != stage.Auto {
			from = " (from " + r.cfg.Path + ")"
		}
	}
	backend, err := stage.Choose(name, s.Dir(), base)
	if err != nil {
		return nil, false, fmt.Errorf("%w%s", err, from)
	}
	ok, why := backend.Supported(s.Dir())
	if ok {
		return backend, false, nil
	}
	h, canHost := backend.(stage.Hoster)
	if !o.ForRun || !canHost {
		return nil, false, fmt.Errorf("backend %s%s is not supported here: %s", backend.Name(), from, why)
	}
	if ok, hwhy := h.SupportedHosted(s.Dir()); !ok {
		return nil, false, fmt.Errorf("backend %s%s is not supported here: %s", backend.Name(), from, hwhy)
	}
	return backend, true, nil
}

// backendFrom is the " (from <config>)" a staging error names when the
// project config chose the backend.
func backendFrom(o OpenOptions, r *rules) string {
	if (o.Backend == "" || o.Backend == stage.Auto) && r.cfg.Backend != stage.Auto {
		return " (from " + r.cfg.Path + ")"
	}
	return ""
}

// stageOpen stages the workspace (a recycled tree where one fits, else
// the backend's fresh copy) and saves what open measured into st: git's
// snapshot of the base, the base's manifest and symlinks, the staged
// manifest. Once the workspace is staged, it calls measured with what
// staging measured (and the watch a recycled tree was claimed with, which
// measured then owns), beside the saving, and waits for it before it
// returns.
func (s *Store) stageOpen(ctx context.Context, b *state.Base, st *state.Tx, base string, backend stage.Backend, hosted bool, o OpenOptions, r *rules, measured func(*stage.Result, *watch.Watch)) (*stage.Result, *Staging, error) {
	// What can run beside the rest (the watch; removing what is left of
	// a recycled tree's pool slot) does, and is waited for on return.
	var beside sync.WaitGroup
	defer beside.Wait()
	staged := st.Path(stagedDir)
	// What git knows of the base (HEAD, the tracked paths that were dirty)
	// is read while the workspace is staged: it costs one git status,
	// which then hides behind the copy. A recycled tree's open starts it
	// once the daemon has said whether the base changed since the pooled
	// tree's open, whose snapshot stands for this one where nothing did
	// (reuseGit).
	staging := &Staging{}
	type gitResult struct {
		snap *gitbase.Snapshot
		err  error
	}
	gitDone := make(chan gitResult, 1)
	var gitOnce sync.Once
	// startGit takes the snapshot; afterToken says this open's token of
	// the base (tokenTaken) is waited for first, so that a later open may
	// reuse the snapshot where nothing changed after that token.
	var tokenTaken func()
	startGit := func(reused *gitbase.Snapshot, inputs string, afterToken bool) {
		gitOnce.Do(func() {
			if reused != nil {
				staging.GitInputs = inputs
				gitDone <- gitResult{snap: reused}
				return
			}
			go func() {
				if afterToken {
					tokenTaken()
					inputs = gitbase.Inputs()
				}
				snap, err := gitbase.Take(ctx, base)
				if err == nil && afterToken {
					staging.GitInputs = inputs
				}
				gitDone <- gitResult{snap, err}
			}()
		})
	}
	recycling := backend.Name() == stage.Copy && !o.Fresh && recycles()
	if !recycling {
		startGit(nil, "", false)
	}
	// Agent noise is where the agent writes it: relative to the base, in
	// which it works (as the diff ignores it), and the other excludes are
	// the project's, relative to its root.
	noiseSel, err := selector.New(r.noise)
	if err != nil {
		return nil, nil, err
	}
	skip := func(rel string, isDir bool) bool {
		return r.excludeSel.MatchSelf(rel, isDir) || noiseSel.MatchSelf(rel, isDir)
	}
	// Staging digests what stat cannot prove later, by the timestamp
	// clocks of the file systems involved (see stage.Result).
	stateClock, baseClock := s.clocks(base)
	req := stage.Request{Base: base, Dir: staged, Skip: skip, Hosted: hosted, Progress: o.Progress, StateClock: stateClock, BaseClock: baseClock}
	var res *stage.Result
	// Before the base is measured, this open takes a token of it: the tree
	// this run settles may be pooled, and its refresh then measures only
	// what changed in the base after this moment (internal/watchd). A
	// recycled tree's refresh gets it with the daemon's word on the base,
	// drawn at that answer's moment (renewed); otherwise it is asked for on
	// its own (askToken). tokenTaken waits for it before anything measures
	// the base.
	wantToken := backend.Name() == stage.Copy && o.ForRun
	var tokenOnce sync.Once
	tokenDone := make(chan struct{})
	askToken := func() {
		tokenOnce.Do(func() {
			go func() {
				defer close(tokenDone)
				if wantToken {
					if staging.BaseToken = s.baseToken(base); staging.BaseToken != "" {
						staging.SkipKey = skipKey(r)
					}
				}
			}()
		})
	}
	renewed := func(tok string) {
		if tok == "" {
			askToken()
			return
		}
		tokenOnce.Do(func() {
			if wantToken {
				staging.BaseToken, staging.SkipKey = tok, skipKey(r)
			}
			close(tokenDone)
		})
	}
	tokenTaken = func() { askToken(); <-tokenDone }
	defer func() {
		tokenOnce.Do(func() { close(tokenDone) }) // never asked for
		<-tokenDone
	}()
	var early *watch.Watch
	// What a recycled tree leaves of its pool slot is removed once the
	// manifests are saved, which may link its files (stage.Result), and
	// beside what follows; the transaction's removal takes it on an error.
	var afterSave []func()
	if backend.Name() == stage.Copy && !o.Fresh {
		// A run's watch is set as the pooled tree is claimed, before
		// anything measures it.
		watchIt := o.ForRun && watchable(backend.Name(), hosted) == ""
		res, staging.Recycled, early, staging.NotRecycled = s.recycle(ctx, b, st.Dir(), req, skipKey(r), watchIt, tokenTaken, func(f func()) { afterSave = append(afterSave, f) },
			func(changed *watchd.Changes, token, inputs, file string) {
				renewed(token)
				startGit(reuseGit(base, changed, inputs, file), inputs, true)
			})
	}
	startGit(nil, "", true)
	if res == nil {
		tokenTaken()
		res, err = backend.Stage(ctx, req)
	}
	if err == nil {
		err = scrubStagedGit(ctx, res, staged, base)
	}
	if err == nil {
		beside.Go(func() { measured(res, early) })
	} else if early != nil {
		early.Stop()
	}
	g := <-gitDone
	if err != nil {
		// A backend the project config chose (worktree over a base that is
		// not a git repository) is refused naming the config.
		return nil, nil, fmt.Errorf("%w%s", err, backendFrom(o, r))
	}
	if g.err != nil {
		return nil, nil, g.err
	}
	if g.snap != nil && staging.GitInputs != "" && !gitContained(base, res.Base) {
		staging.GitInputs = "" // a later open must run git status again
	}
	if g.snap != nil {
		// Its name is synced with the manifests' (see saveOpened).
		if err := st.WriteOnceUnsynced(gitFile, g.snap); err != nil {
			return nil, nil, err
		}
	}
	if err := saveOpened(st, res); err != nil {
		return nil, nil, err
	}
	for _, f := range afterSave {
		beside.Go(f)
	}
	staging.WalkNs = res.WalkNs
	// The staged root's identity: settling pools only this very
	// directory, never what a command may have put at its path.
	if root, err := manifest.Lstat(staged); err == nil && root.Kind == manifest.KindDir {
		staging.RootDevice, staging.RootInode = root.Dev, root.Ino
	}
	return res, staging, nil
}

// reuseGit returns the git snapshot a pooled tree's open took (file),
// where it stands for one taken now: nothing git reads in the base changed
// since that open's token (changed, the daemon's word: nothing, or only
// what a git command that changed nothing leaves, see gitUntouched), the
// repository is the base's own, with its git directory within it (so that
// its HEAD, refs and index are watched with it), and git reads the same
// configuration as then (inputs, gitbase.Inputs). Otherwise nil: git
// status runs.
func reuseGit(base string, changed *watchd.Changes, inputs, file string) *gitbase.Snapshot {
	if !gitUntouched(base, changed) || inputs == "" || file == "" || inputs != gitbase.Inputs() {
		return nil
	}
	data, err := state.ReadFile(file)
	if err != nil {
		return nil
	}
	var snap gitbase.Snapshot
	if json.Unmarshal(data, &snap) != nil || snap.Head == "" || snap.Prefix != "" {
		return nil
	}
	if fi, err := os.Lstat(filepath.Join(base, ".git")); err != nil || !fi.IsDir() {
		return nil
	}
	return &snap
}

// gitContained reports whether what git status reads of the base's
// repository lies in the base itself, where the daemon's watch of it sees
// every change (reuseGit): its git directory is a directory of the base
// (m, the base as open measured it) that git takes for a repository (HEAD,
// objects and refs in it: else git looks further up, where nothing is
// watched) with no symlink beneath it (a work tree made by git-new-workdir
// links its refs, objects and config to another repository) and no
// commondir file (a linked work tree's), and its config names nothing
// outside (gitOutside).
func gitContained(base string, m *manifest.Manifest) bool {
	kind := func(p string) manifest.Kind {
		i, found := slices.BinarySearchFunc(m.Entries, p, func(e manifest.Entry, p string) int { return strings.Compare(e.Path, p) })
		if !found {
			return manifest.KindNone
		}
		return m.Entries[i].Kind
	}
	if kind(".git") != manifest.KindDir || kind(".git/HEAD") != manifest.KindFile || kind(".git/objects") != manifest.KindDir || kind(".git/refs") != manifest.KindDir {
		return false
	}
	es := m.Entries
	// The paths beneath it, from the first (a name such as .git-x sorts
	// between .git and them).
	i, _ := slices.BinarySearchFunc(es, ".git/", func(e manifest.Entry, p string) int { return strings.Compare(e.Path, p) })
	for ; i < len(es) && strings.HasPrefix(es[i].Path, ".git/"); i++ {
		if es[i].Kind == manifest.KindSymlink || es[i].Path == ".git/commondir" {
			return false
		}
	}
	cfg, err := os.ReadFile(filepath.Join(base, ".git", "config"))
	return err == nil && !gitbase.NamesOutside(cfg)
}

// gitUntouched reports whether what the daemon named changed in the base
// leaves everything git status reads as it was: nothing, loose objects
// (content-addressed, never written again once made: a commit makes new
// ones, and names its ref and index besides; the daemon names one made as
// git makes them, a temporary file linked to its name, at every answer
// after), or what a `git status` in the base that wrote nothing leaves (it
// takes the index lock to refresh the index and drops it again: the lock,
// gone now, and the git directory, whose times moved with it), on a git
// directory that is still this user's to read (a chown or chmod of it
// names it too, and git refuses a repository of another owner). A write of
// the index renames the lock over it, and names the index.
func gitUntouched(base string, changed *watchd.Changes) bool {
	if changed == nil {
		return false
	}
	for _, p := range changed.Trees {
		if !strings.HasPrefix(p, ".git/objects/") {
			return false
		}
	}
	dir, lock := false, false
	for _, p := range changed.Paths {
		switch {
		case strings.HasPrefix(p, ".git/objects/"), p == ".git/objects":
		case p == ".git":
			dir = true
		case p == ".git/index.lock":
			if _, err := os.Lstat(filepath.Join(base, p)); !errors.Is(err, fs.ErrNotExist) {
				return false
			}
			lock = true
		default:
			return false
		}
	}
	if !dir {
		return !lock
	}
	var st syscall.Stat_t
	return lock && syscall.Lstat(filepath.Join(base, ".git"), &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR &&
		int(st.Uid) == os.Geteuid() && st.Mode&0o700 == 0o700
}

// saveOpened saves the manifests open measured: the base's (written
// while the staged one is), its symlinks, kept apart so that every
// commit's protection check (project.LinkAliases) need not read the whole base
// manifest, and the staged workspace's (each written anew, or linked where
// the refresh found it unchanged: stage.Result). The transaction directory
// is synced once all of them and the git snapshot are in: the open record
// is published only after that, so a record that survives a crash finds
// every file it names.
func saveOpened(st *state.Tx, res *stage.Result) error {
	baseSaved := make(chan error, 1)
	go func() { baseSaved <- res.Base.SaveAs(st.Path(baseManifestFile), res.BaseFile) }()
	err := st.WriteUnsynced(baseLinksFile, project.BaseLinks(res.Base))
	if err == nil {
		err = res.Staged.SaveAs(st.Path(stagedOpenFile), res.StagedFile)
	}
	if berr := <-baseSaved; err == nil {
		err = berr
	}
	if err == nil {
		err = safefs.SyncDir(st.Dir())
	}
	return err
}
