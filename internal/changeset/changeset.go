package changeset

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/airlockdev/airlock/internal/fanout"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/filecopy"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/progress"
	"github.com/airlockdev/airlock/internal/safefs"
)

// Op is what a change does to its path.
type Op uint8

const (
	Add Op = iota + 1
	Modify
	Delete
)

func (o Op) String() string {
	switch o {
	case Add:
		return "add"
	case Modify:
		return "modify"
	case Delete:
		return "delete"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

func (o Op) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

func (o *Op) UnmarshalText(b []byte) error {
	switch string(b) {
	case "add":
		*o = Add
	case "modify":
		*o = Modify
	case "delete":
		*o = Delete
	default:
		return fmt.Errorf("unknown change op %q", b)
	}
	return nil
}

// Change is one changed path. Base is the entry at open (Kind none for an
// add); Result is the entry to apply (Kind none for a delete). A frozen
// Result file's Digest names its bytes in the object store.
type Change struct {
	Path   string         `json:"-"`
	Op     Op             `json:"op"`
	Base   manifest.Entry `json:"base"`
	Result manifest.Entry `json:"result"`
}

type changeJSON struct {
	Path   manifest.Bytes `json:"path"`
	Op     Op             `json:"op"`
	Base   manifest.Entry `json:"base"`
	Result manifest.Entry `json:"result"`
}

// MarshalJSON encodes c as json.Marshal encodes its on-disk form
// (changeJSON), written directly (manifest.Entry.AppendJSON).
func (c Change) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 256+2*len(c.Path))
	b = append(b, `{"path":`...)
	b = manifest.Bytes(c.Path).AppendJSON(b)
	b = append(b, `,"op":`...)
	b = manifest.AppendJSONString(b, c.Op.String())
	b = append(b, `,"base":`...)
	b = c.Base.AppendJSON(b)
	b = append(b, `,"result":`...)
	b = c.Result.AppendJSON(b)
	return append(b, '}'), nil
}

func (c *Change) UnmarshalJSON(b []byte) error {
	var j changeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = Change{string(j.Path), j.Op, j.Base, j.Result}
	return nil
}

// Set is a change set, sorted by path.
type Set struct {
	Changes []Change `json:"changes"`
	// GitMeta counts paths under .git directories that the command changed;
	// they are reported, never applied.
	GitMeta int `json:"git_meta"`
	// Unsupported names FIFOs, sockets and device nodes the command created:
	// a commit refuses them.
	Unsupported []manifest.Bytes `json:"unsupported,omitempty"`
}

// Counts returns how many paths are added, modified and deleted, counted
// as git counts them: files and symlinks. A directory added or deleted
// with paths beneath it is only their container and is not counted (one
// new workflow file is "1 added", not 3); one that matters on its own is:
// an empty directory added or deleted, a directory whose mode changed, a
// path that became or stopped being a directory.
func (s *Set) Counts() (added, modified, deleted int) {
	var parents map[string]bool
	for _, c := range s.Changes {
		if c.Op == Modify || (c.Base.Kind != manifest.KindDir && c.Result.Kind != manifest.KindDir) {
			continue
		}
		if parents == nil {
			parents = s.containers()
		}
		break
	}
	for _, c := range s.Changes {
		switch c.Op {
		case Add:
			if c.Result.Kind == manifest.KindDir && parents[c.Path] {
				continue
			}
			added++
		case Modify:
			modified++
		case Delete:
			if c.Base.Kind == manifest.KindDir && parents[c.Path] {
				continue
			}
			deleted++
		}
	}
	return
}

// containers are the paths that some other changed path lies beneath.
func (s *Set) containers() map[string]bool {
	out := map[string]bool{}
	for _, c := range s.Changes {
		p := c.Path
		for {
			i := strings.LastIndexByte(p, '/')
			if i < 0 {
				break
			}
			p = p[:i]
			if out[p] {
				break // its ancestors are in already
			}
			out[p] = true
		}
	}
	return out
}

// Empty reports whether nothing is to be applied.
func (s *Set) Empty() bool { return len(s.Changes) == 0 && len(s.Unsupported) == 0 }

