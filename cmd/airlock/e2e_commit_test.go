package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// mixedBase is a small base with every kind of entry the commit oracle
// changes.
var mixedBase = tree{
	"README":            F(0o644, "readme\n"),
	"keep.txt":          F(0o644, "unchanged\n"),
	"mod.txt":           F(0o644, "old\n"),
	"del.txt":           F(0o644, "bye\n"),
	"exe.sh":            F(0o755, "#!/bin/sh\necho hi\n"),
	"secret":            F(0o644, "s3cret\n"),
	"plain":             F(0o644, "#!/bin/sh\n"),
	"src/main.go":       F(0o644, "package main\n"),
	"src/util/u.go":     F(0o644, "package util\n"),
	"old/name.txt":      F(0o644, "rename me\n"),
	"tree/a/b/c.txt":    F(0o644, "c\n"),
	"tree/a/d.txt":      F(0o600, "d\n"),
	"tree/e.txt":        F(0o644, "e\n"),
	"tree/link":         L("e.txt"),
	"t2/f2d":            F(0o644, "file that becomes a dir\n"),
	"t2/d2f/x":          F(0o644, "x\n"),
	"t2/d2f/y/z":        F(0o644, "z\n"),
	"t2/l2f":            L("../README"),
	"t2/f2l":            F(0o644, "file that becomes a link\n"),
	"t2/keepdir":        D(0o755),
	"t2/keepdir/k":      F(0o644, "k\n"),
	"links/rel":         L("../README"),
	"links/abs":         L("/etc/hostname"),
	"links/dangle":      L("nowhere"),
	"links/todel":       L("../mod.txt"),
	"emptydir-kept":     D(0o755),
	"emptydir-gone":     D(0o755),
	"deep/1/2/3/4/leaf": F(0o644, "leaf\n"),
}

const mixedScript = `set -e
printf 'new content\n' > mod.txt
printf 'added\n' > added.txt
rm del.txt
chmod 0644 exe.sh
chmod 0600 secret
chmod 0755 plain
printf '// edited\n' >> src/main.go
mkdir -p nested/new/dirs && printf 'n\n' > nested/new/dirs/n.txt
mkdir empty-new
rmdir emptydir-gone
mkdir -p renamed && mv old/name.txt renamed/name.txt
rm -rf tree
rm t2/f2d && mkdir -p t2/f2d/sub && printf 'c\n' > t2/f2d/sub/child && printf 'c2\n' > t2/f2d/c2
rm -rf t2/d2f && printf 'now a file\n' > t2/d2f
rm t2/l2f && printf 'was a link\n' > t2/l2f
rm t2/f2l && ln -s ../README t2/f2l
chmod 0700 t2/keepdir
rm links/rel && ln -s ../keep.txt links/rel
rm links/abs
ln -s /nonexistent/absolute/target links/newabs
ln -s missing-target links/newdangle
rm links/todel
printf 'deeper\n' > deep/1/2/3/4/leaf
chmod 0750 deep/1/2
`

// TestE2ECommitOracle: the base after a commit is exactly what the same
// script produces in a plain copy of the base.
func TestE2ECommitOracle(t *testing.T) {
	x := newH(t)
	build(t, x.base, mixedBase)
	before := snapshot(t, x.base, nil)
	want := x.oracle(mixedScript)
	a, m, d := counts(before, want)
	if a == 0 || m == 0 || d == 0 {
		t.Fatalf("the oracle script should add, modify and delete (got %d/%d/%d)", a, m, d)
	}

	r := x.airlock("run", "--workdir", x.base, "--id", "oracle1", "--", "sh", "-c", mixedScript)
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{
		"tx": "oracle1", "outcome": "committed", "refusal": "", "refused_paths": "",
		"added": itoa(a), "modified": itoa(m), "deleted": itoa(d),
	})
	wantTree(t, "base after commit vs oracle", want, snapshot(t, x.base, nil))
	if out, err := exec.Command("diff", "-r", "--no-dereference", x.base, x.oracleDir).CombinedOutput(); err != nil {
		t.Errorf("diff -r --no-dereference base oracle: %v\n%s", err, out)
	}
	if r.Settle["base_digest"] == r.Settle["result_digest"] {
		t.Errorf("a commit that changed the base reports base_digest == result_digest")
	}
	rp := r.Settle["receipt"]
	if !filepath.IsAbs(rp) || !testbin.Exists(rp) {
		t.Fatalf("airlock.receipt=%q does not exist", rp)
	}
	if v := x.airlock("receipt", "verify", rp); v.Code != 0 {
		t.Errorf("receipt verify: %s", v)
	}
	if testbin.Exists(filepath.Join(x.state, "tx", "oracle1", "staged")) {
		t.Errorf("the staged workspace of a committed transaction is still there")
	}
}

