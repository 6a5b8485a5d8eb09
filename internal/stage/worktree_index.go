package stage

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/manifest"
)

// The worktree's index is the base's, entry for entry. Handing git the
// entries alone (update-index --index-info) leaves their stat data empty,
// and the refresh that follows then reads and hashes every tracked file
// again: on a large checkout that was most of what the worktree cost
// beyond the copy itself. Instead the index is written here, in git's own
// format (version 2), and an entry carries the stat data of its staged file
// where git's own rule proves that file holds the entry's blob:
//
//   - the base's index entry has stat data that equals, fact for fact
//     (ctime and mtime to the nanosecond, device, inode, size), the base
//     file's stat as staging copied it (Result.Base), so that git in the
//     base would call the file clean without reading it, and its ctime and
//     mtime lie outside the base's timestamp window of the moment the
//     index was written (git's "racily clean" rule, with airlock's window
//     in place of git's second);
//   - the staged file is still as staging measured it (Result.Staged) and
//     its ctime lies outside the state file system's window of now.
//
// Every other entry (modified, conflicted, intent-to-add, a symlink, a
// submodule, an empty file, a racy one) gets empty stat data, as before,
// and the refresh hashes just those. A base whose index changes while it is
// read carries no stat data at all.

// indexEntry is one entry of the base's index as `git ls-files -s --debug`
// shows it.
type indexEntry struct {
	mode  uint32
	oid   []byte
	stage uint32
	path  string
	stat  indexStat
	flags uint64 // git's in-memory flags (assume-unchanged, skip-worktree, …)
}

// indexStat is the stat data of an index entry, as git keeps it: 32 bits
// each, the device, inode and size truncated.
type indexStat struct {
	ctimeS, ctimeN, mtimeS, mtimeN uint32
	dev, ino, uid, gid, size       uint32
}

func statOfEntry(e manifest.Entry) indexStat {
	return indexStat{
		ctimeS: uint32(e.CtimeNs / 1e9), ctimeN: uint32(e.CtimeNs % 1e9),
		mtimeS: uint32(e.MtimeNs / 1e9), mtimeN: uint32(e.MtimeNs % 1e9),
		dev: uint32(e.Dev), ino: uint32(e.Ino), size: uint32(e.Size),
	}
}

// errIndexDebug marks `git ls-files --debug` output this code cannot read
// (a git that prints it otherwise): the index is then set up without stat
// data.
var errIndexDebug = errors.New("cannot read the stat data of git ls-files --debug")

// readBaseIndex lists the base's index entries with their stat data, and
// reports the moment its index file was written, or 0 when that cannot be
// relied on (the file changed while it was read).
func readBaseIndex(ctx context.Context, r *repo) ([]indexEntry, int64, error) {
	before, berr := indexFileStat(r.index)
	out, err := git.In(r.dir).Run(ctx, "ls-files", "-s", "--debug", "-z", "--full-name")
	if err != nil {
		return nil, 0, fmt.Errorf("read the git index of %s: %w", quote(r.dir), err)
	}
	entries, err := parseIndexDebug(out)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errIndexDebug, err)
	}
	after, aerr := indexFileStat(r.index)
	written := int64(0)
	if berr == nil && aerr == nil && manifest.SameStat(before, after) {
		written = after.MtimeNs
	}
	return entries, written, nil
}

func indexFileStat(p string) (manifest.Entry, error) {
	if p == "" {
		return manifest.Entry{}, fs.ErrNotExist
	}
	return manifest.Lstat(p)
}

// parseIndexDebug reads `git ls-files -s --debug -z` output: per entry
// "<mode> <oid> <stage>\t<path>\0" and then five lines of stat data.
func parseIndexDebug(out []byte) ([]indexEntry, error) {
	var list []indexEntry
	for len(out) > 0 {
		i := bytes.IndexByte(out, 0)
		if i < 0 {
			return nil, fmt.Errorf("unexpected answer from git ls-files --debug: an entry without its end")
		}
		head := string(out[:i])
		out = out[i+1:]
		meta, path, ok := strings.Cut(head, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("unexpected entry %q from git ls-files --debug", head)
		}
		mode, err1 := strconv.ParseUint(f[0], 8, 32)
		oid, err2 := hex.DecodeString(f[1])
		stage, err3 := strconv.ParseUint(f[2], 10, 2)
		if err := errors.Join(err1, err2, err3); err != nil || (len(oid) != sha1.Size && len(oid) != sha256.Size) {
			return nil, fmt.Errorf("unexpected entry %q from git ls-files --debug", head)
		}
		e := indexEntry{mode: uint32(mode), oid: oid, stage: uint32(stage), path: path}
		var err error
		if out, err = parseDebugStat(out, &e); err != nil {
			return nil, fmt.Errorf("entry %q from git ls-files --debug: %w", path, err)
		}
		list = append(list, e)
	}
	return list, nil
}