// Paths lists the changed paths in order.
func (s *Set) Paths() []string {
	p := make([]string, len(s.Changes))
	for i, c := range s.Changes {
		p[i] = c.Path
	}
	return p
}

// Input is what Diff compares.
type Input struct {
	Base *manifest.Manifest // the base at open
	// StagedOpen is the staged tree right after staging. A file staged too
	// recently for stat to prove it unchanged later carries the digest of
	// its bytes then (stage.Result.Staged): stat alone never clears it.
	StagedOpen *manifest.Manifest
	// Staged is the staged tree now. Diff sets the Digest of each file it
	// hashes there, so that a caller knows which were proven by bytes.
	Staged    *manifest.Manifest
	BaseDir   string // to read a base file's content when stat cannot decide
	StagedDir string
	// AtOpen, when set, opens the bytes a base file held at open once the
	// base file itself no longer proves them (another commit replaced it,
	// the user edited it): the change set is against the base at open,
	// and a staged file holding exactly those bytes is unchanged, however
	// the live base moved. ok false: they cannot be had, and the path
	// counts as changed.
	AtOpen func(b manifest.Entry) (rc io.ReadCloser, ok bool)
}

// Diff computes the change set of the staged tree against the base at open.
func Diff(ctx context.Context, in Input) (*Set, error) {
	set := &Set{}
	staged := &lazyRoot{dir: in.StagedDir}
	defer staged.close()
	based := &lazyRoot{dir: in.BaseDir}
	defer based.close()
	bi, si := 0, 0
	be, se := in.Base.Entries, in.Staged.Entries
	for bi < len(be) || si < len(se) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var b, s *manifest.Entry
		switch {
		case si == len(se) || (bi < len(be) && be[bi].Path < se[si].Path):
			b = &be[bi]
			bi++
		case bi == len(be) || se[si].Path < be[bi].Path:
			s = &se[si]
			si++
		default:
			b, s = &be[bi], &se[si]
			bi++
			si++
		}
		path := pathOf(b, s)
		if manifest.IsGitMeta(path) {
			changed := b == nil || s == nil
			if !changed {
				var err error
				if changed, err = modified(in, staged, based, b, s); err != nil {
					return nil, err
				}
			}
			if changed {
				set.GitMeta++
			}
			continue
		}
		if b != nil && b.Kind == manifest.KindOther {
			// Never copied, so its absence is not a deletion. Something
			// the command put there instead is an add over a path the
			// base holds, which the drift check refuses.
			b = nil
			if s == nil {
				continue
			}
		}
		if s != nil && s.Kind == manifest.KindOther {
			set.Unsupported = append(set.Unsupported, manifest.Bytes(path))
			continue
		}
		switch {
		case b == nil:
			set.Changes = append(set.Changes, Change{Path: path, Op: Add, Result: *s})
		case s == nil:
			set.Changes = append(set.Changes, Change{Path: path, Op: Delete, Base: *b})
		default:
			changed, err := modified(in, staged, based, b, s)
			if err != nil {
				return nil, err
			}
			if changed {
				set.Changes = append(set.Changes, Change{Path: path, Op: Modify, Base: *b, Result: *s})
			}
		}
	}
	return set, nil
}

func pathOf(b, s *manifest.Entry) string {
	if b != nil {
		return b.Path
	}
	return s.Path
}

// sameStaged reports whether a staged entry is provably untouched since
// staging by its stat facts alone: they are as staged, and staging did not
// find them too recent to prove it (it recorded no digest).
func sameStaged(open *manifest.Manifest, s *manifest.Entry) bool {
	o, ok := open.Lookup(s.Path)
	if !ok || !manifest.SameStat(*o, *s) {
		return false
	}
	return o.Kind != manifest.KindFile || o.Digest == ""
}

