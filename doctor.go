package airlock

import (
	"context"
	"errors"
	"fmt"
	"github.com/airlockdev/airlock/internal/state"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/launch"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/watchd"
)

// Check is one capability that airlock doctor reports.
type Check struct {
	Name      string `json:"name"`
	Supported bool   `json:"supported"`
	Reason    string `json:"reason"` // how it works here, or why not
}

// Doctor reports what this machine supports for transactions over base
// with their state in this store: same-path mode (mount namespaces), the
// containment of run's command and its terminal guard, the overlay
// backend (and overlay without root, for run), the reflink and worktree
// backends, the backend auto picks, and git.
func (s *Store) Doctor(base string) []Check {
	var out []Check
	// The probes run in the state directory, which the first open would
	// create anyway.
	os.MkdirAll(s.Dir(), 0o700)
	ok, why := launch.SamePathSupport()
	out = append(out, Check{"namespaces", ok, why})
	contain := containCheck()
	out = append(out, contain)
	out = append(out, terminalCheck())
	for _, name := range []string{stage.Overlay, stage.Reflink, stage.Worktree} {
		b, err := stage.Get(name)
		if err != nil {
			out = append(out, Check{name, false, err.Error()})
			continue
		}
		ok, why := b.Supported(s.Dir())
		if ok && name == stage.Overlay {
			ok, why = stage.ProbeOverlay(s.Dir())
		}
		out = append(out, Check{name, ok, why})
		if name == stage.Overlay {
			ok, why := stage.ProbeHosted(s.Dir(), func(fsType, data, dir string, replace []string) error {
				return launch.TryMount(launch.Mount{FSType: fsType, Source: fsType, Data: data}, dir, replace)
			})
			out = append(out, Check{checkRootlessOverlay, ok, why})
		}
	}
	if base == "" {
		base, _ = os.Getwd()
	}
	if b, err := stage.Choose(stage.Auto, s.Dir(), base); err == nil {
		detail := "copies every file (snapshot isolation; the state file system cannot clone, or the base is on another)"
		if b.Name() == stage.Reflink {
			detail = "clones every file (snapshot isolation at the cost of metadata)"
		}
		out = append(out, Check{"auto", true, "picks " + b.Name() + " for " + base + ": " + detail})
	}
	rc := s.recycleCheck(base, contain.Supported)
	out = append(out, rc, s.watchCheck(rc.Supported))
	out = append(out, s.clockChecks(base)...)
	gitOK, gitWhy := gitVersion()
	out = append(out, Check{"git", gitOK, gitWhy})
	return out
}

// recycleCheck reports whether copy-backend trees are recycled here, and
// what the base's pool holds. contained is the contain check's verdict.
func (s *Store) recycleCheck(base string, contained bool) Check {
	if !recycles() {
		return Check{"recycle", false, "staged trees are not recycled on this system: proving that no process still holds a pooled tree needs a PID namespace for every command, which only Linux has"}
	}
	if !contained {
		return Check{"recycle", false, "staged trees are not recycled here: a pooled tree is reused only after a moment when no command of this state directory runs, which airlock knows only of commands it contains, and run's command cannot be contained here (see contain)"}
	}
	if s.commands().UncontainedThisBoot() {
		return Check{"recycle", false, "staged trees are not recycled until this machine restarts: a command of this state directory ran uncontained in this boot, and what it left running could hold any pooled tree"}
	}
	why := "the tree a copy-backend run settles is kept (newest " + strconv.Itoa(poolMax) + " per base) and refreshed by the next open instead of copied afresh, once a moment has come since it settled when no command of this state directory ran (concurrent runs copy)"
	if abs, err := resolveBase(base); err == nil {
		if id, err := identity(abs); err == nil {
			// Only look: doctor creates no state for a base.
			dir := filepath.Join(s.Dir(), "bases", id.Key(), "pool")
			if state.CheckDir(dir) == nil {
				n, bytes := poolUsage(dir)
				why += fmt.Sprintf("; the pool of %s holds %d tree(s), %.1f MiB of files", abs, n, float64(bytes)/(1<<20))
			}
		}
	}
	return Check{"recycle", true, why}
}

