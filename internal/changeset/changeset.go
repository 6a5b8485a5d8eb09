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
	"syscall"

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

func (c Change) MarshalJSON() ([]byte, error) {
	return json.Marshal(changeJSON{manifest.Bytes(c.Path), c.Op, c.Base, c.Result})
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

// Counts returns how many paths are added, modified and deleted.
func (s *Set) Counts() (added, modified, deleted int) {
	for _, c := range s.Changes {
		switch c.Op {
		case Add:
			added++
		case Modify:
			modified++
		case Delete:
			deleted++
		}
	}
	return
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

// racyWindowNs is how close a file's mtime may be to its ctime before stat
// alone can no longer prove it unchanged: a write inside the same timestamp
// tick as the staging copy, keeping the size, would leave every stat fact
// equal. Such files are compared by content, as git does for racy entries.
const racyWindowNs = 2_000_000_000

// Input is what Diff compares.
type Input struct {
	Base       *manifest.Manifest // the base at open
	StagedOpen *manifest.Manifest // the staged tree right after staging
	Staged     *manifest.Manifest // the staged tree now
	BaseDir    string             // to read a base file's content when stat cannot decide
	StagedDir  string
}

// Diff computes the change set of the staged tree against the base at open.
func Diff(ctx context.Context, in Input) (*Set, error) {
	set := &Set{}
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
				if changed, err = modified(in, b, s); err != nil {
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
			changed, err := modified(in, b, s)
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
// staging by its stat facts alone.
func sameStaged(open *manifest.Manifest, s *manifest.Entry) bool {
	o, ok := open.Lookup(s.Path)
	if !ok || !manifest.SameStat(*o, *s) {
		return false
	}
	return !Racy(*o)
}

// Racy reports whether a staged file's stat facts cannot prove it unchanged
// later: its mtime is so close to the moment it was staged that a write in
// the same timestamp tick could keep every fact. Open records the digest
// of such files, so that Diff can compare bytes instead.
func Racy(o manifest.Entry) bool {
	return o.Kind == manifest.KindFile && o.CtimeNs-o.MtimeNs <= racyWindowNs
}

func modified(in Input, b, s *manifest.Entry) (bool, error) {
	if sameStaged(in.StagedOpen, s) {
		return false, nil
	}
	if o, ok := in.StagedOpen.Lookup(s.Path); ok && o.Digest != "" && manifest.SameStat(*o, *s) {
		d, err := manifest.HashFile(filepath.Join(in.StagedDir, filepath.FromSlash(s.Path)))
		if err != nil {
			return false, fmt.Errorf("read staged file: %w", err)
		}
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
	// Same size, stat moved: only the bytes can tell. The base file holds
	// the original bytes only while it is itself unchanged since open;
	// otherwise the path counts as changed and the drift check decides.
	bpath := filepath.Join(in.BaseDir, filepath.FromSlash(b.Path))
	now, err := manifest.Lstat(bpath)
	if err != nil || !manifest.SameStat(now, *b) {
		return true, nil
	}
	return Differ(bpath, filepath.Join(in.StagedDir, filepath.FromSlash(s.Path)))
}

// Differ compares an original file a with a staged file b byte by byte,
// stopping at the first difference. An original that cannot be read counts
// as different (the path is then a change, and the checks decide); a
// staged file that cannot be read is an error.
func Differ(a, b string) (bool, error) {
	fa, err := os.OpenFile(a, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return true, nil
	}
	defer fa.Close()
	fb, err := os.OpenFile(b, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false, fmt.Errorf("read staged file %s: %w", b, err)
	}
	defer fb.Close()
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
			return false, fmt.Errorf("read staged file %s: %w", b, eb)
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
func Freeze(ctx context.Context, set *Set, stagedDir, objects string) error {
	if err := os.MkdirAll(objects, 0o700); err != nil {
		return fmt.Errorf("create object store %s: %w", objects, err)
	}
	var files int
	var bytes int64
	for _, c := range set.Changes {
		if c.Result.Kind == manifest.KindFile {
			files++
			bytes += c.Result.Size
		}
	}
	meter := progress.Start(ctx, "committing", files, bytes)
	defer meter.Done()
	for i := range set.Changes {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := &set.Changes[i]
		if c.Result.Kind != manifest.KindFile {
			continue
		}
		src := filepath.Join(stagedDir, filepath.FromSlash(c.Path))
		d, size, err := freezeFile(src, objects)
		if err != nil {
			return err
		}
		c.Result.Digest = d
		c.Result.Size = size
		meter.Add(1, size)
	}
	return safefs.SyncDir(objects)
}

func freezeFile(src, objects string) (string, int64, error) {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return "", 0, fmt.Errorf("freeze %s: the staged file cannot be read (%w); make it readable and commit again", src, err)
		}
		return "", 0, fmt.Errorf("freeze %s: %w", src, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(objects, ".freeze-*")
	if err != nil {
		return "", 0, fmt.Errorf("freeze %s: %w", src, err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), in)
	if err != nil {
		return "", 0, fmt.Errorf("freeze %s: %w", src, err)
	}
	if err := tmp.Sync(); err != nil {
		return "", 0, fmt.Errorf("freeze %s: fsync: %w", src, err)
	}
	d := manifest.Sum(h)
	if err := os.Rename(tmp.Name(), ObjectPath(objects, d)); err != nil {
		return "", 0, fmt.Errorf("freeze %s: %w", src, err)
	}
	return d, n, nil
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
