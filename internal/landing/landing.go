package landing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/remoteurl"
	"github.com/airlockdev/airlock/internal/safefs"
)

// The refs a landing fetches into and builds its note under, in the
// private repository.
const (
	fetchedHead  = "refs/land/head"
	fetchedNotes = "refs/notes/fetched/airlock" // under refs/notes/: git notes reads it
	newNotes     = "refs/notes/new"
	// ReadDepth bounds the first-parent commits searched for an earlier
	// landing.
	ReadDepth = 10000
)

// NotesRef is where the receipts of landings into a remote live: one note
// per landed commit, holding its receipt.
const NotesRef = "refs/notes/airlock"

// TxTrailer is the trailer every landed commit carries: the transaction it
// holds, which makes a second landing of it find the first.
const TxTrailer = "Airlock-Tx"

// Repo is one landing's view of the remote: a private bare repository
// (in the transaction's state, or a scratch directory), whose objects fall
// back on the base's repository (so that a fetch downloads only what the
// base lacks, and the commit the transaction opened at is readable), and
// the refs it fetched the branch and the notes to.
type Repo struct {
	Git     git.Repo
	Dir     string // the private repository
	Remote  string // as the caller named it, for messages (masked: see Redact)
	Ref     string // refs/heads/<branch>
	BaseDir string // the base, for messages
	// Bounds limit each git call against the remote (zero: the
	// defaults); set them before the first.
	Bounds Bounds
	access *access
}

// Open resolves remote against the repository holding from ("" when there
// is none: remote must then be a URL) and makes, or reuses, the private
// repository at dir, whose objects fall back on from's repository. ref is
// the branch (see BranchRef); baseDir is the directory messages name.
func Open(ctx context.Context, dir, from, baseDir, remote, ref string) (*Repo, error) {
	if remote == "" {
		return nil, errors.New("no remote given: name a remote of the base's repository or a URL (--remote)")
	}
	if strings.HasPrefix(remote, "-") {
		return nil, fmt.Errorf("remote %q is neither a remote name nor a URL", remote)
	}
	if err := initPrivate(ctx, dir, from); err != nil {
		return nil, err
	}
	a, err := resolveAccess(ctx, dir, from, remote)
	if err != nil {
		return nil, err
	}
	return &Repo{Git: git.At(dir), Dir: dir, Remote: Redact(remote), access: a, Ref: ref, BaseDir: baseDir}, nil
}

// remoteGit is the private repository as the git calls that talk to the
// remote run it: with the clone's access settings (see resolveAccess), in
// the clone's top directory.
func (l *Repo) remoteGit() git.Repo {
	return l.Git.WithEnv(l.access.env...).WithCwd(l.access.cwd)
}

// CatBlob reads a blob.
func (l *Repo) CatBlob(ctx context.Context, oid string) ([]byte, error) {
	return l.Git.Run(ctx, "cat-file", "blob", oid)
}

// BranchRef checks a branch name as git would and returns its full ref.
func BranchRef(ctx context.Context, branch string) (string, error) {
	if branch == "" {
		return "", errors.New("no branch given: name the remote branch to land into (--branch)")
	}
	ref := "refs/heads/" + strings.TrimPrefix(branch, "refs/heads/")
	if strings.HasPrefix(branch, "-") {
		return "", fmt.Errorf("branch %q is not a valid branch name", branch)
	}
	if _, err := git.Run(ctx, "check-ref-format", ref); err != nil {
		return "", fmt.Errorf("branch %q is not a valid branch name (git check-ref-format %s refuses it)", branch, ref)
	}
	return ref, nil
}

// initPrivate makes a bare repository at dir, once, whose objects fall
// back on those of the repository holding from (when from is in one).
// No gc runs there: objects a landing made stay until it is over.
func initPrivate(ctx context.Context, dir, from string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	if _, err := git.Run(ctx, "init", "--bare", "-q", dir); err != nil {
		return fmt.Errorf("make the landing's repository %s: %w", dir, err)
	}
	if _, err := git.At(dir).Run(ctx, "config", "gc.auto", "0"); err != nil {
		return fmt.Errorf("configure the landing's repository %s: %w", dir, err)
	}
	if from == "" {
		return nil
	}
	common, err := git.In(from).Run(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil // not in a repository: every object comes from the remote
	}
	objects := filepath.Join(strings.TrimSpace(string(common)), "objects")
	alt := filepath.Join(dir, "objects", "info", "alternates")
	if err := os.MkdirAll(filepath.Dir(alt), 0o700); err != nil {
		return err
	}
	return safefs.WriteFile(alt, []byte(objects+"\n"), 0o600)
}