// watchCheck reports whether the state root's watch daemon measures warm
// runs' refreshes here (internal/watchd), and whether it runs now.
// recycled is the recycle check's verdict.
func (s *Store) watchCheck(recycled bool) Check {
	switch {
	case !recycled:
		return Check{"watch", false, "nothing is recycled here, so there is nothing to keep watching between runs"}
	case os.Getenv(NoWatchEnv) == "1":
		return Check{"watch", false, NoWatchEnv + "=1: every run walks its tree and the base"}
	case !watchd.Available():
		return Check{"watch", false, "this program cannot start the watch daemon (it is not the airlock command)"}
	}
	limit := ""
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches"); err == nil {
		limit = "; inotify watches per user: " + strings.TrimSpace(string(b))
	}
	running := "not running now: the next run starts it"
	if watchd.New(s.Dir()).Running() {
		running = "running"
	}
	return Check{"watch", true, "a daemon (" + filepath.Join(s.Dir(), watchd.Dir) + ", " + running + ") keeps the watches of bases and pooled trees between runs: a warm run measures what changed, not every entry" + limit}
}

// containCheck reports how the processes of a run's command are
// accounted for here.
func containCheck() Check {
	ok, why := launch.ContainSupport()
	if ok {
		return Check{"contain", true, "run's command runs in " + why + ": whatever it leaves running is ended before the transaction settles, and a recycled tree's last writer is known to be gone"}
	}
	return Check{"contain", false, "no PID namespace can be had (" + why + "): run's command runs uncontained, what it leaves running is not ended, and no staged tree is recycled"}
}

// terminalCheck reports whether run's command (and a validator) is kept
// from typing into the terminal airlock was started from.
func terminalCheck() Check {
	ok, why := launch.TerminalSupport()
	if ok {
		return Check{"terminal", true, "TIOCSTI is blocked for run's command and validators: " + why}
	}
	return Check{"terminal", false, "TIOCSTI is not blocked (" + why + "): a command under run, or a validator, that has your terminal can type a command into it, which your shell runs after airlock returns, outside any transaction"}
}

// clockChecks report the timestamp clocks of the state's and the base's
// file systems (see Store.clocks): how soon after a change stat proves a
// file unchanged there, and that bytes decide within that window. A clock
// that was measured is supported; one assumed (it could not be measured,
// or measuring it would write into the base) is not, and says why.
func (s *Store) clockChecks(base string) []Check {
	stateClock, baseClock := s.clocks(s.Dir())
	out := []Check{{checkStateClock, stateClock.Measured, "state directory " + s.Dir() + " on " + stateClock.String()}}
	abs, err := resolveBase(base)
	if err != nil {
		return append(out, Check{checkBaseClock, false, err.Error()})
	}
	_, baseClock = s.clocks(abs)
	on := ""
	if sameFS(abs, s.Dir()) {
		on = " (the state directory's file system: measured there)"
	}
	return append(out, Check{checkBaseClock, baseClock.Measured, "base " + abs + on + " on " + baseClock.String()})
}

// The doctor checks of the timestamp clocks.
const (
	checkStateClock = "timestamps-state"
	checkBaseClock  = "timestamps-base"
)

// checkRootlessOverlay is the doctor check of overlay without root: `run
// --backend overlay` with the mount in the command's user namespace.
const checkRootlessOverlay = "overlay-rootless"

func gitVersion() (bool, string) {
	v, err := git.Installed(context.Background())
	if errors.Is(err, git.ErrNotFound) {
		return false, "git is not on PATH: git bases work, but no merge base from git history and no worktree backend"
	}
	if err != nil {
		return false, err.Error()
	}
	return true, v.Text + " at " + v.Path
}
