package landing

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/safefs"
)

// SameRemote reports whether l and o fetch from and push to the same
// URLs and branch, authenticated by the same settings: landings that can
// share one push. Clones that reach one remote with different
// credentials or ssh commands land apart, each as its own clone's `git
// push` would.
func (l *Repo) SameRemote(o *Repo) bool {
	return l.Ref == o.Ref && slices.Equal(l.access.urls, o.access.urls) && slices.Equal(l.access.env, o.access.env)
}

// ShareObjects lets the private repository read the objects of the
// repository holding dir too (an alternate, as Open makes for its own
// base): a batch builds, in one repository, the candidates of
// transactions opened in several clones, each needing the commit its own
// base was at. A dir in no repository adds nothing.
func (l *Repo) ShareObjects(ctx context.Context, dir string) error {
	common, err := git.In(dir).Run(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil
	}
	objects := filepath.Join(strings.TrimSpace(string(common)), "objects")
	alt := filepath.Join(l.Dir, "objects", "info", "alternates")
	have, err := os.ReadFile(alt)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("read the landing's alternates %s: %w", alt, err)
	}
	lines := strings.Split(strings.TrimSpace(string(have)), "\n")
	if slices.Contains(lines, objects) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(alt), 0o700); err != nil {
		return err
	}
	return safefs.WriteFile(alt, []byte(strings.TrimLeft(string(have)+"\n"+objects+"\n", "\n")), 0o600)
}

// AddNotes makes one notes commit, on top of the fetched notes head,
// that adds data[i] as commits[i]'s note: a batch's receipts arrive in
// one notes commit, as its commits arrive in one push.
func (l *Repo) AddNotes(ctx context.Context, notes string, commits []string, data [][]byte) (string, error) {
	cur := notes
	for i, c := range commits {
		var err error
		if cur, err = l.AddNote(ctx, cur, c, data[i]); err != nil {
			return "", err
		}
	}
	if len(commits) < 2 {
		return cur, nil
	}
	// git notes made one commit per note; the tree of the last holds
	// them all, and one commit of it on the fetched head is the batch's.
	tree, err := l.Git.Run(ctx, "rev-parse", cur+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("read the receipt notes' tree: %w", err)
	}
	args := append(GitIdentity(ctx, l.BaseDir), "commit-tree", strings.TrimSpace(string(tree)), "-m", fmt.Sprintf("Notes added by airlock land: the receipts of %d commits landed as one batch", len(commits)))
	if notes != "" {
		args = append(args, "-p", notes)
	}
	out, err := l.Git.Run(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("make the batch's notes commit: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
