package git

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// ErrNotFound is git missing from PATH.
var ErrNotFound = errors.New("git is not on PATH")

// Version is the git that airlock runs.
type Version struct {
	Path string // where PATH found it
	Text string // what `git --version` said: "git version 2.39.5"
}

// Installed asks the git on PATH for its version. The error is
// [ErrNotFound] when there is none.
func Installed(ctx context.Context) (Version, error) {
	p, err := exec.LookPath("git")
	if err != nil {
		return Version{}, ErrNotFound
	}
	out, err := Run(ctx, "--version")
	if err != nil {
		return Version{Path: p}, fmt.Errorf("%s --version failed: %w", p, err)
	}
	return Version{Path: p, Text: strings.TrimSpace(string(out))}, nil
}

// Number reads major and minor from "git version 2.39.5" (vendor suffixes
// such as "2.39.3 (Apple Git-146)" included).
func (v Version) Number() (major, minor int, ok bool) {
	f := strings.Fields(v.Text)
	if len(f) < 3 || f[0] != "git" || f[1] != "version" {
		return 0, 0, false
	}
	parts := strings.SplitN(f[2], ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}
