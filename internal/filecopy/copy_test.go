package filecopy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// extent is a run of data at an offset; everything else of a file is a
// hole.
type extent struct{ off, len int64 }

// layout is a file to copy: its length and where it holds data.
type layout struct {
	name string
	size int64
	data []extent
}

const mib = 1 << 20

var layouts = []layout{
	// Holes at the start, in the middle and at the end; one data run
	// longer than the copy buffer and starting off a block boundary.
	{"holes at start, middle and end", 12 * mib, []extent{{4*mib + 100, 3*mib + 5}, {9 * mib, 4096}}},
	{"data at both ends, a hole between", 8 * mib, []extent{{0, 5000}, {8*mib - 3000, 3000}}},
	{"data only", 3*mib + 17, []extent{{0, 3*mib + 17}}},
	{"one hole", 8 * mib, nil},
	{"empty", 0, nil},
}

// place is a directory on one kind of file system.
type place struct{ name, dir string }

// places are a directory on the disk (t.TempDir) and one on a tmpfs
// (/dev/shm), so that copies run within each and across the two (where
// copy_file_range fails with EXDEV and the copy falls back to read and
// write).
func places(t *testing.T) []place {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil || st.Type != 0x01021994 { // TMPFS_MAGIC
		testbin.Missing(t, "no tmpfs at /dev/shm to copy sparse files on")
	}
	mem, err := os.MkdirTemp("/dev/shm", "airlock-filecopy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(mem) })
	return []place{{"disk", t.TempDir()}, {"tmpfs", mem}}
}

// make writes l under dir and returns its path and its bytes. Data is
// random, so that a copy misplacing any of it shows.
func (l layout) make(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	p := filepath.Join(dir, "src")
	f, err := os.Create(p)
	must(t, err)
	defer f.Close()
	want := make([]byte, l.size)
	rng := rand.NewChaCha8([32]byte{byte(len(l.name))})
	for _, e := range l.data {
		b := want[e.off : e.off+e.len]
		rng.Read(b)
		_, err := f.WriteAt(b, e.off)
		must(t, err)
	}
	must(t, f.Truncate(l.size))
	must(t, f.Sync())
	return p, want
}

func blocks(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Stat(p, &st))
	return st.Blocks
}

// TestCopyKeepsHoles copies each layout within and across a disk and a
// tmpfs, with and without a digest taken: the copy holds the same bytes,
// takes no more blocks than the source (give or take a few for the file
// system's own bookkeeping), and the digest (Copy's, and Hash's of the
// source) is that of the logical bytes.
func TestCopyKeepsHoles(t *testing.T) {
	ps := places(t)
	for _, l := range layouts {
		for _, from := range ps {
			for _, to := range ps {
				for _, hashed := range []bool{false, true} {
					name := l.name + "/" + from.name + "->" + to.name
					if hashed {
						name += "/hashed"
					}
					t.Run(name, func(t *testing.T) {
						srcDir, dstDir := filepath.Join(from.dir, t.Name()), filepath.Join(to.dir, t.Name())
						must(t, os.MkdirAll(srcDir, 0o700))
						must(t, os.MkdirAll(dstDir, 0o700))
						defer os.RemoveAll(srcDir)
						defer os.RemoveAll(dstDir)
						src, want := l.make(t, srcDir)
						checkCopy(t, l, src, filepath.Join(dstDir, "dst"), want, hashed)
					})
				}
			}
		}
	}
}

func checkCopy(t *testing.T, l layout, src, dst string, want []byte, hashed bool) {
	t.Helper()
	var dataLen int64
	for _, e := range l.data {
		dataLen += e.len
	}
	srcBlocks := blocks(t, src)
	if l.size-dataLen >= 4*mib && srcBlocks*512 > dataLen+4*mib {
		testbin.Missing(t, "%s is not sparse (%d blocks for %d bytes of data): this file system keeps no holes", src, srcBlocks, dataLen)
	}
	in, err := os.Open(src)
	must(t, err)
	defer in.Close()
	out, err := os.Create(dst)
	must(t, err)
	defer out.Close()
	// A retry copies into a file an earlier attempt wrote: none of it
	// may show through a hole.
	_, err = out.Write(bytes.Repeat([]byte{0xAA}, 2*mib))
	must(t, err)
	var o Options
	h := sha256.New()
	if hashed {
		o.Hash = h
	}
	n, err := Copy(t.Context(), out, in, o)
	must(t, err)
	must(t, out.Sync())
	if n != l.size {
		t.Errorf("Copy returned %d, want %d", n, l.size)
	}
	got, err := os.ReadFile(dst)
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("the copy's %d bytes differ from the source's %d", len(got), len(want))
	}
	sum := sha256.Sum256(want)
	if hashed && !bytes.Equal(h.Sum(nil), sum[:]) {
		t.Errorf("digest %x, want %x: the hash must see the logical bytes, holes as zeros", h.Sum(nil), sum)
	}
	h.Reset()
	if n, err := Hash(t.Context(), h, in); err != nil || n != l.size || !bytes.Equal(h.Sum(nil), sum[:]) {
		t.Errorf("Hash = %d, %v, digest %x; want %d, the digest %x", n, err, h.Sum(nil), l.size, sum)
	}
	// 64 KiB of slack: an extent tree block, a tmpfs page more.
	if b := blocks(t, dst); b > srcBlocks+128 {
		t.Errorf("the copy takes %d blocks (%d KiB), the source %d (%d KiB): its holes were filled", b, b/2, srcBlocks, srcBlocks/2)
	}
}