// Redact drops a password from a URL, for messages: airlock never shows
// or stores a secret, even one the caller put in a URL. A password, a
// token given as the URL's user, and the query are masked. The URL is
// split as git splits it (internal/remoteurl): a password net/url cannot
// parse is one git still sends.
func Redact(remote string) string {
	out := remote
	if u, ok := remoteurl.Split(remote); ok && u.Secret() {
		// A token is often the user part alone (https://TOKEN@host);
		// ssh's conventional "git" user is no secret.
		if _, set := u.RawPassword(); set {
			out = u.WithUserinfo(u.RawUser() + ":xxxxx")
		} else {
			out = u.WithUserinfo("xxxxx")
		}
	}
	if q, ok := query(out); ok {
		out = strings.Replace(out, "?"+q, "?xxxxx", 1)
	}
	return out
}

// query is a scheme URL's query, between its first '?' and the '#' after
// it.
func query(remote string) (string, bool) {
	if !strings.Contains(remote, "://") {
		return "", false
	}
	_, q, ok := strings.Cut(remote, "?")
	if !ok || q == "" {
		return "", false
	}
	q, _, _ = strings.Cut(q, "#")
	return q, q != ""
}

// secrets lists the parts of a remote URL redact masks, so that they can
// be masked in what git says too: as written and as git decodes them.
func secrets(remote string) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s, remoteurl.Unescape(s))
		}
	}
	if u, ok := remoteurl.Split(remote); ok && u.Secret() {
		if pw, set := u.RawPassword(); set && pw != "" {
			add(pw)
		} else {
			add(u.RawUser())
		}
	}
	if q, ok := query(remote); ok {
		for _, kv := range strings.Split(q, "&") {
			_, v, _ := strings.Cut(kv, "=")
			add(v)
		}
		add(q)
	}
	return out
}

// mask replaces every secret of the landing's remote URLs in text.
func (l *Repo) mask(text string) string {
	for _, u := range l.access.urls {
		for _, s := range secrets(u) {
			text = strings.ReplaceAll(text, s, "xxxxx")
		}
	}
	return text
}

// gitSaid is what git said about a failure, without the command line
// (which holds the URL).
func gitSaid(err error) string {
	var e *git.Error
	if errors.As(err, &e) {
		if e.Stderr != "" {
			return strings.ReplaceAll(e.Stderr, "\n", "; ")
		}
		return e.Err.Error()
	}
	return err.Error()
}

// FetchHeads fetches the branch and the receipt notes and returns their
// heads (notes "" when the remote has none yet). A fetch that timed out is
// a *TimeoutError.
func (l *Repo) FetchHeads(ctx context.Context) (string, string, error) {
	r, rctx, cancel := l.remote(ctx)
	defer cancel()
	// The glob fetches no notes ref where the remote has none, and
	// --prune drops one the remote deleted.
	_, err := r.Run(rctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--prune", "--", l.access.name,
		"+"+l.Ref+":"+fetchedHead, "+refs/notes/*:refs/notes/fetched/*")
	if err != nil {
		if te := l.timedOut(rctx, "fetch", err); te != nil {
			return "", "", te
		}
		msg := l.mask(gitSaid(err))
		if strings.Contains(msg, "couldn't find remote ref") {
			return "", "", fmt.Errorf("%s has no branch %s: create it once with git (git push %s <commit>:%s)", l.Remote, l.Ref, l.Remote, l.Ref)
		}
		if advice := l.access.sshAdvice(msg); advice != "" {
			return "", "", fmt.Errorf("fetch %s from %s: %s; %s", l.Ref, l.Remote, msg, advice)
		}
		if len(l.access.dropped) > 0 {
			// `git fetch` in the clone would read these; saying "check
			// that it works" would send the user after a fetch that may.
			return "", "", fmt.Errorf("fetch %s from %s: %s; the environment's one-command git configuration (GIT_CONFIG_COUNT, GIT_CONFIG_PARAMETERS) sets %s, which airlock does not pass on (it takes only the settings that say how to reach and authenticate to a server: http.*, credential.*, core.sshCommand, ssh.variant): put what the fetch needs in the clone's configuration, then check that `git fetch %s` works in %s without them", l.Ref, l.Remote, msg, strings.Join(l.access.dropped, ", "), l.Remote, l.BaseDir)
		}
		return "", "", fmt.Errorf("fetch %s from %s: %s; airlock authenticates as git does (ssh keys, credential helpers, never a prompt): check that `git fetch %s` works in %s", l.Ref, l.Remote, msg, l.Remote, l.BaseDir)
	}
	head, err := l.resolve(ctx, fetchedHead)
	if err != nil || head == "" {
		return "", "", fmt.Errorf("read the fetched head of %s: %v", l.Ref, err)
	}
	notes, err := l.resolve(ctx, fetchedNotes)
	return head, notes, err
}

