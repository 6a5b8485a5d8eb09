package fsclock

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Clock is what airlock knows of one file system's timestamps.
type Clock struct {
	// Type names the file system ("ext4", "tmpfs", "nfs", ...).
	Type string `json:"type"`
	// StoredNs is the step timestamps are kept to: every stored time is a
	// multiple of it.
	StoredNs int64 `json:"stored_ns"`
	// TickNs is the step of the clock that stamps changes: never finer
	// than the kernel's coarse clock.
	TickNs int64 `json:"tick_ns"`
	// LagNs is how far behind this machine's clock the file system's
	// stamps were seen beyond StoredNs and TickNs (a file server's clock).
	LagNs int64 `json:"lag_ns,omitempty"`
	// NoCtime says the file system keeps no change time of its own (FAT,
	// exFAT): ctime follows mtime, which any writer sets, so stat proves
	// nothing there.
	NoCtime bool `json:"no_ctime,omitempty"`
	// Measured says a probe measured the facts above; otherwise they are
	// assumed (coarse) and Why says why.
	Measured bool   `json:"measured"`
	Why      string `json:"why,omitempty"`
	// Kernel is the kernel release that stamped the probe.
	Kernel string `json:"kernel,omitempty"`
}

const (
	// CoarseNs is the step assumed where none could be measured: FAT's,
	// the coarsest a file system airlock may meet keeps.
	CoarseNs = 2 * int64(time.Second)
	// probeFor bounds the time spent watching a probe file's ctime step.
	probeFor = 200 * time.Millisecond
	// probeSteps is how many steps of the stamping clock are enough.
	probeSteps = 4
)

// known reports whether c holds facts (the zero Clock holds none and reads
// as coarse).
func (c Clock) known() bool { return c.StoredNs > 0 }

// WindowNs is how much older than the moment a stat was taken a ctime must
// be for the stat to prove that a later write would move it.
func (c Clock) WindowNs() int64 {
	if !c.known() {
		return CoarseNs + 2*coarseTickNs()
	}
	return c.StoredNs + 2*c.TickNs + c.LagNs
}

// Proves reports whether a stat fact whose ctime is ctimeNs, taken at
// atNs (this machine's clock, ns since the epoch) or later, proves that
// the file was not written since it was taken, when a later stat shows the
// same facts.
func (c Clock) Proves(ctimeNs, atNs int64) bool {
	if c.NoCtime {
		return false
	}
	return ctimeNs <= atNs-c.WindowNs()
}

// Fine reports whether the clock tells moments apart well below a second,
// so that stat decides for every file not changed in the last moment.
func (c Clock) Fine() bool {
	return c.known() && !c.NoCtime && c.WindowNs() < int64(100*time.Millisecond)
}

// String says what the clock is, in a phrase: "ext4: timestamps kept to
// 1 s, stamped by a 4 ms clock; a file changed within 1.01 s of being
// measured is compared by content".
func (c Clock) String() string {
	s := c.Type
	if s == "" {
		s = "unknown file system"
	}
	if c.Measured {
		s += fmt.Sprintf(": timestamps kept to %s, stamped by a %s clock", human(c.StoredNs), human(c.TickNs))
		if c.LagNs > 0 {
			s += fmt.Sprintf(" running %s behind this machine's", human(c.LagNs))
		}
	} else {
		why := c.Why
		if why == "" {
			why = "no measurement"
		}
		s += fmt.Sprintf(": not measured (%s), so taken to keep %s", why, human(CoarseNs))
	}
	if c.NoCtime {
		return s + "; it keeps no change time of its own (ctime follows mtime), so stat proves nothing there and bytes decide"
	}
	return s + fmt.Sprintf("; a file changed within %s of being measured is compared by content", human(c.WindowNs()))
}

