package fsclock

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

func TestStoredStep(t *testing.T) {
	const set = 1_000_000_001_999_999_999 // 1000000001.999999999 s
	for _, tt := range []struct {
		name string
		got  int64
		want int64
	}{
		{"kept exactly", set, 1},
		{"100 ns (NTFS)", 1_000_000_001_999_999_900, 100},
		{"1 µs", 1_000_000_001_999_999_000, 1e3},
		{"10 ms (exFAT)", 1_000_000_001_990_000_000, 1e7},
		{"1 s (ext4 -I 128, HFS+)", 1_000_000_001_000_000_000, 1e9},
		{"2 s, truncated to the even second (FAT)", 1_000_000_000_000_000_000, 2e9},
		{"rounded up to the second", 1_000_000_002_000_000_000, 2e9},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := storedStep(set, tt.got)
			if !ok || got != tt.want {
				t.Errorf("storedStep = %d, %v; want %d", got, ok, tt.want)
			}
		})
	}
	if _, ok := storedStep(set, 5); ok {
		t.Error("a time read back years off was taken for a step")
	}
}

func TestProves(t *testing.T) {
	sec := Clock{Type: "ext4", StoredNs: 1e9, TickNs: 4e6, Measured: true}
	at := int64(1_700_000_000_500_000_000)
	for _, tt := range []struct {
		name  string
		c     Clock
		ctime int64
		want  bool
	}{
		{"1 s: the same second", sec, 1_700_000_000_000_000_000, false},
		{"1 s: the second before, a tick into this one", sec, 1_699_999_999_000_000_000, false},
		{"1 s: the second before, half-way into this one", sec, 1_699_999_999_000_000_000, true},
		{"fine: 20 ms before", Clock{StoredNs: 1, TickNs: 4e6, Measured: true}, at - 20e6, true},
		{"fine: 5 ms before", Clock{StoredNs: 1, TickNs: 4e6, Measured: true}, at - 5e6, false},
		{"unknown reads as coarse", Clock{}, at - 1e9, false},
		{"no ctime: never", Clock{StoredNs: 1, TickNs: 4e6, NoCtime: true, Measured: true}, at - int64(time.Hour), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			at := at
			if strings.Contains(tt.name, "a tick into") {
				// The coarse clock may still read the second before.
				at = 1_700_000_000_004_000_000
			}
			if got := tt.c.Proves(tt.ctime, at); got != tt.want {
				t.Errorf("Proves(%d, %d) = %v with a %d ns window, want %v", tt.ctime, at, got, tt.c.WindowNs(), tt.want)
			}
		})
	}
}

// TestMeasureSeconds: an ext4 made with 128-byte inodes keeps whole
// seconds, and the probe says so.
func TestMeasureSeconds(t *testing.T) {
	dir := testbin.SecondsFS(t)
	c, err := Measure(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.StoredNs != 1e9 || !c.Measured || c.NoCtime || c.Type != "ext4" {
		t.Fatalf("Measure = %+v (%s), want a measured ext4 keeping 1 s", c, c)
	}
	if c.WindowNs() < 1e9 || c.Fine() {
		t.Errorf("window %d ns: a stat taken within the second of a change must prove nothing", c.WindowNs())
	}
	if !strings.Contains(c.String(), "1 s") {
		t.Errorf("String() = %q, want it to name the 1 s step", c.String())
	}
	assertNoProbeLeft(t, dir)
}

// TestMeasureFine: tmpfs and an ext4 with the default (large) inodes keep
// nanoseconds; the clock that stamps them steps no slower than a
// scheduler tick.
func TestMeasureFine(t *testing.T) {
	for name, mount := range map[string]func(t *testing.T) string{
		"ext4": func(t *testing.T) string { return testbin.MountImage(t, 64<<20, "mkfs.ext4", "-q") },
		"tmpfs": func(t *testing.T) string {
			if os.Geteuid() != 0 {
				t.Skip("mounting a tmpfs needs root")
			}
			dir := t.TempDir()
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
				testbin.Missing(t, "cannot mount a tmpfs: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", dir).Run() })
			return dir
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := mount(t)
			start := time.Now()
			c, err := Measure(dir)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s in %v", c, took)
			if c.Type != name || !c.Measured || c.NoCtime || c.StoredNs > 1000 {
				t.Fatalf("Measure = %+v, want a measured %s keeping 1 µs or finer", c, name)
			}
			if c.TickNs <= 0 || c.TickNs > int64(50*time.Millisecond) || !c.Fine() {
				t.Errorf("tick %d ns, window %d ns: want a tick of a few ms at most", c.TickNs, c.WindowNs())
			}
			if took > probeFor+100*time.Millisecond {
				t.Errorf("the probe took %v, more than its bound %v", took, probeFor)
			}
			assertNoProbeLeft(t, dir)
		})
	}
}

// TestMeasureFailsWithoutAPlace: a directory the probe cannot write is an
// error, and Assume then is coarse, saying why.
func TestMeasureFailsWithoutAPlace(t *testing.T) {
	if _, err := Measure("/nonexistent/airlock-fsclock"); err == nil {
		t.Fatal("Measure of a missing directory succeeded")
	}
	c := Assume(os.TempDir(), "a reason")
	if c.Measured || c.StoredNs != CoarseNs || c.WindowNs() < CoarseNs || c.Why != "a reason" || c.Current() {
		t.Errorf("Assume = %+v, want an unmeasured 2 s clock that a cache does not keep", c)
	}
	if !strings.Contains(c.String(), "a reason") || !strings.Contains(c.String(), "2 s") {
		t.Errorf("String() = %q names no reason", c.String())
	}
}

// TestKey: the same file system gives the same key; another, another.
func TestKey(t *testing.T) {
	a, err := Key(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := Key(t.TempDir()); b != a {
		t.Errorf("two directories of one file system: keys %q and %q", a, b)
	}
	if c, _ := Key("/proc"); c == a {
		t.Errorf("proc and %s share key %q", os.TempDir(), a)
	}
}

func assertNoProbeLeft(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".fsclock-probe-") {
			t.Errorf("the probe left %s in %s", e.Name(), dir)
		}
	}
}