// TestCopyAcrossChunks copies data runs that span several of the chunks
// between two cancellation checks.
func TestCopyAcrossChunks(t *testing.T) {
	old := chunk
	chunk = mib + 3
	t.Cleanup(func() { chunk = old })
	l := layouts[0]
	dir := t.TempDir()
	src, want := l.make(t, dir)
	for _, hashed := range []bool{false, true} {
		checkCopy(t, l, src, filepath.Join(dir, "dst"), want, hashed)
	}
}

// TestCopyMax copies no more than Max bytes: a caller that expects N
// passes N+1 and tells a grown file by the count, without reading it all.
func TestCopyMax(t *testing.T) {
	l := layouts[0]
	dir := t.TempDir()
	src, want := l.make(t, dir)
	for _, max := range []int64{1, 4*mib + 101, 6 * mib, l.size - 1, l.size, l.size + 1} {
		in, err := os.Open(src)
		must(t, err)
		out, err := os.Create(filepath.Join(dir, "dst"))
		must(t, err)
		h := sha256.New()
		n, err := Copy(t.Context(), out, in, Options{Hash: h, Max: max})
		in.Close()
		out.Close()
		must(t, err)
		wantN := min(max, l.size)
		if n != wantN {
			t.Errorf("Max %d: copied %d, want %d", max, n, wantN)
		}
		got, err := os.ReadFile(filepath.Join(dir, "dst"))
		must(t, err)
		sum := sha256.Sum256(want[:wantN])
		if !bytes.Equal(got, want[:wantN]) || !bytes.Equal(h.Sum(nil), sum[:]) {
			t.Errorf("Max %d: the copy or its digest is not the first %d bytes", max, wantN)
		}
	}
}

// TestCopyCancelled stops at the context's end with its error.
func TestCopyCancelled(t *testing.T) {
	l := layouts[0]
	dir := t.TempDir()
	src, _ := l.make(t, dir)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, o := range []Options{{}, {Hash: sha256.New()}} {
		in, err := os.Open(src)
		must(t, err)
		out, err := os.Create(filepath.Join(dir, "dst"))
		must(t, err)
		_, err = Copy(ctx, out, in, o)
		in.Close()
		out.Close()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Copy with a cancelled context returned %v, want context.Canceled", err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCopyWithoutSeekData plays a file system whose lseek refuses
// SEEK_DATA (no such file system is at hand to mount): the file is copied
// whole, as one data extent, with the same bytes and digest.
func TestCopyWithoutSeekData(t *testing.T) {
	for _, errno := range []error{syscall.EINVAL, syscall.EOPNOTSUPP} {
		t.Run(errno.Error(), func(t *testing.T) {
			old := seek
			seek = func(f *os.File, off int64, whence int) (int64, error) {
				if whence != io.SeekStart {
					return 0, &os.PathError{Op: "seek", Path: f.Name(), Err: errno}
				}
				return old(f, off, whence)
			}
			t.Cleanup(func() { seek = old })
			l := layouts[1]
			dir := t.TempDir()
			src, want := l.make(t, dir)
			for _, hashed := range []bool{false, true} {
				in, err := os.Open(src)
				must(t, err)
				out, err := os.Create(filepath.Join(dir, "dst"))
				must(t, err)
				h := sha256.New()
				o := Options{}
				if hashed {
					o.Hash = h
				}
				n, err := Copy(t.Context(), out, in, o)
				in.Close()
				out.Close()
				must(t, err)
				got, err := os.ReadFile(filepath.Join(dir, "dst"))
				must(t, err)
				sum := sha256.Sum256(want)
				if n != l.size || !bytes.Equal(got, want) || (hashed && !bytes.Equal(h.Sum(nil), sum[:])) {
					t.Errorf("without SEEK_DATA (hashed %v): copied %d bytes, want %d, the same bytes and digest", hashed, n, l.size)
				}
			}
		})
	}
}
