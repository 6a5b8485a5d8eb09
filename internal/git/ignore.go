package git

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
)

// Ignored reports which of paths (relative to the directory r names) the
// repository's ignore rules match — its .gitignore files, info/exclude and
// core.excludesFile — whether tracked or not (check-ignore --no-index).
// check-ignore refuses the literal-pathspec setting every other command
// runs with (it takes path names, no magic), so it alone runs without it.
func (r Repo) Ignored(ctx context.Context, paths []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(paths) == 0 {
		return out, nil
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	r.env = append(r.env, "GIT_LITERAL_PATHSPECS=0")
	b, err := r.run(ctx, in.Bytes(), []string{"check-ignore", "--no-index", "-z", "--stdin"})
	if err != nil {
		// Exit 1 is "none of them is ignored".
		var e *Error
		var exit *exec.ExitError
		if errors.As(err, &e) && errors.As(e.Err, &exit) && exit.ExitCode() == 1 {
			return out, nil
		}
		return nil, err
	}
	for _, p := range strings.Split(string(b), "\x00") {
		if p != "" {
			out[p] = true
		}
	}
	return out, nil
}
