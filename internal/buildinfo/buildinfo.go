package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Set by release builds (scripts/release.sh) with
//
//	-ldflags "-X github.com/airlockdev/airlock/internal/buildinfo.version=v1.2.3 -X ...commit=<sha> -X ...commitTime=<RFC 3339>"
//
// A stamped version wins over the module version in the build
// information: a release is built from a checkout, where the go command
// can only name a pseudo-version (or "(devel)"), while the person
// releasing names the version on purpose. The commit is stamped too
// because release builds use -buildvcs=false: the go command finds no
// repository in a git worktree (its .git is a file) and none in a source
// tarball, and a build must not differ by where it was made.
var version, commit, commitTime string

// devel is what the go command reports for a main module built from a
// checkout without a version: kept as the version then.
const devel = "(devel)"

// Info is one build's identity. Its JSON is `airlock version --json`'s
// (docs/json.md).
type Info struct {
	Version string `json:"version"`
	// Commit is "" when the build carries no VCS information (go install
	// of a released version, or -buildvcs=false).
	Commit     string    `json:"commit"`
	CommitTime time.Time `json:"commit_time,omitzero"`
	// Dirty says the commit's tree had uncommitted changes when built.
	Dirty    bool   `json:"dirty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// Get reads this binary's build information and stamps.
func Get() Info {
	in := Info{Version: devel, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		in = fromBuildInfo(bi, in)
	}
	if version != "" {
		in.Version = version
	}
	if in.Commit == "" && commit != "" {
		in.Commit = commit
		if t, err := time.Parse(time.RFC3339, commitTime); err == nil {
			in.CommitTime = t.UTC()
		}
	}
	return in
}

func fromBuildInfo(bi *debug.BuildInfo, in Info) Info {
	if v := bi.Main.Version; v != "" {
		in.Version = v
	}
	if bi.GoVersion != "" {
		in.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				in.CommitTime = t.UTC()
			}
		case "vcs.modified":
			in.Dirty = s.Value == "true"
		}
	}
	return in
}

// String is the one line `airlock --version` prints:
//
//	airlock v1.2.3 (commit 0123456789ab, dirty; go1.26.0 linux/amd64)
func (in Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "airlock %s (", in.Version)
	if in.Commit != "" {
		fmt.Fprintf(&b, "commit %s", short(in.Commit))
		if in.Dirty {
			b.WriteString(", dirty")
		}
		b.WriteString("; ")
	}
	fmt.Fprintf(&b, "%s %s)", in.Go, in.Platform)
	return b.String()
}

// short is a commit id as git abbreviates it in prose.
func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
