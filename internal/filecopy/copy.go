package filecopy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Options says how Copy copies.
type Options struct {
	// Hash, when set, is written the bytes copied in order, a hole as its
	// zeros: the logical content, whose digest does not depend on where
	// the holes are.
	Hash io.Writer
	// Max, when positive, bounds the bytes copied: a longer source is
	// copied only up to Max, so that a caller expecting N bytes can pass
	// N+1 and tell a file that grew without reading the rest of it.
	Max int64
}

// chunk bounds the bytes the kernel copies between two checks of the
// context (a variable for tests).
var chunk int64 = 64 << 20

const (
	// bufSize is the buffer a hashed copy reads through, and the span of
	// zeros fed to the hash at a time for a hole; the context is checked
	// between two.
	bufSize = 1 << 20
)

// zeros is what a hole reads as.
var zeros [bufSize]byte

var bufs = sync.Pool{New: func() any { return new([bufSize]byte) }}

// Copy makes dst hold src's content from its first byte to its end (as
// fstat gives it when Copy starts, bounded by o.Max), keeping src's holes,
// and returns the number of bytes dst holds: exactly the bytes o.Hash was
// written. dst is truncated first, so that a retry needs no cleaning up,
// and last, to the length copied, so that a hole at the end is kept. A
// read that meets src's end early (src shrank) ends the copy there. Both
// files' offsets are left anywhere.
//
// Either truncation is made only where it changes dst's length: a new,
// empty dst is not truncated at all. On ext4 a truncation to zero marks
// the file to be written back as soon as it is closed (auto_da_alloc, for
// programs that rewrite a file in place without fsync), so that every
// close of a new copy would start its write-back on the spot: for a
// caller that writes many small files and flushes them together, most of
// its time.
func Copy(ctx context.Context, dst, src *os.File, o Options) (int64, error) {
	fi, err := src.Stat()
	if err != nil {
		return 0, err
	}
	end := fi.Size()
	if o.Max > 0 {
		end = min(end, o.Max)
	}
	size, err := sizeOf(dst)
	if err != nil {
		return 0, err
	}
	if size != 0 {
		if err := dst.Truncate(0); err != nil {
			return 0, err
		}
	}
	n, err := copyExtents(ctx, dst, src, end, o.Hash)
	if err != nil {
		return n, err
	}
	if size, err = sizeOf(dst); err != nil {
		return n, err
	}
	if size != n {
		if err := dst.Truncate(n); err != nil {
			return n, err
		}
	}
	return n, nil
}

// sizeOf is f's length now.
func sizeOf(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Hash writes src's content to h, as Copy would write it to o.Hash, and
// returns its length: a hole's zeros come from memory, not from the
// kernel.
func Hash(ctx context.Context, h io.Writer, src *os.File) (int64, error) {
	fi, err := src.Stat()
	if err != nil {
		return 0, err
	}
	return copyExtents(ctx, nil, src, fi.Size(), h)
}

// copyExtents copies src's data extents below end to dst (unless dst is
// nil) and hashes its holes, and returns where the content ends: end, or
// where a src that shrank ended.
func copyExtents(ctx context.Context, dst, src *os.File, end int64, h io.Writer) (int64, error) {
	off := int64(0)
	for off < end {
		data, hole, err := nextExtent(src, off, end)
		if err != nil {
			return off, err
		}
		if err := hashZeros(ctx, h, data-off); err != nil {
			return off, err
		}
		if data == end {
			break
		}
		var n int64
		if h == nil {
			n, err = copyRange(ctx, dst, src, data, hole-data)
		} else {
			n, err = copyHashed(ctx, dst, src, data, hole-data, h)
		}
		if err != nil || n < hole-data {
			return data + n, err // err == nil: src ended early, it shrank
		}
		off = hole
	}
	return end, nil
}

// nextExtent finds the first data at or after off in src, and where it
// ends, both bounded by end: [off, data) is a hole, [data, hole) data.
func nextExtent(src *os.File, off, end int64) (data, hole int64, err error) {
	data, err = seek(src, off, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO):
		// No data from off to the file's end.
		return end, end, nil
	case noSeekData(err):
		return off, end, nil
	case err != nil:
		return 0, 0, fmt.Errorf("find data: %w", err)
	case data < off:
		// Not an answer SEEK_DATA gives; copying the rest whole is
		// right whatever the file system meant.
		return off, end, nil
	}
	if data >= end {
		return end, end, nil
	}
	hole, err = seek(src, data, unix.SEEK_HOLE)
	switch {
	case errors.Is(err, unix.ENXIO):
		// The file shrank below data since: the read will find its end.
		return data, end, nil
	case err != nil:
		return 0, 0, fmt.Errorf("find hole: %w", err)
	case hole <= data:
		return data, end, nil
	}
	return data, min(hole, end), nil
}

// seek is (*os.File).Seek, which passes SEEK_DATA and SEEK_HOLE to lseek;
// a variable so that a test can play a file system without them.
var seek = (*os.File).Seek

// noSeekData reports a file system that does not know SEEK_DATA.
func noSeekData(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) ||
		errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS)
}

// hashZeros feeds h the n zeros of a hole.
func hashZeros(ctx context.Context, h io.Writer, n int64) error {
	if h == nil {
		return nil
	}
	for n > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := min(n, bufSize)
		if _, err := h.Write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// copyRange copies the n bytes at off from src to dst, at the same offset,
// with copy_file_range where the kernel offers it, and returns how many it
// copied: fewer than n only at src's end.
func copyRange(ctx context.Context, dst, src *os.File, off, n int64) (int64, error) {
	copied := int64(0)
	for copied < n {
		if err := ctx.Err(); err != nil {
			return copied, err
		}
		if _, err := src.Seek(off+copied, io.SeekStart); err != nil {
			return copied, err
		}
		if _, err := dst.Seek(off+copied, io.SeekStart); err != nil {
			return copied, err
		}
		// Both sides are *os.File: ReadFrom tries copy_file_range and
		// falls back to read and write. What it copied is told by the
		// limit it used up, also when it fell back part-way.
		step := min(n-copied, chunk)
		lr := &io.LimitedReader{R: src, N: step}
		_, err := dst.ReadFrom(lr)
		got := step - lr.N
		copied += got
		if err != nil {
			return copied, err
		}
		if got < step {
			return copied, nil
		}
	}
	return copied, nil
}

// copyHashed is copyRange through memory, writing every byte copied to h
// (and to dst unless it is nil).
func copyHashed(ctx context.Context, dst, src *os.File, off, n int64, h io.Writer) (int64, error) {
	buf := bufs.Get().(*[bufSize]byte)
	defer bufs.Put(buf)
	copied := int64(0)
	for copied < n {
		if err := ctx.Err(); err != nil {
			return copied, err
		}
		k := min(n-copied, bufSize)
		r, rerr := src.ReadAt(buf[:k], off+copied)
		if r > 0 {
			if dst != nil {
				if _, err := dst.WriteAt(buf[:r], off+copied); err != nil {
					return copied, err
				}
			}
			if _, err := h.Write(buf[:r]); err != nil {
				return copied, err
			}
			copied += int64(r)
		}
		if rerr == io.EOF {
			return copied, nil
		}
		if rerr != nil {
			return copied, rerr
		}
	}
	return copied, nil
}
