package safefs

import (
	"errors"
	"fmt"
	"strings"
)

// ErrEscape reports a path that is not a clean relative path beneath the
// root: empty where a name is needed, absolute, holding a "." or ".."
// component, an empty component or a NUL byte, or one that the kernel found
// to resolve outside the root.
var ErrEscape = errors.New("not a clean relative path beneath the root")

// ErrSymlink reports a symlink met where safefs would have to follow it: in
// a directory component of a path, or as the final component of an
// operation that must not follow it (open, chmod, fsync).
var ErrSymlink = errors.New("refusing to follow a symlink")

// CheckRel reports whether rel is a clean, non-empty, slash-separated path
// relative to a root; the error matches ErrEscape. Callers use it to vet
// paths that come from stored state before acting on them.
func CheckRel(rel string) error { return checkRel(rel) }

// checkRel reports whether rel is a clean, non-empty, slash-separated path
// relative to the root. It runs before any system call, so that a malformed
// path never reaches the kernel, where "a//b" or "./a" would quietly resolve.
func checkRel(rel string) error {
	if rel == "" {
		return fmt.Errorf("%w: empty path", ErrEscape)
	}
	if rel[0] == '/' {
		return fmt.Errorf("%w: absolute path", ErrEscape)
	}
	if strings.IndexByte(rel, 0) >= 0 {
		return fmt.Errorf("%w: NUL byte in path", ErrEscape)
	}
	for c := range strings.SplitSeq(rel, "/") {
		switch c {
		case "":
			return fmt.Errorf("%w: empty path component", ErrEscape)
		case ".":
			return fmt.Errorf("%w: %q component", ErrEscape, c)
		case "..":
			return fmt.Errorf("%w: %q component", ErrEscape, c)
		}
	}
	return nil
}

// checkRelOrRoot is checkRel for operations where "" names the root itself.
func checkRelOrRoot(rel string) error {
	if rel == "" {
		return nil
	}
	return checkRel(rel)
}

// splitRel splits a checked path into its components; "" has none.
func splitRel(rel string) []string {
	if rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// joinRel joins a checked directory path and a name.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// chunkComponents groups components into slash-joined paths of at most max
// bytes each, so that a path longer than PATH_MAX can still be resolved one
// chunk at a time. A single component longer than max gets a chunk of its
// own, for the kernel to refuse with ENAMETOOLONG.
func chunkComponents(comps []string, max int) []string {
	var out []string
	var b strings.Builder
	for _, c := range comps {
		if b.Len() > 0 && b.Len()+1+len(c) > max {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(c)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// errEscapedRoot is what openat2's EXDEV becomes: the kernel saw the lookup
// leave the root, which a checked path can only do through a race.
var errEscapedRoot = fmt.Errorf("%w: the lookup left the root", ErrEscape)