// parseDebugStat reads the five stat lines that follow an entry
// ("  ctime: S:N", "  mtime: S:N", "  dev: D\tino: I", "  uid: U\tgid: G",
// "  size: Z\tflags: F", the flags in hex) and returns what follows them.
func parseDebugStat(out []byte, e *indexEntry) ([]byte, error) {
	// Older gits print these with %d: a value past 2^31 (an inode number,
	// a device) shows negative, and wraps back.
	var v [9]int64
	lines := []struct {
		format string
		args   []any
	}{
		{"  ctime: %d:%d", []any{&v[0], &v[1]}},
		{"  mtime: %d:%d", []any{&v[2], &v[3]}},
		{"  dev: %d\tino: %d", []any{&v[4], &v[5]}},
		{"  uid: %d\tgid: %d", []any{&v[6], &v[7]}},
		{"  size: %d\tflags: %x", []any{&v[8], &e.flags}},
	}
	for _, l := range lines {
		i := bytes.IndexByte(out, '\n')
		if i < 0 {
			return nil, errors.New("stat data cut short")
		}
		line := string(out[:i])
		out = out[i+1:]
		if n, err := fmt.Sscanf(line, l.format, l.args...); err != nil || n != len(l.args) {
			return nil, fmt.Errorf("unexpected stat line %q", line)
		}
	}
	e.stat = indexStat{
		ctimeS: uint32(v[0]), ctimeN: uint32(v[1]), mtimeS: uint32(v[2]), mtimeN: uint32(v[3]),
		dev: uint32(v[4]), ino: uint32(v[5]), uid: uint32(v[6]), gid: uint32(v[7]), size: uint32(v[8]),
	}
	return out, nil
}

// gitModeFile and gitModeExec are the index modes of regular files.
const (
	gitModeFile = 0o100644
	gitModeExec = 0o100755
)

// carryStat gives each entry of list whose staged file provably holds its
// blob (see the top of this file) the staged file's stat data, and every
// other entry none. base and staged are staging's manifests, top the
// directory the entries' paths are relative to (the base, and the staged
// tree, at the repository's top); written is when the base's index was
// written, 0 when unknown.
func carryStat(list []indexEntry, res *Result, top string, written int64, req Request) int {
	now := time.Now().UnixNano()
	carried := 0
	for i := range list {
		e := &list[i]
		base := e.stat
		e.stat = indexStat{}
		if written == 0 || e.stage != 0 || e.flags != 0 || (e.mode != gitModeFile && e.mode != gitModeExec) || base.size == 0 {
			continue
		}
		// Ownership is left out: a chown moves ctime anyway.
		base.uid, base.gid = 0, 0
		b, ok := res.Base.Lookup(e.path)
		if !ok || b.Kind != manifest.KindFile || statOfEntry(*b) != base {
			continue
		}
		if !req.BaseClock.Proves(b.CtimeNs, written) || !req.BaseClock.Proves(b.MtimeNs, written) {
			continue
		}
		s, ok := res.Staged.Lookup(e.path)
		if !ok || s.Kind != manifest.KindFile || !req.StateClock.Proves(s.CtimeNs, now) {
			continue
		}
		fi, err := os.Lstat(filepath.Join(top, filepath.FromSlash(e.path)))
		if err != nil {
			continue
		}
		cur := manifest.FromFileInfo(fi)
		cur.Path = s.Path
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || !manifest.SameStat(cur, *s) {
			continue
		}
		e.stat = statOfEntry(cur)
		e.stat.uid, e.stat.gid = st.Uid, st.Gid
		carried++
	}
	return carried
}

// writeIndex writes list as a version 2 git index at path, through
// path.lock as git does, so that no reader sees half of it. The entries
// must be in index order (by path, then stage), as ls-files lists them;
// oidSize is the repository's object id length (20 bytes for SHA-1, 32
// for SHA-256), which also picks the index's checksum.
func writeIndex(path string, list []indexEntry, oidSize int) error {
	var h hash.Hash
	switch oidSize {
	case sha1.Size:
		h = sha1.New()
	case sha256.Size:
		h = sha256.New()
	default:
		return fmt.Errorf("write git index %s: unknown object id length %d", quote(path), oidSize)
	}
	var buf bytes.Buffer
	buf.WriteString("DIRC")
	binary.Write(&buf, binary.BigEndian, [2]uint32{2, uint32(len(list))})
	for _, e := range list {
		if len(e.oid) != h.Size() {
			return fmt.Errorf("write git index %s: entry %q has a %d-byte object id in a repository of %d-byte ids", quote(path), e.path, len(e.oid), h.Size())
		}
		start := buf.Len()
		s := e.stat
		binary.Write(&buf, binary.BigEndian, [10]uint32{s.ctimeS, s.ctimeN, s.mtimeS, s.mtimeN, s.dev, s.ino, e.mode, s.uid, s.gid, s.size})
		buf.Write(e.oid)
		binary.Write(&buf, binary.BigEndian, uint16(e.stage<<12|uint32(min(len(e.path), 0xfff))))
		buf.WriteString(e.path)
		// NUL-terminated, and padded to a multiple of 8 bytes.
		for buf.WriteByte(0); (buf.Len()-start)%8 != 0; {
			buf.WriteByte(0)
		}
	}
	h.Write(buf.Bytes())
	buf.Write(h.Sum(nil))
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("write git index %s: %w", quote(path), unwrapPath(err))
	}
	_, err = f.Write(buf.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lock, path)
	}
	if err != nil {
		os.Remove(lock)
		return fmt.Errorf("write git index %s: %w", quote(path), unwrapPath(err))
	}
	return nil
}

// worktreeIndexPath is the index file of the worktree whose top is top,
// read from its gitfile ("gitdir: <path>", which git writes absolute, or
// relative to the top with worktree.useRelativePaths).
func worktreeIndexPath(top string) (string, error) {
	b, err := os.ReadFile(filepath.Join(top, ".git"))
	if err != nil {
		return "", fmt.Errorf("read the gitfile of worktree %s: %w", quote(top), unwrapPath(err))
	}
	dir, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
	if !ok || dir == "" || strings.ContainsAny(dir, "\n\x00") {
		return "", fmt.Errorf("read the gitfile of worktree %s: unexpected content %q", quote(top), b)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(top, dir)
	}
	return filepath.Join(dir, "index"), nil
}