// resolve returns the object a ref names, "" when there is no such ref.
func (l *Repo) resolve(ctx context.Context, ref string) (string, error) {
	out, err := l.Git.Run(ctx, "rev-parse", "--verify", "-q", ref)
	if err != nil {
		var e *git.Error
		if errors.As(err, &e) && e.Stderr == "" {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// FindLanded looks for a commit on the branch's first-parent history since
// the transaction's own base commit that carries the transaction's
// trailer. A commit landed later than the transaction opened cannot be an
// ancestor of the commit it opened at, so the walk stops there (or after
// ReadDepth commits when that commit is unknown).
func (l *Repo) FindLanded(ctx context.Context, head, since, id string) (string, error) {
	args := []string{"log", "--first-parent", "--max-count=" + strconv.Itoa(ReadDepth), "--format=%H%x00%(trailers:key=" + TxTrailer + ",valueonly,separator=%x00)", head}
	if _, err := l.Git.Run(ctx, "cat-file", "-e", since+"^{commit}"); err == nil {
		args = append(args, "^"+since)
	}
	args = append(args, "--")
	out, err := l.Git.Run(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("search %s for an earlier landing of %s: %w", l.Ref, id, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) > 1 && slices.Contains(f[1:], id) {
			return f[0], nil
		}
	}
	return "", nil
}

// Contains reports whether commit is head or one of its ancestors; a
// commit the private repository does not have is not.
func (l *Repo) Contains(ctx context.Context, head, commit string) (bool, error) {
	if _, err := l.Git.Run(ctx, "cat-file", "-e", commit+"^{commit}"); err != nil {
		return false, nil
	}
	_, err := l.Git.Run(ctx, "merge-base", "--is-ancestor", commit, head)
	var e *git.Error
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &e) && e.Stderr == "":
		return false, nil // exit 1: not an ancestor
	}
	return false, fmt.Errorf("is %s on %s: %w", commit, l.Ref, err)
}

// URL is the remote's fetch URL as resolved, redacted (see Redact): where
// a landing went, for a record anyone may read.
func (l *Repo) URL() string {
	return Redact(l.access.urls[0])
}

// TreeEntry is one entry of a git tree.
type TreeEntry struct {
	Mode, OID string
}

// Kind is the kind of file the entry is (a submodule is KindOther).
func (e TreeEntry) Kind() manifest.Kind {
	switch e.Mode {
	case "":
		return manifest.KindNone
	case "100644", "100755":
		return manifest.KindFile
	case "120000":
		return manifest.KindSymlink
	case "040000":
		return manifest.KindDir
	}
	return manifest.KindOther // a submodule
}

// LsTree reads the entries of commit at the given repository paths; a path
// the commit does not hold is not in the map.
func (l *Repo) LsTree(ctx context.Context, commit string, paths []string) (map[string]TreeEntry, error) {
	out := map[string]TreeEntry{}
	// In batches: the command line has a bound, the change set none.
	const batch = 500
	for i := 0; i < len(paths); i += batch {
		args := append([]string{"ls-tree", "-z", "--full-tree", commit, "--"}, paths[i:min(i+batch, len(paths))]...)
		b, err := l.Git.Run(ctx, args...)
		if err != nil {
			return nil, fmt.Errorf("read %s's tree: %w", commit, err)
		}
		for _, rec := range bytes.Split(b, []byte{0}) {
			meta, path, ok := bytes.Cut(rec, []byte{'\t'})
			if !ok {
				continue
			}
			f := strings.Fields(string(meta))
			if len(f) != 3 {
				continue
			}
			out[string(path)] = TreeEntry{Mode: f[0], OID: f[2]}
		}
	}
	return out, nil
}

// ResultEntries writes the change set's results as blobs and returns, per
// change, the entry it asks for (mode "" for a deletion, 040000 for a
// directory).
func (l *Repo) ResultEntries(ctx context.Context, set *changeset.Set, objects string) ([]TreeEntry, error) {
	out := make([]TreeEntry, len(set.Changes))
	var files []int
	var list bytes.Buffer
	for i, c := range set.Changes {
		switch c.Result.Kind {
		case manifest.KindFile:
			files = append(files, i)
			list.WriteString(changeset.ObjectPath(objects, c.Result.Digest) + "\n")
		case manifest.KindSymlink:
			oid, err := l.WriteBlob(ctx, []byte(c.Result.Target))
			if err != nil {
				return nil, err
			}
			out[i] = TreeEntry{Mode: "120000", OID: oid}
		case manifest.KindDir:
			out[i] = TreeEntry{Mode: "040000"}
		}
	}
	if len(files) == 0 {
		return out, nil
	}
	b, err := l.Git.RunInput(ctx, list.Bytes(), "hash-object", "-w", "--no-filters", "--stdin-paths")
	if err != nil {
		return nil, fmt.Errorf("write the change set's content into the landing's repository: %w", err)
	}
	oids := strings.Fields(string(b))
	if len(oids) != len(files) {
		return nil, fmt.Errorf("write the change set's content: git named %d objects for %d files", len(oids), len(files))
	}
	for k, i := range files {
		out[i] = TreeEntry{Mode: GitFileMode(set.Changes[i].Result.Mode), OID: oids[k]}
	}
	return out, nil
}

// GitFileMode is the mode git records for a file of mode m.
func GitFileMode(m fs.FileMode) string {
	if m&0o111 != 0 {
		return "100755"
	}
	return "100644"
}

// WriteBlob writes data as a blob and returns its object id.
func (l *Repo) WriteBlob(ctx context.Context, data []byte) (string, error) {
	b, err := l.Git.RunInput(ctx, data, "hash-object", "-w", "--no-filters", "--stdin")
	if err != nil {
		return "", fmt.Errorf("write an object into the landing's repository: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// EntriesGitDigest is a landing's base and result digest: the touched
// paths as a commit holds them, content named by git's object ids.
func EntriesGitDigest(paths []string, es []TreeEntry) string {
	idx := make([]int, len(paths))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return paths[idx[a]] < paths[idx[b]] })
	h := sha256.New()
	for _, i := range idx {
		if i >= len(es) || es[i].Mode == "" || es[i].Kind() == manifest.KindDir {
			continue
		}
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", paths[i], es[i].Mode, es[i].OID)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// GitIdentity is who the landed commit and its note are by: the base
// repository's user, else airlock (GIT_AUTHOR_* and GIT_COMMITTER_* in
// the environment win over both, as git has it).
func GitIdentity(ctx context.Context, base string) []string {
	name, email := "airlock", "airlock@localhost"
	if b, err := git.In(base).Run(ctx, "config", "user.name"); err == nil && strings.TrimSpace(string(b)) != "" {
		name = strings.TrimSpace(string(b))
	}
	if b, err := git.In(base).Run(ctx, "config", "user.email"); err == nil && strings.TrimSpace(string(b)) != "" {
		email = strings.TrimSpace(string(b))
	}
	return []string{"-c", "user.name=" + name, "-c", "user.email=" + email}
}

// AddNote makes the notes commit that adds data as commit's note on top of
// the fetched notes head, and returns it.
func (l *Repo) AddNote(ctx context.Context, notes, commit string, data []byte) (string, error) {
	if notes != "" {
		if _, err := l.Git.Run(ctx, "update-ref", newNotes, notes); err != nil {
			return "", fmt.Errorf("prepare the receipt note: %w", err)
		}
	} else if _, err := l.Git.Run(ctx, "update-ref", "-d", newNotes); err != nil {
		return "", fmt.Errorf("prepare the receipt note: %w", err)
	}
	blob, err := l.WriteBlob(ctx, data)
	if err != nil {
		return "", err
	}
	args := append(GitIdentity(ctx, l.BaseDir), "notes", "--ref="+newNotes, "add", "-f", "-C", blob, commit)
	if _, err := l.Git.Run(ctx, args...); err != nil {
		return "", fmt.Errorf("add the receipt note to %s: %w", commit, err)
	}
	return l.resolve(ctx, newNotes)
}