// human prints a duration in the unit that reads best.
func human(ns int64) string {
	switch {
	case ns >= int64(time.Second) && ns%int64(time.Second) == 0:
		return fmt.Sprintf("%d s", ns/int64(time.Second))
	case ns >= int64(time.Second):
		return fmt.Sprintf("%.3f s", float64(ns)/1e9)
	case ns >= int64(time.Millisecond):
		return fmt.Sprintf("%.3g ms", float64(ns)/1e6)
	case ns >= int64(time.Microsecond):
		return fmt.Sprintf("%.3g µs", float64(ns)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}

// Assume is the clock of the file system holding path when it cannot be
// measured: a 2 s step, with why it was not measured. What the file
// system's type alone tells (a FAT keeps no ctime) is kept.
func Assume(path, why string) Clock {
	c := Clock{StoredNs: CoarseNs, TickNs: coarseTickNs(), Why: why, Kernel: kernel()}
	if fi, err := stat(path); err == nil {
		c.Type = fi.name
		c.NoCtime = noCtime(fi)
	}
	return c
}

// Key names the file system holding path for a cache of clocks: its id
// and type, which survive a reboot where the file system gives itself a
// stable id (ext4's and xfs's come from their UUID), else its device
// number too.
func Key(path string) (string, error) {
	fi, err := stat(path)
	if err != nil {
		return "", err
	}
	return fi.key(), nil
}

// Current reports whether a cached clock still holds here: measured under
// the running kernel.
func (c Clock) Current() bool { return c.Measured && c.Kernel == kernel() }

// Probe values: odd seconds (a 2 s step truncates them to the even one
// below) after 1980 and before 2038 (FAT's and 32-bit inodes' ranges), and
// nanoseconds whose trailing digits a coarser step turns to zeros.
var probeTimes = []unix.Timespec{{Sec: 1_000_000_001, Nsec: 999_999_999}, {Sec: 1_000_000_003, Nsec: 123_456_789}}

// Measure probes the file system holding dir, which the caller owns (a
// probe file is created there and removed): its stored step, whether it
// keeps a change time, and the step of the clock that stamps changes.
func Measure(dir string) (Clock, error) {
	fi, err := stat(dir)
	if err != nil {
		return Clock{}, fmt.Errorf("measure the timestamps of %s: %w", dir, err)
	}
	c := Clock{Type: fi.name, Kernel: kernel(), Measured: true, NoCtime: noCtime(fi)}
	f, err := os.CreateTemp(dir, ".fsclock-probe-*")
	if err != nil {
		return Clock{}, fmt.Errorf("measure the timestamps of %s: %w", dir, unwrap(err))
	}
	name := f.Name()
	defer os.Remove(name)
	defer f.Close()
	before := time.Now().UnixNano()
	for _, ts := range probeTimes {
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return Clock{}, fmt.Errorf("measure the timestamps of %s: set the times of %s: %w", dir, name, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return Clock{}, fmt.Errorf("measure the timestamps of %s: %w", dir, err)
		}
		step, ok := storedStep(ts.Nano(), mtimeOf(&st))
		if !ok {
			return Clock{}, fmt.Errorf("measure the timestamps of %s: set an mtime of %d ns, read back %d ns", dir, ts.Nano(), mtimeOf(&st))
		}
		c.StoredNs = max(c.StoredNs, step)
		// Setting the times is a change: the ctime it stamps is now. One
		// that went back with the mtime is no change time.
		if ctimeOf(&st) < before-int64(time.Minute) {
			c.NoCtime = true
		}
	}
	tick, lag, err := stamping(f, c.StoredNs)
	if err != nil {
		return Clock{}, fmt.Errorf("measure the timestamps of %s: %w", dir, err)
	}
	c.TickNs = max(tick, coarseTickNs())
	if tick == 0 {
		// No step in the time the probe may take: a clock that coarse is
		// not told apart from one coarser still.
		c.TickNs, c.Measured, c.Why = CoarseNs, false, fmt.Sprintf("its clock did not step within %v of writes", probeFor)
	}
	c.LagNs = max(0, lag-c.StoredNs-c.TickNs)
	return c, nil
}

// stamping writes f again and again and reports the smallest positive
// step between the ctimes the writes stamped (0: none seen in time), and
// the most a stamp lagged this machine's clock at the write. Where the
// stored step is a second or more, steps finer than it cannot be seen:
// one write measures the lag, and the tick is the kernel's.
func stamping(f *os.File, stored int64) (tick, lag int64, err error) {
	fd := int(f.Fd())
	deadline := time.Now().Add(probeFor)
	var prev int64
	steps := 0
	buf := []byte{0}
	for i := 0; ; i++ {
		t0 := time.Now().UnixNano()
		buf[0] = byte(i)
		if _, err := unix.Pwrite(fd, buf, 0); err != nil {
			return 0, 0, fmt.Errorf("write the probe file: %w", err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return 0, 0, fmt.Errorf("stat the probe file: %w", err)
		}
		ct := ctimeOf(&st)
		lag = max(lag, t0-ct)
		if stored >= int64(time.Second) {
			return coarseTickNs(), lag, nil
		}
		if i > 0 && ct > prev {
			d := ct - prev
			if tick == 0 || d < tick {
				tick = d
			}
			steps++
		}
		prev = ct
		if steps >= probeSteps || time.Now().After(deadline) {
			return tick, lag, nil
		}
	}
}

// steps are the stored steps told apart, finest first.
var steps = []int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 2e9}

// storedStep infers the stored step from a time set and the time read
// back: the coarsest step the value read is a multiple of, lying less
// than one step from the value set (a truncation, or a rounding up). A
// value read back further off than the coarsest step is not a step at all
// (ok false).
func storedStep(set, got int64) (int64, bool) {
	d := set - got
	if d < 0 {
		d = -d
	}
	if d >= steps[len(steps)-1] {
		return 0, false
	}
	step := int64(1)
	for _, s := range steps {
		if got%s == 0 && d < s {
			step = s
		}
	}
	return step, true
}

func unwrap(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fsInfo is what statfs and stat tell of a file system.
type fsInfo struct {
	name  string
	magic int64
	fsid  [2]int32
	dev   uint64
}

func (fi fsInfo) key() string {
	if fi.fsid == [2]int32{} {
		// No id of its own: the device number, which a reboot may change
		// (the clock is then measured again).
		return fmt.Sprintf("%x-dev%x", fi.magic, fi.dev)
	}
	return fmt.Sprintf("%x-%08x%08x", fi.magic, uint32(fi.fsid[0]), uint32(fi.fsid[1]))
}
