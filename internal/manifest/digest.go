package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/airlockdev/airlock/internal/safefs"
)

// DigestPrefix marks every digest airlock writes, so the algorithm is named
// wherever a digest is shown.
const DigestPrefix = "sha256:"

// HashFile returns the content digest of a regular file, refusing to follow
// a symlink in its final component.
func HashFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return HashReader(f)
}

// HashReader returns the digest of everything r yields.
func HashReader(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return Sum(h), nil
}

// HashBytes returns the digest of b.
func HashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return DigestPrefix + hex.EncodeToString(s[:])
}

// Sum formats a finished sha256 hash as a digest.
func Sum(h hash.Hash) string { return DigestPrefix + hex.EncodeToString(h.Sum(nil)) }

// TreeDigest is the digest of a set of tree entries: for each entry in path
// order that is present, not git metadata and not an unsupported kind,
// the NUL-terminated fields path, kind, octal mode, and content (the file's
// digest, the symlink's target, empty for a directory). File names cannot
// hold NUL, so the framing is unambiguous. content must return the digest of
// a regular file entry.
func TreeDigest(entries []Entry, content func(*Entry) (string, error)) (string, error) {
	h := sha256.New()
	for i := range entries {
		e := &entries[i]
		if e.Kind == KindNone || e.Kind == KindOther || IsGitMeta(e.Path) {
			continue
		}
		var c string
		switch e.Kind {
		case KindFile:
			d, err := content(e)
			if err != nil {
				return "", err
			}
			c = d
		case KindSymlink:
			c = e.Target
		}
		mode := e.Mode
		if e.Kind == KindSymlink {
			mode = 0
		}
		io.WriteString(h, e.Path)
		h.Write([]byte{0})
		io.WriteString(h, e.Kind.String())
		h.Write([]byte{0})
		io.WriteString(h, strconv.FormatUint(uint64(mode), 8))
		h.Write([]byte{0})
		io.WriteString(h, c)
		h.Write([]byte{0})
	}
	return Sum(h), nil
}

type manifestFile struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

// Save writes the manifest durably, in the binary format (see encode.go).
func (m *Manifest) Save(path string) error {
	return safefs.WriteFile(path, encode(m.Entries), 0o600)
}

// SaveAs writes m to path as Save does, its bytes on disk before the name
// points at them, but leaves the directory's fsync to the caller, who
// syncs it once all its files are in. Where same is not "", it is a
// manifest file that holds exactly m's entries already (one Save wrote for
// entries Same as m's, or that was decoded into them): path becomes a
// second name of it, and m is written again only where the link cannot be
// made.
func (m *Manifest) SaveAs(path, same string) error {
	if same != "" && os.Link(same, path) == nil {
		return nil
	}
	return safefs.WriteFileUnsynced(path, encode(m.Entries), 0o600)
}

// Load reads a manifest written by Save, or by an older airlock in the
// JSON form. A manifest that does not decode, or whose entries are out of
// order or repeated, is refused: the change set computed from it could not
// be trusted.
func Load(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return Parse(path, b)
}

// Parse decodes a manifest file's bytes (read by the caller, for instance
// through the state package's safety checks); path names it in errors.
func Parse(path string, b []byte) (*Manifest, error) {
	if bytes.HasPrefix(b, []byte(magicV2)) {
		es, err := decode(b)
		if err != nil {
			return nil, fmt.Errorf("corrupt manifest %s: %w", path, err)
		}
		return &Manifest{Entries: es}, nil
	}
	var f manifestFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("corrupt manifest %s: %w", path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("manifest %s: unknown version %d", path, f.Version)
	}
	for i := 1; i < len(f.Entries); i++ {
		if f.Entries[i-1].Path >= f.Entries[i].Path {
			return nil, fmt.Errorf("corrupt manifest %s: entries out of order at %q", path, f.Entries[i].Path)
		}
	}
	return &Manifest{Entries: f.Entries}, nil
}