// modified decides whether the staged entry s differs from the base entry b.
// Where it reads the staged file, it reads the file s measured, through the
// staged tree's root: a staged file that is not that file any more counts
// as changed, and the freeze then refuses it.
func modified(in Input, staged, based *lazyRoot, b, s *manifest.Entry) (bool, error) {
	if sameStaged(in.StagedOpen, s) {
		return false, nil
	}
	if o, ok := in.StagedOpen.Lookup(s.Path); ok && o.Digest != "" && manifest.SameStat(*o, *s) {
		root, err := staged.get()
		if err != nil {
			return false, err
		}
		f, err := OpenStaged(root, *s)
		if err != nil {
			return stagedErr(err)
		}
		defer f.Close()
		d, err := manifest.HashReader(io.LimitReader(f, s.Size+1))
		if err != nil {
			return false, fmt.Errorf("read staged file %s: %w", f.Name(), err)
		}
		s.Digest = d
		return d != o.Digest, nil
	}
	if !manifest.SameShape(*b, *s) {
		return true, nil
	}
	if s.Kind != manifest.KindFile {
		return false, nil
	}
	if b.Size != s.Size {
		return true, nil
	}
	// Same size, stat moved: only the bytes can tell, compared with the
	// bytes at open. The base file holds them only while it is itself
	// unchanged since open; after that, the content store may (in.AtOpen),
	// or else the path counts as changed and the drift check decides.
	root, err := staged.get()
	if err != nil {
		return false, err
	}
	if broot, err := based.get(); err == nil {
		if fa, err := OpenOriginal(broot, *b); err == nil {
			defer fa.Close()
			return differStaged(fa, root, *s)
		}
	}
	if in.AtOpen == nil {
		return true, nil
	}
	rc, ok := in.AtOpen(*b)
	if !ok {
		return true, nil // the original cannot be read: a change, the checks decide
	}
	defer rc.Close()
	return differStaged(rc, root, *s)
}

// differStaged compares the bytes at open, a, with the staged file e
// measured beneath staged.
func differStaged(a io.Reader, staged *safefs.Root, e manifest.Entry) (bool, error) {
	fb, err := OpenStaged(staged, e)
	if err != nil {
		return stagedErr(err)
	}
	defer fb.Close()
	return differ(a, fb)
}

// stagedErr turns a failed read of a staged file into Diff's answer: a
// file that is not the one measured is a change (the freeze refuses it);
// anything else is an error.
func stagedErr(err error) (bool, error) {
	var sc *StagedChangedError
	if errors.As(err, &sc) {
		return true, nil
	}
	return false, err
}

// lazyRoot opens the staged tree's root on first use: most diffs decide
// by stat alone and never read a staged file.
type lazyRoot struct {
	dir  string
	root *safefs.Root
}

func (l *lazyRoot) get() (*safefs.Root, error) {
	if l.root == nil {
		r, err := safefs.OpenRoot(l.dir)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", l.dir, err)
		}
		l.root = r
	}
	return l.root, nil
}

func (l *lazyRoot) close() {
	if l.root != nil {
		l.root.Close()
	}
}

