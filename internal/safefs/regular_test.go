//go:build linux || darwin

package safefs

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestOpenRegular(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base, outside := newRootWithOutside(t)
		must(t, os.MkdirAll(filepath.Join(base, "a", "b"), 0o755))
		writeFile(t, filepath.Join(base, "a", "b", "f"), "inside")
		writeFile(t, filepath.Join(outside, "f"), "secret")
		must(t, os.Symlink(outside, filepath.Join(base, "a", "out")))
		must(t, os.Symlink("b/f", filepath.Join(base, "a", "last")))

		f, info, err := r.OpenRegular("a/b/f")
		must(t, err)
		got, err := io.ReadAll(f)
		f.Close()
		must(t, err)
		if string(got) != "inside" {
			t.Fatalf("read %q", got)
		}
		var st syscall.Stat_t
		must(t, syscall.Lstat(filepath.Join(base, "a", "b", "f"), &st))
		if info.Ino != uint64(st.Ino) || info.Dev != uint64(st.Dev) || info.Size != 6 || !info.Mode.IsRegular() {
			t.Errorf("info %+v does not describe the file opened (ino %d)", info, st.Ino)
		}

		for _, rel := range []string{"a/out/f", "a/last"} {
			f, _, err := r.OpenRegular(rel)
			if f != nil {
				b, _ := io.ReadAll(f)
				f.Close()
				t.Fatalf("OpenRegular(%s) opened a file holding %q", rel, b)
			}
			wantPathErr(t, err, ErrSymlink, r, "open", rel)
		}
		f, _, err = r.OpenRegular("a/b")
		if f != nil {
			f.Close()
		}
		wantPathErr(t, err, ErrNotRegular, r, "open", "a/b")
	})
}

// TestOpenRegularSpecialFiles: a FIFO never blocks the open, and a device
// node is refused before it is opened.
func TestOpenRegularSpecialFiles(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base := newRoot(t)
		must(t, syscall.Mkfifo(filepath.Join(base, "fifo"), 0o644))
		specials := []string{"fifo"}
		if os.Geteuid() == 0 {
			// /dev/zero's numbers: read, it would never end.
			var st syscall.Stat_t
			must(t, syscall.Stat("/dev/zero", &st))
			must(t, syscall.Mknod(filepath.Join(base, "zero"), syscall.S_IFCHR|0o666, int(st.Rdev)))
			specials = append(specials, "zero")
		}
		for _, rel := range specials {
			done := make(chan error, 1)
			go func() {
				f, _, err := r.OpenRegular(rel)
				if f != nil {
					f.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				wantPathErr(t, err, ErrNotRegular, r, "open", rel)
			case <-time.After(time.Minute):
				t.Fatalf("OpenRegular(%s) blocked", rel)
			}
		}
	})
}