// TestE2EFailingCommandDiscards: a non-zero exit discards, with the
// command's own exit code, and leaves the base as it was.
func TestE2EFailingCommandDiscards(t *testing.T) {
	x := newH(t)
	build(t, x.base, mixedBase)
	before := snapshot(t, x.base, nil)
	r := x.airlock("run", "--workdir", x.base, "--id", "fail1", "--", "sh", "-c", mixedScript+"\nexit 3\n")
	wantCode(t, r, 3)
	wantBlock(t, r, map[string]string{"tx": "fail1", "outcome": "discarded", "refusal": ""})
	if r.Settle["base_digest"] != r.Settle["result_digest"] {
		t.Errorf("a discard reports base_digest != result_digest")
	}
	wantTree(t, "base after discard", before, snapshot(t, x.base, nil))
	staged := x.stagedPath("fail1")
	if !strings.HasPrefix(staged, x.state+"/") {
		t.Errorf("staged workspace %s is not under the state dir %s", staged, x.state)
	}
	if testbin.Exists(staged) {
		t.Errorf("the staged workspace %s of a discarded transaction is still there", staged)
	}
}

// TestE2ENoChanges: a command that changes nothing, or rewrites files with
// their own bytes, settles as no_changes.
func TestE2ENoChanges(t *testing.T) {
	for _, script := range []string{
		"true",
		"touch keep.txt; printf 'old\\n' > mod.txt; chmod 0644 mod.txt",
	} {
		t.Run(script, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, mixedBase)
			before := snapshot(t, x.base, nil)
			r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", script)
			wantCode(t, r, 0)
			wantBlock(t, r, map[string]string{"outcome": "no_changes", "added": "0", "modified": "0", "deleted": "0", "refusal": ""})
			wantTree(t, "base after no_changes", before, snapshot(t, x.base, nil))
		})
	}
}

// TestE2ENames: names that are not UTF-8, hold spaces or newlines, or sit
// 40 directories deep, and empty directories, survive a commit that changes
// them; refused paths with commas and newlines are escaped in the block.
func TestE2ENames(t *testing.T) {
	deep := strings.Repeat("d/", 40)
	base := tree{
		"bad\xff\xfename.txt": F(0o644, "latin1\n"),
		"with space.txt":      F(0o644, "space\n"),
		"new\nline.txt":       F(0o644, "newline\n"),
		"dir with\nnl/f":      F(0o644, "f\n"),
		deep + "leaf":         F(0o644, "deep\n"),
		"empty":               D(0o755),
		"empty\xff":           D(0o755),
		"gone\xfe":            F(0o644, "to delete\n"),
	}
	script := `set -e
bad=$(printf 'bad\377\376name.txt')
nl=$(printf 'new\nline.txt')
printf 'more\n' >> "$bad"
printf 'more\n' >> "with space.txt"
chmod 0600 "$nl"
printf 'g\n' > "$(printf 'dir with\nnl')/g"
printf 'x\n' > ` + deep + `new
printf 'changed\n' > ` + deep + `leaf
mkdir "$(printf 'new empty\001\377')"
printf 'a\n' > "$(printf 'added\tname\355\240\200')"
rm "$(printf 'gone\376')"
rmdir empty
mkdir ` + deep + `empty
`
	x := newH(t)
	build(t, x.base, base)
	before := snapshot(t, x.base, nil)
	want := x.oracle(script)
	a, m, d := counts(before, want)
	r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", script)
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "added": itoa(a), "modified": itoa(m), "deleted": itoa(d)})
	wantTree(t, "base after commit vs oracle", want, snapshot(t, x.base, nil))

	t.Run("escaped refused paths", func(t *testing.T) {
		x := newH(t)
		writeFile(t, filepath.Join(x.base, "keep"), "k\n")
		r := x.airlock("run", "--workdir", x.base, "--protect", "p*", "--",
			"sh", "-c", `printf 1 > "$(printf 'p,1')"; printf 2 > "$(printf 'p\n2')"; printf 3 > "$(printf 'p%%\377')"`)
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ProtectedPathNotApproved",
			"refused_paths": "p%0A2,p%25%FF,p%2C1"})
		if ents, _ := os.ReadDir(x.base); len(ents) != 1 {
			t.Errorf("a refusal wrote to the base: %v", ents)
		}
	})
}