// OpenOriginal opens the base file the entry b measured, beneath base and
// without following a symlink on the way, and only if it is still that very
// file, unchanged since (a regular file with the same stat facts, and the
// same bytes where b carries a digest because it was measured too soon
// after a change for stat to prove that): its bytes are then the
// original's. Anything else — a directory on the way swapped for a
// symlink, a FIFO or device put there, a file written since — fails, and
// the caller counts the path as changed; nothing outside the base is read,
// and no open can block.
func OpenOriginal(base *safefs.Root, b manifest.Entry) (*os.File, error) {
	f, info, err := base.OpenRegular(b.Path)
	if err != nil {
		return nil, err
	}
	now := manifest.Entry{Path: b.Path, Kind: manifest.KindFile, Mode: info.Mode & manifest.ModeMask, Size: info.Size,
		MtimeNs: info.MtimeNs, CtimeNs: info.CtimeNs, Ino: info.Ino, Dev: info.Dev}
	if !manifest.SameStat(now, b) {
		f.Close()
		return nil, fmt.Errorf("%s changed in the base since it was measured", b.Path)
	}
	if b.Digest != "" {
		d, err := manifest.HashReader(io.LimitReader(f, b.Size+1))
		if err == nil && d == b.Digest {
			_, err = f.Seek(0, io.SeekStart)
		} else if err == nil {
			err = fmt.Errorf("%s changed in the base since it was measured (same stat facts, other bytes)", b.Path)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// DifferStaged compares the original file b of base with the staged file the entry
// e measured beneath staged, byte by byte, stopping at the first
// difference. An original that cannot be read counts as different (the
// path is then a change, and the checks decide); so does a staged file
// that is no longer the one e measured (the freeze refuses it). A staged
// file that cannot be read is an error.
func DifferStaged(base *safefs.Root, b manifest.Entry, staged *safefs.Root, e manifest.Entry) (bool, error) {
	fa, err := OpenOriginal(base, b)
	if err != nil {
		return true, nil
	}
	defer fa.Close()
	return differStaged(fa, staged, e)
}

// differ compares two open files; b is the staged one. b is never read past
// the point where a ends, so a staged file that grows without end cannot
// keep it reading.
func differ(fa io.Reader, fb *os.File) (bool, error) {
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || string(ba[:na]) != string(bb[:nb]) {
			return true, nil
		}
		aEOF := ea == io.EOF || ea == io.ErrUnexpectedEOF
		bEOF := eb == io.EOF || eb == io.ErrUnexpectedEOF
		if aEOF || bEOF {
			return aEOF != bEOF, nil
		}
		if ea != nil {
			return true, nil
		}
		if eb != nil {
			return false, fmt.Errorf("read staged file %s: %w", fb.Name(), eb)
		}
	}
}

// ObjectPath is where a frozen object with the given digest lives.
func ObjectPath(objects, digest string) string {
	return filepath.Join(objects, strings.TrimPrefix(digest, manifest.DigestPrefix))
}

// Freeze copies the content of every added or modified regular file from
// the staged tree into the content-addressed objects directory and records
// its digest in the change's Result. The digest is taken from the bytes as
// they are written into the store, so a later write to the staged file
// cannot change what gets checked and applied.
//
// The agent may still be rearranging the staged tree while it is frozen.
// Each file is therefore opened beneath the staged tree's root without
// following a symlink in any component (safefs), only if it is a regular
// file, and only if it is the very file the change set measured (device,
// inode, size, times, mode); at most its measured size plus one byte is
// read, and it must still be that file afterwards. Anything else is a
// *StagedChangedError: a directory swapped for a symlink to /etc or /dev
// never has anything outside the staged tree read, and a device is never
// read at all.
//
// Every object is durable when Freeze returns, and nothing names one
// before that (the saved change set, a journal): an object of a file of
// at most 64 KiB, whose digest is known before it is written, is written
// under that digest; a larger one under a temporary name, renamed to its
// digest once its bytes are durable. A process killed before Freeze
// returns leaves objects that the next freeze of the transaction removes
// with the rest of its frozen change set.
func Freeze(ctx context.Context, set *Set, stagedDir, objects string) error {
	if err := os.MkdirAll(objects, 0o700); err != nil {
		return fmt.Errorf("create object store %s: %w", objects, err)
	}
	var idx []int // the changes that are files
	var bytes int64
	for i, c := range set.Changes {
		if c.Result.Kind == manifest.KindFile {
			idx = append(idx, i)
			bytes += c.Result.Size
		}
	}
	if len(idx) == 0 {
		return nil
	}
	root, err := safefs.OpenRoot(stagedDir)
	if err != nil {
		return fmt.Errorf("freeze: open the staged tree: %w", err)
	}
	defer root.Close()
	// Where one flush of the objects' file system stands for an fsync of
	// each object, the objects are written without one and flushed
	// together, before the larger ones are named by their digests.
	var fss *safefs.FSSync
	if len(idx) >= safefs.FSSyncMin {
		if fss, err = safefs.OpenFSSync(objects); err != nil {
			return err
		}
		defer fss.Close()
	}
	// The files are frozen on several goroutines (fanout): each is read,
	// checked and written on its own. pending holds, by file, the object
	// written and not yet named (none for bytes another file holds too).
	fr := &freezer{ctx: ctx, root: root, objects: objects, fsync: fss == nil, claimed: map[string]bool{}}
	pending := make([]*safefs.TempFile, len(idx))
	defer func() {
		for _, tmp := range pending {
			if tmp != nil {
				tmp.Cleanup()
			}
		}
	}()
	meter := progress.Start(ctx, "committing", len(idx), bytes)
	defer meter.Done()
	var frozen atomic.Int64
	err = fanout.Each(len(idx), func(k int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := &set.Changes[idx[k]]
		tmp, d, err := fr.file(c.Path, c.Result)
		if err != nil {
			return err
		}
		pending[k] = tmp
		c.Result.Digest = d
		meter.Add(1, c.Result.Size)
		// A pause here lets a test rearrange the staged tree exactly
		// between two files, as an agent timing the freeze would.
		fault.Count("freeze", int(frozen.Add(1)))
		return nil
	})
	if err != nil {
		return err
	}
	if fss != nil {
		if err := fss.Sync(); err != nil {
			return fmt.Errorf("freeze into %s: %w", objects, err)
		}
	}
	for k, tmp := range pending {
		if tmp == nil {
			continue
		}
		if err := tmp.RenameSynced(ObjectPath(objects, set.Changes[idx[k]].Result.Digest)); err != nil {
			return fmt.Errorf("freeze into %s: %w", objects, err)
		}
	}
	return safefs.SyncDir(objects)
}

// freezer is one Freeze in progress: the staged tree it reads, the object
// store it writes, and the digests claimed so far, each of which one
// object is written for however many files hold its bytes.
type freezer struct {
	ctx     context.Context
	root    *safefs.Root
	objects string
	fsync   bool

	mu      sync.Mutex
	claimed map[string]bool

	creating sync.Mutex // held while an object is created (writeObject)
}

// claim reports whether d is new to this freeze: the caller that gets true
// writes its object; the others need none.
func (f *freezer) claim(d string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimed[d] {
		return false
	}
	f.claimed[d] = true
	return true
}

// smallFile is the largest file frozen through memory: read whole, hashed,
// and written as an object only when no other file of the change set has
// its bytes. A hole in one reads as zeros and is written as such (a few
// KiB at most); larger files keep their holes through filecopy.
const smallFile = 64 << 10

// file freezes the staged file rel, which must be the file want measured:
// it returns the new object's temporary file, closed, with the digest of
// its bytes (fsync'd with f.fsync), or no file where another of the change
// set already holds those bytes. The caller names it by that digest once
// its bytes are durable, or cleans it up.
func (f *freezer) file(rel string, want manifest.Entry) (*safefs.TempFile, string, error) {
	want.Path = rel
	in, err := OpenStaged(f.root, want)
	if err != nil {
		return nil, "", err
	}
	defer in.Close()
	if testHookOpened != nil {
		testHookOpened(rel)
	}
	if want.Size > smallFile {
		tmp, d, err := freezeFile(f.ctx, in, want, f.objects, f.fsync)
		if err != nil {
			return nil, "", err
		}
		if !f.claim(d) {
			tmp.Cleanup()
			return nil, d, nil
		}
		return tmp, d, nil
	}
	// One byte past the measured size tells a file that grew; nothing
	// more is read, whatever the file has become.
	buf := make([]byte, want.Size+1)
	n, err := io.ReadFull(in, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, "", fmt.Errorf("freeze %s: %w", in.Name(), err)
	}
	if err := grewOrShrank(in, rel, int64(n), want); err != nil {
		return nil, "", err
	}
	buf = buf[:n]
	d := manifest.HashBytes(buf)
	if !f.claim(d) {
		return nil, d, nil
	}
	// The digest is known before the object is written: it is written
	// under it (see Freeze for when its bytes are durable).
	if err := writeObject(ObjectPath(f.objects, d), buf, f.fsync, &f.creating); err != nil {
		return nil, "", fmt.Errorf("freeze %s: %w", in.Name(), err)
	}
	return nil, d, nil
}

// writeObject writes b as the new object p and closes it; with fsync, it
// fsyncs it first. A failure removes it. The file is created holding
// creating: the objects share one directory, whose lock the kernel holds
// while it finds the file an inode, and goroutines creating there at once
// would spin on it.
func writeObject(p string, b []byte, fsync bool, creating *sync.Mutex) (err error) {
	creating.Lock()
	out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	creating.Unlock()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(p)
		}
	}()
	if _, err := out.Write(b); err != nil {
		return err
	}
	if fsync {
		if err := out.Sync(); err != nil {
			return fmt.Errorf("fsync: %w", err)
		}
	}
	return nil
}

