package safefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSwapRace swaps a directory for a symlink, atomically and over and
// over, while the main loop writes into that directory by name. Whichever
// side of the swap a write meets, it must land in the real directory or
// fail: never through the symlink, outside the root or into the protected
// subtree the second symlink points at.
func TestSwapRace(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base, outside := newRootWithOutside(t)
		protected := filepath.Join(base, "protected")
		must(t, os.Mkdir(protected, 0o755))
		must(t, os.Mkdir(filepath.Join(base, "d"), 0o755))
		must(t, os.Symlink(outside, filepath.Join(base, "to-outside")))
		must(t, os.Symlink("protected", filepath.Join(base, "to-protected")))

		stop := make(chan struct{})
		var swaps atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() {
			d := filepath.Join(base, "d")
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				other := filepath.Join(base, "to-outside")
				if i%4 >= 2 {
					other = filepath.Join(base, "to-protected")
				}
				if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, other, unix.RENAME_EXCHANGE); err != nil {
					t.Errorf("swap: %v", err)
					return
				}
				swaps.Add(1)
			}
		})

		// A second or 3000 rounds, as long as the race has been met both
		// ways (writes done, writes refused) by then: on a busy machine the
		// swapper may not have run at all in a second. A minute bounds it.
		var ok, refused int
		start := time.Now()
		enough := func(i int) bool {
			return (i >= 3000 || time.Since(start) > time.Second) && ok > 0 && refused > 0 && swaps.Load() > 0
		}
		for i := 0; !enough(i) && time.Since(start) < time.Minute; i++ {
			errs := []error{r.Mkdir("d/dir"+strconv.Itoa(i), 0o755)}
			f, tmp, err := r.CreateTemp("d", "t*")
			errs = append(errs, err)
			if err == nil {
				f.Close()
				errs = append(errs, r.Rename(tmp, "d/file"+strconv.Itoa(i)))
			}
			errs = append(errs, r.Chmod("d", 0o755), r.Chtimes("d/x", 0), r.Symlink("t", "d/link"+strconv.Itoa(i)))
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, ErrSymlink):
					refused++
				case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrExist):
					// The temp file was made on one side of a swap
					// and looked for on the other.
				default:
					t.Errorf("unexpected error: %v", err)
				}
			}
		}
		close(stop)
		wg.Wait()
		t.Logf("%d swaps, %d writes done, %d refused", swaps.Load(), ok, refused)
		if ok == 0 || refused == 0 || swaps.Load() == 0 {
			t.Errorf("the race was not exercised: %d swaps, %d writes done, %d refused", swaps.Load(), ok, refused)
		}
		for _, dir := range []string{outside, protected} {
			names, err := os.ReadDir(dir)
			must(t, err)
			if len(names) != 0 {
				t.Errorf("%s gained %d entries, e.g. %s", dir, len(names), names[0].Name())
			}
		}
	})
}

// TestNoDescriptorLeak runs every operation, on its success and its failure
// paths, many times and checks that the process holds no more descriptors
// afterwards than before.
func TestNoDescriptorLeak(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base, outside := newRootWithOutside(t)
		must(t, os.Symlink(outside, filepath.Join(base, "out")))
		must(t, os.MkdirAll(filepath.Join(base, "a", "b", "c"), 0o755))
		must(t, os.Symlink("../..", filepath.Join(base, "a", "b", "up")))
		writeFile(t, filepath.Join(base, "local"), "x")
		must(t, unix.Mkfifo(filepath.Join(base, "fifo"), 0o644))

		round := func() {
			for _, o := range writeOps {
				for _, rel := range []string{"a/b/c/n", "a/b/c", "a/b/up/x", "out/x", "out", "a//b", "missing/x", "local/x", "fifo"} {
					o.do(r, rel)
				}
			}
			for _, rel := range []string{"local", "a/b/up/x", "out/x", "fifo", "a/b", "missing"} {
				if f, _, err := r.OpenRegular(rel); err == nil {
					f.Close()
				}
			}
			f, tmp, err := r.CreateTemp("a/b/c", "t*")
			if err == nil {
				f.Close()
				r.Rename(tmp, "a/b/c/f")
				r.Chmod("a/b/c/f", 0o600)
				r.SyncFile("a/b/c/f")
				r.Remove("a/b/c/f")
			}
			r.SyncDir("")
			r.Lstat("")
		}
		round() // let the runtime open what it opens once
		before := countFDs(t)
		for range 30 {
			round()
		}
		if after := countFDs(t); after != before {
			t.Errorf("descriptors: %d before, %d after", before, after)
		}
	})
}

func countFDs(t *testing.T) int {
	t.Helper()
	names, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	return len(names)
}
