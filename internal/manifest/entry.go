package manifest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"unicode/utf8"
)

// Kind is the type of a tree entry.
type Kind uint8

const (
	KindNone    Kind = iota // absent: used for the missing side of an add or delete
	KindFile                // regular file
	KindDir                 // directory
	KindSymlink             // symbolic link
	KindOther               // FIFO, socket or device node: never copied, never applied
)

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindFile:
		return "file"
	case KindDir:
		return "dir"
	case KindSymlink:
		return "symlink"
	case KindOther:
		return "other"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MarshalText makes kinds readable in JSON state files.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses the names MarshalText writes.
func (k *Kind) UnmarshalText(b []byte) error {
	switch string(b) {
	case "none":
		*k = KindNone
	case "file":
		*k = KindFile
	case "dir":
		*k = KindDir
	case "symlink":
		*k = KindSymlink
	case "other":
		*k = KindOther
	default:
		return fmt.Errorf("unknown entry kind %q", b)
	}
	return nil
}

// KindOf maps a file mode to the entry kind it describes.
func KindOf(m fs.FileMode) Kind {
	switch {
	case m.IsRegular():
		return KindFile
	case m.IsDir():
		return KindDir
	case m&fs.ModeSymlink != 0:
		return KindSymlink
	}
	return KindOther
}

// Entry is one measured path. Mode holds the permission bits plus setuid,
// setgid and sticky (fs.FileMode form), never the type bits: Kind has those.
type Entry struct {
	Path    string
	Kind    Kind
	Mode    fs.FileMode
	Size    int64
	MtimeNs int64
	CtimeNs int64
	Ino     uint64
	Dev     uint64
	Target  string // symlink target, raw bytes
	Digest  string // "sha256:<hex>" for regular files once computed; empty until then
}

// ModeMask selects the mode bits an entry records and a commit applies.
const ModeMask = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// SameStat reports whether two measurements of a path agree on every stat
// fact that a write to it would disturb. ctime is included because no user
// call can set it: content restored with an old mtime (cp -p, tar x) still
// moves ctime.
func SameStat(a, b Entry) bool {
	return a.Kind == b.Kind && a.Mode == b.Mode && a.Size == b.Size &&
		a.MtimeNs == b.MtimeNs && a.CtimeNs == b.CtimeNs &&
		a.Ino == b.Ino && a.Dev == b.Dev && a.Target == b.Target
}

// Same reports whether a and b hold the very same entries, every field
// alike: a manifest saved for one is then, byte for byte, the file of the
// other, and a caller links the file rather than write it again.
func Same(a, b *Manifest) bool {
	if a == nil || b == nil || len(a.Entries) != len(b.Entries) {
		return false
	}
	for i := range a.Entries {
		if a.Entries[i] != b.Entries[i] {
			return false
		}
	}
	return true
}

// SameShape reports whether two entries are equal in what a commit applies
// (kind, mode, symlink target), leaving content to the caller.
func SameShape(a, b Entry) bool {
	if a.Kind != b.Kind || a.Target != b.Target {
		return false
	}
	// A symlink's own mode is meaningless on Linux and not settable.
	return a.Kind == KindSymlink || a.Mode == b.Mode
}

// entryJSON is Entry's on-disk form. Path and Target go through Bytes so that
// names that are not valid UTF-8 survive encoding/json, which would otherwise
// replace their bytes with U+FFFD.
type entryJSON struct {
	Path    Bytes       `json:"path"`
	Kind    Kind        `json:"kind"`
	Mode    fs.FileMode `json:"mode,omitempty"`
	Size    int64       `json:"size,omitempty"`
	MtimeNs int64       `json:"mtime_ns,omitempty"`
	CtimeNs int64       `json:"ctime_ns,omitempty"`
	Ino     uint64      `json:"ino,omitempty"`
	Dev     uint64      `json:"dev,omitempty"`
	Target  Bytes       `json:"target,omitempty"`
	Digest  string      `json:"digest,omitempty"`
}

// MarshalJSON encodes e as json.Marshal encodes its on-disk form
// (entryJSON), through AppendJSON.
func (e Entry) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

func (e *Entry) UnmarshalJSON(b []byte) error {
	var j entryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Entry{string(j.Path), j.Kind, j.Mode, j.Size, j.MtimeNs, j.CtimeNs, j.Ino, j.Dev, string(j.Target), j.Digest}
	return nil
}

// Bytes is a string of raw bytes (a file name, a path, a symlink target) that
// encodes to JSON exactly: as a JSON string when it is valid UTF-8, else as
// {"base64": "..."}.
type Bytes string

func (s Bytes) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(s)) {
		return json.Marshal(string(s))
	}
	return json.Marshal(struct {
		B64 string `json:"base64"`
	}{base64.StdEncoding.EncodeToString([]byte(s))})
}

func (s *Bytes) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var v struct {
			B64 *string `json:"base64"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		if v.B64 == nil {
			return fmt.Errorf("raw-bytes object without a base64 field")
		}
		raw, err := base64.StdEncoding.DecodeString(*v.B64)
		if err != nil {
			return fmt.Errorf("raw-bytes base64: %w", err)
		}
		*s = Bytes(raw)
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	*s = Bytes(str)
	return nil
}