// grewOrShrank refuses a staged file of which n bytes were read, up to one
// past its measured size, unless that is its measured size and it is still
// the very file measured.
func grewOrShrank(in *os.File, rel string, n int64, want manifest.Entry) error {
	if n != want.Size {
		how := "grew"
		if n < want.Size {
			how = "shrank"
		}
		return &StagedChangedError{Path: rel, File: in.Name(), What: fmt.Sprintf("%s while it was being read (%d bytes measured)", how, want.Size)}
	}
	fi, err := in.Stat()
	if err != nil {
		return fmt.Errorf("freeze %s: %w", in.Name(), err)
	}
	if what := notSameFile(manifest.FromFileInfo(fi), want); what != "" {
		return &StagedChangedError{Path: rel, File: in.Name(), What: what + " while it was being read"}
	}
	return nil
}

// freezeFile copies the opened staged file in, which must be the file want
// measured, into a new temporary file in objects and returns it, closed,
// with the digest of its bytes; with fsync, those are fsync'd. The caller
// names it by that digest once its bytes are durable, or cleans it up.
func freezeFile(ctx context.Context, in *os.File, want manifest.Entry, objects string, fsync bool) (*safefs.TempFile, string, error) {
	tmp, err := safefs.CreateTemp(objects, ".freeze-*")
	if err != nil {
		return nil, "", fmt.Errorf("freeze %s: %w", in.Name(), err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Cleanup()
		}
	}()
	h := sha256.New()
	// One byte past the measured size tells a file that grew; nothing
	// more is read, whatever the file has become. Holes stay holes in the
	// object, and are hashed as the zeros they read as.
	n, err := filecopy.Copy(ctx, tmp.File, in, filecopy.Options{Hash: h, Max: want.Size + 1})
	if err != nil {
		return nil, "", fmt.Errorf("freeze %s: %w", in.Name(), err)
	}
	if err := grewOrShrank(in, want.Path, n, want); err != nil {
		return nil, "", err
	}
	if fsync {
		if err := tmp.Sync(); err != nil {
			return nil, "", fmt.Errorf("freeze %s: fsync: %w", in.Name(), err)
		}
	}
	if err := tmp.Close(); err != nil {
		return nil, "", fmt.Errorf("freeze %s: %w", in.Name(), err)
	}
	ok = true
	return tmp, manifest.Sum(h), nil
}

