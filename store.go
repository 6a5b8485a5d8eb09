package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/state"
)

// DefaultProtect are the selectors protected unless NoDefaultProtect is set:
// files that make another tool run code outside the transaction (direnv on
// cd, the editor on open, CI on push) or that change airlock's own rules.
var DefaultProtect = []string{".envrc", ".vscode/tasks.json", ".github/workflows/", ".airlock.toml"}

// DefaultExclude are selectors for agent noise: never staged, and never
// committed either (see Record.Noise).
var DefaultExclude = []string{".aider*", ".claude/settings.local.json", ".claude/worktrees/"}

// Store is a state root: where transactions are recorded.
type Store struct {
	dir string
	// root is the opened state root, nil until it exists; a Store is
	// shared by concurrent calls (the MCP server's), one of which may
	// create it.
	root   atomic.Pointer[state.Store]
	rootMu sync.Mutex
}

// OpenStore opens the state root dir, or the default one
// ($AIRLOCK_STATE_DIR, $XDG_STATE_HOME/airlock, ~/.local/state/airlock)
// when dir is empty. A state root that does not exist yet is created only
// when first written, after the base it would serve has been checked: a
// state root inside the base must never be written.
func OpenStore(dir string) (*Store, error) {
	if dir == "" {
		d, err := state.DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	s := &Store{dir: abs}
	if _, err := os.Lstat(abs); err == nil {
		if err := s.ensure(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ensure opens (creating if needed) the state root.
func (s *Store) ensure() error {
	if s.root.Load() != nil {
		return nil
	}
	s.rootMu.Lock()
	defer s.rootMu.Unlock()
	if s.root.Load() != nil {
		return nil
	}
	st, err := state.Open(s.dir)
	if err != nil {
		return err
	}
	s.root.Store(st)
	return nil
}

// st is the opened state root (ensure has been called).
func (s *Store) st() *state.Store { return s.root.Load() }

// Dir is the state root.
func (s *Store) Dir() string { return s.dir }

// resolveMissing resolves the symlinks of the longest existing prefix of
// an absolute path that may not exist yet.
func resolveMissing(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p
	}
	return filepath.Join(resolveMissing(parent), filepath.Base(p))
}

// checkBase refuses a base that contains the state root or lies inside
// it, before anything is written to either.
func (s *Store) checkBase(base string) error {
	dir := resolveMissing(s.dir)
	if state.Nested(base, dir) {
		return fmt.Errorf("base %s and state root %s contain one another; set AIRLOCK_STATE_DIR outside the base", base, dir)
	}
	return s.ensure()
}

// OpenOptions says what to open a transaction over.
type OpenOptions struct {
	Base             string   // the base directory; "" means the current directory
	Exclude          []string // selectors not copied into the staged workspace
	Protect          []string // selectors whose changes need approval
	NoDefaultProtect bool     // drop DefaultProtect
	NoDefaultExclude bool     // drop DefaultExclude
	// NoConfig skips the base's .airlock.toml (undo replays the selectors
	// of the transaction it reverts instead, and brings the project's
	// validate along: see undoGate).
	NoConfig bool
	Backend  string // "", "auto" or a backend name
	// ForRun opens the transaction for Tx.Run (Store.Run sets it). A
	// backend that cannot stage on its own here may then stage a
	// workspace that only the command's namespace mounts: overlay without
	// root. Such a workspace is reached through Tx.Run alone; its path
	// outside the command is an empty mount point. A ForRun tree is
	// watched from open to the run's settling (see NoWatchEnv), so that
	// the change set is read from what was written to it, by the caller
	// too, rather than a walk.
	ForRun bool
	// Fresh stages a fresh copy even where a pooled tree could be
	// recycled (see pool.go).
	Fresh bool
	// Session is the agent session that opens the transaction (Claude
	// Code's session_id at WorktreeCreate): only that session's end
	// settles it.
	Session  string
	ID       string   // "" generates one
	Command  []string // recorded in the transaction and its receipt
	Progress func(done, total int)
}

// Record is a transaction's immutable open record.
type Record struct {
	ID         string `json:"id"`
	Base       Bytes  `json:"base"`
	BaseDevice uint64 `json:"base_device"`
	BaseInode  uint64 `json:"base_inode"`
	// BaseFS names the base's file system in a form that survives a
	// reboot where the file system has one (see state.Identity); empty in
	// records of earlier versions, which knew the device number alone.
	BaseFS  string    `json:"base_fs,omitempty"`
	Backend string    `json:"backend"`
	Staged  Bytes     `json:"staged"`
	Exclude Selectors `json:"exclude"`
	// Noise are the default excludes for agent noise in effect. Unlike
	// other excludes they work both ways: what an agent writes there
	// (aider's history, Claude's local settings) is not staged and never
	// part of the change set, so it neither lands in the base nor makes the
	// next run over the same base refuse.
	Noise     Selectors `json:"noise,omitempty"`
	Protect   Selectors `json:"protect"`
	Command   []Bytes   `json:"command,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	PID       int       `json:"pid"`
	PortBase  int       `json:"port_base"`
	Warnings  []string  `json:"warnings,omitempty"`
	// The project config in effect at open (.airlock.toml, read from the
	// base): its path ("" when none), its validate command (the default of
	// a commit that names none) and what the stop hooks do.
	Config   string `json:"config,omitempty"`
	Validate string `json:"validate,omitempty"`
	StopHook string `json:"stop_hook,omitempty"`
	// Project is the project root when the base is a subdirectory of it
	// (see project), and Under the base relative to it: the selectors above
	// are matched against paths relative to Project, and the validate runs
	// on a candidate of the whole project. Both are empty when the base is
	// its own project root.
	Project manifest.Bytes `json:"project,omitempty"`
	Under   manifest.Bytes `json:"under,omitempty"`
	// Staging says how the workspace was made (a fresh copy or a recycled
	// tree); nil in records of earlier versions.
	Staging *Staging `json:"staging,omitempty"`
	// Session is the agent session that opened it (OpenOptions.Session).
	Session string `json:"session,omitempty"`
	// Undoes is the transaction whose commit this one reverts (an undo's),
	// which its receipt names.
	Undoes string `json:"undoes,omitempty"`
	// PartOf is the transaction a partial commit took this one's change
	// set from, and Select the selectors that chose it (part.go); a part
	// has no staged tree of its own.
	PartOf string    `json:"part_of,omitempty"`
	Select Selectors `json:"select,omitempty"`
	// Digest seals the record (sha256 of its JSON with this field empty):
	// a hand edit that still parses, such as dropping a protected
	// selector, is refused rather than acted on.
	Digest string `json:"digest"`
}

// seal returns the record's digest.
func (r Record) seal() (string, error) {
	r.Digest = ""
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	return manifest.HashBytes(b), nil
}

// Selectors are exclude or protect selectors as the open record keeps
// them: each in Bytes' JSON form, so that one that is not valid
// UTF-8 (a literal file name) reads back as the same bytes. As plain
// strings it came back as U+FFFD, and a commit in another process than the
// open no longer protected the path.
type Selectors []string

func (s Selectors) MarshalJSON() ([]byte, error) {
	out := make([]Bytes, len(s))
	for i, sel := range s {
		out[i] = Bytes(sel)
	}
	return json.Marshal(out)
}

func (s *Selectors) UnmarshalJSON(data []byte) error {
	var in []Bytes
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	*s = nil
	if in != nil {
		*s = make(Selectors, len(in))
	}
	for i, sel := range in {
		(*s)[i] = string(sel)
	}
	return nil
}

// State file names inside a transaction's directory.
const (
	recordFile        = "open.json"
	baseManifestFile  = "base.manifest.json"
	stagedOpenFile    = "staged.manifest.json"
	stagedDir         = "staged"
	changesDir        = "changes"
	changeSetFile     = "changes/changeset.json"
	objectsDir        = "changes/objects"
	journalDir        = "journal"
	receiptFile       = "receipt.json"
	appliedFile       = "applied.json"
	gitFile           = "git.json"
	portSpan          = 10
	eventOpened       = "opened"
	eventRefused      = "refused"
	eventApplying     = "applying"
	eventCommitted    = "committed"
	eventNoChanges    = "no_changes"
	eventDiscarded    = "discarded"
	eventRecovered    = "recovered"
	eventRollForward  = "recovered_forward"
	eventStagedRemove = "staged_removed"
	eventStagedPooled = "staged_pooled"
	// eventPartCommitted: a partial commit landed part of the change set
	// (part.go); the transaction stays open with the rest.
	eventPartCommitted = "part_committed"
)

// portsTaken lists the port bases of transactions still open: of those
// the index does not know to be settled (see state.TxIndex), every one with
// a port whose records do not show it settled, unreadable ones included.
// Those it reads and finds settled it adds to the index, so that a warm
// open reads the records of the transactions still open, not of every
// transaction gc has not removed yet.
func (s *Store) portsTaken(ix *state.TxIndex) ([]int, error) {
	var taken []int
	for _, id := range ix.Unsettled() {
		st, err := s.st().Tx(id)
		if err != nil {
			continue
		}
		t, err := s.loadTx(st)
		if err == nil {
			if status, err := t.Status(); err == nil && status.Settled() {
				ix.Settled(id)
				continue
			}
		}
		p, ok, err := st.PortBase()
		if (err != nil || !ok) && t != nil && t.rec.PortBase != 0 {
			// The record holds the port too: a crash may have lost the
			// port file's name, not the record's (see AllocatePorts).
			p, ok, err = t.rec.PortBase, true, nil
		}
		if err != nil || !ok {
			continue
		}
		taken = append(taken, p)
	}
	return taken, nil
}

// Tx loads a transaction by id.
func (s *Store) Tx(id string) (_ *Tx, err error) {
	defer exported(&err)
	if err := state.ValidID(id); err != nil {
		return nil, err
	}
	if err := s.ensure(); err != nil {
		return nil, err
	}
	st, err := s.st().Tx(id)
	if err != nil {
		return nil, err
	}
	return s.loadTx(st)
}

func (s *Store) loadTx(st *state.Tx) (*Tx, error) {
	var rec Record
	if err := st.Read(recordFile, &rec); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("transaction %s has no open record %s: it was never fully opened; remove it with airlock gc", st.ID(), st.Path(recordFile))
		}
		return nil, err
	}
	if rec.ID != st.ID() {
		return nil, fmt.Errorf("open record %s names transaction %q, not %q: the state was altered", st.Path(recordFile), rec.ID, st.ID())
	}
	if d, err := rec.seal(); err != nil || d != rec.Digest {
		return nil, &state.CorruptError{Path: st.Path(recordFile), Err: errors.New("the open record does not match its digest (it was edited)")}
	}
	// Every backend stages at the same place in the transaction's state;
	// a record naming any other path (the base, a user's directory) was
	// written by someone else, and gc or a discard would remove that
	// directory as the staged tree.
	if string(rec.Staged) != st.Path(stagedDir) {
		return nil, &state.UnsafeError{Path: st.Path(recordFile), Reason: fmt.Sprintf("names %s as its staged workspace, not %s, where airlock stages: the record was altered, and nothing of it is used", rec.Staged, st.Path(stagedDir))}
	}
	return &Tx{store: s, st: st, rec: rec}, nil
}

// IDs lists every transaction in the store.
func (s *Store) IDs() ([]string, error) {
	if err := s.ensure(); err != nil {
		return nil, err
	}
	return s.st().IDs()
}

// resolveBase turns the user's --workdir into the absolute, symlink-free
// path of a directory that may be a base.
func resolveBase(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("current directory: %w", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("base %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("base %s: %w", abs, unwrapPathErr(err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("base %s: %w", real, unwrapPathErr(err))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("base %s is not a directory", real)
	}
	if real == "/" {
		return "", fmt.Errorf("base %s: refusing the filesystem root; choose a project directory", real)
	}
	if home, err := os.UserHomeDir(); err == nil {
		if h, err := filepath.EvalSymlinks(home); err == nil && h == real {
			return "", fmt.Errorf("base %s is your home directory; choose a project directory", real)
		}
	}
	return real, nil
}

// identity measures the directory at path (see state.Identity).
func identity(path string) (state.Identity, error) {
	id, err := state.Identify(path)
	if err != nil {
		return state.Identity{}, fmt.Errorf("base %s: %w", path, unwrapPathErr(err))
	}
	return id, nil
}

// baseIdentity is the identity of the base the transaction opened.
func (t *Tx) baseIdentity() state.Identity {
	return state.Identity{FS: t.rec.BaseFS, Dev: t.rec.BaseDevice, Ino: t.rec.BaseInode}
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkNotInterrupted refuses when an apply over the base was cut short:
// one that its own state marks, or one that any other base state marks
// and that names the base's path or identity (state.InflightNaming):
// fail-closed wins every doubt about which directory an apply was made
// over. It waits for each base's lock first, so a commit that is merely
// running in another process is not mistaken for an interrupted one.
func (s *Store) checkNotInterrupted(ctx context.Context, b *state.Base, id state.Identity) error {
	unlock, err := b.Lock(ctx)
	if err != nil {
		return err
	}
	txID, ok, err := b.Inflight()
	unlock()
	if err != nil {
		return err
	}
	if ok {
		r := interrupted(b.Path(), txID)
		if rec := b.Recorded(); rec != "" {
			// Found by the directory's identity, not by this path: say
			// which path the apply was made over.
			if sameDir(rec, id) {
				r.Reason += fmt.Sprintf(" (the apply was made over %s, the same directory by its identity)", rec)
			} else {
				r.Reason += fmt.Sprintf(" (the apply was made over %s, which is no longer this directory: %s has its identity (%s), so it is that directory moved or its file system mounted elsewhere, or a new directory the file system gave the inode of a deleted one; if %s was deleted, run `airlock recover --workdir %s --base-gone` instead)", rec, b.Path(), id, rec, rec)
			}
		}
		return r
	}
	others, err := s.st().InflightNaming(ctx, b.Path(), id, b, true)
	if err != nil || len(others) == 0 {
		return err
	}
	return interruptedElsewhere(b.Path(), id, others[0])
}

// interruptedElsewhere is the refusal for an apply in flight that another
// base state marks and that names this base's path or identity.
func interruptedElsewhere(base string, id state.Identity, e state.Elsewhere) *Refusal {
	r := interrupted(base, e.TxID)
	switch {
	case e.Recorded.Match(id) == state.Same:
		r.Reason += fmt.Sprintf(" (the apply was made over %s, the same directory by its identity; its state is kept under %s)", e.Base.Path(), e.Base.Dir())
	case e.Base.Path() != base:
		r.Reason += fmt.Sprintf(" (the apply was made over %s)", e.Base.Path())
	default:
		r.Reason += fmt.Sprintf(" when %s was %s; it is %s now: the file system that held it may not be mounted, or be back under another device number, or the directory was replaced; run `airlock recover` there to see which", base, e.Recorded, id)
	}
	return r
}

func interrupted(base, id string) *Refusal {
	r := refuse(InterruptedApply, nil, "an apply of transaction %s over %s was interrupted", id, base)
	r.Remedy = Remedy{Kind: RemedyRecover, Tx: id, Base: base}
	return r
}