// testHookOpened, set only by this package's tests, runs between the open
// of a staged file and its read: the one moment no pause point can reach
// from outside the process.
var testHookOpened func(rel string)

// StagedChangedError reports a staged file that is not, when the commit
// reads it, the file the change set measured: it was written to, replaced,
// removed, or swapped for (or put behind) a symlink, a directory, a FIFO or
// a device node. Nothing of what is there instead was read. The agent is
// still writing: it can stop and commit again.
type StagedChangedError struct {
	Path string // relative to the staged tree
	File string // the staged path, for the message
	What string // what happened to it
}

func (e *StagedChangedError) Error() string {
	return fmt.Sprintf("%s: the staged file %s since the change set was computed; stop whatever is still writing in the workspace and try again", e.File, e.What)
}

// OpenStaged opens, beneath the staged tree's root, the regular file that
// the entry e measured (e.Path relative to the root). A symlink anywhere on
// the way, anything but a regular file, a missing file, or a file that is
// not e's (device, inode, size, times, mode) is a *StagedChangedError; a
// file its owner cannot read keeps the error that says so.
func OpenStaged(root *safefs.Root, e manifest.Entry) (*os.File, error) {
	full := filepath.Join(root.Path(), filepath.FromSlash(e.Path))
	f, info, err := root.OpenRegular(e.Path)
	if err != nil {
		changed := func(what string) error { return &StagedChangedError{Path: e.Path, File: full, What: what} }
		switch {
		case errors.Is(err, fs.ErrPermission):
			return nil, fmt.Errorf("%s: the staged file cannot be read (%w); make it readable and commit again", full, unwrapPath(err))
		case errors.Is(err, safefs.ErrSymlink):
			return nil, changed("was replaced by a symlink, or a directory on its path was (" + unwrapPath(err).Error() + ")")
		case errors.Is(err, safefs.ErrNotRegular):
			return nil, changed("was replaced by something that is not a regular file (" + unwrapPath(err).Error() + ")")
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			return nil, changed("was removed")
		case errors.Is(err, safefs.ErrEscape):
			return nil, changed("is not a clean path beneath the staged tree")
		}
		return nil, fmt.Errorf("read staged file %s: %w", full, unwrapPath(err))
	}
	now := manifest.Entry{Kind: manifest.KindFile, Mode: info.Mode & manifest.ModeMask, Size: info.Size,
		MtimeNs: info.MtimeNs, CtimeNs: info.CtimeNs, Ino: info.Ino, Dev: info.Dev}
	if what := notSameFile(now, e); what != "" {
		f.Close()
		return nil, &StagedChangedError{Path: e.Path, File: full, What: what}
	}
	return f, nil
}

// notSameFile says how the regular file now differs from the entry it
// should be, or "" when every stat fact a write or a swap would move
// agrees.
func notSameFile(now, want manifest.Entry) string {
	switch {
	case now.Dev != want.Dev || now.Ino != want.Ino:
		return "was replaced by another file"
	case now.Size != want.Size:
		return fmt.Sprintf("changed size (%d bytes measured, %d now)", want.Size, now.Size)
	case now.MtimeNs != want.MtimeNs || now.CtimeNs != want.CtimeNs:
		return "was written to"
	case now.Mode != want.Mode:
		return "changed mode"
	}
	return ""
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteObject stores content in the objects directory under its digest, as
// Freeze does for staged files: a merged result is frozen the same way.
func WriteObject(objects string, content []byte) (string, error) {
	d := manifest.HashBytes(content)
	dst := ObjectPath(objects, d)
	if _, err := os.Lstat(dst); err == nil {
		return d, nil
	}
	if err := safefs.WriteFile(dst, content, 0o600); err != nil {
		return "", err
	}
	return d, nil
}

// Clone copies the set so that results can be replaced (by merges) without
// touching the frozen original.
func (s *Set) Clone() *Set {
	c := *s
	c.Changes = append([]Change(nil), s.Changes...)
	c.Unsupported = append([]manifest.Bytes(nil), s.Unsupported...)
	return &c
}

// Digest is the change set's digest: for each change in path order, the
// NUL-terminated fields path, op, result kind, result mode and result
// content (file digest or symlink target). It names exactly what a commit
// would apply.
func (s *Set) Digest() string {
	h := sha256.New()
	for _, c := range s.Changes {
		content := c.Result.Digest
		if c.Result.Kind == manifest.KindSymlink {
			content = c.Result.Target
		}
		for _, f := range []string{c.Path, c.Op.String(), c.Result.Kind.String(), strconv.FormatUint(uint64(c.Result.Mode), 8), content} {
			io.WriteString(h, f)
			h.Write([]byte{0})
		}
	}
	return manifest.Sum(h)
}

// Save writes the change set durably.
func (s *Set) Save(path string) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode change set %s: %w", path, err)
	}
	return safefs.WriteFile(path, b, 0o600)
}

// Load reads a change set written by Save. It checks only that it decodes
// and is sorted; what its paths may name is the commit's boundary check.
func Load(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read change set: %w", err)
	}
	var s Set
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("corrupt change set %s: %w", path, err)
	}
	for i, c := range s.Changes {
		if c.Op < Add || c.Op > Delete {
			return nil, fmt.Errorf("corrupt change set %s: change %d has no op", path, i)
		}
		if i > 0 && s.Changes[i-1].Path >= c.Path {
			return nil, fmt.Errorf("corrupt change set %s: changes out of order at %q", path, c.Path)
		}
	}
	return &s, nil
}
