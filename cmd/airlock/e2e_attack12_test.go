package main_test

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The attack12 review of partial commit (`airlock commit ID -- PATH...`):
// what it holds, as regression tests. Its known breaks are in
// e2e_attack12_breaks_test.go (build tag airlock_known_breaks).

// attack12KillPoints are the fault points of a partial commit, from
// before its apply began to after the part landed (before the
// transaction recorded it).
var attack12KillPoints = []string{"checked", "journal-synced", "apply-staged", "apply:1", "applied", "recorded", "part-landed"}

// Killed at a fault point of a partial commit, then recovered: the part
// either landed whole (a.txt new, recorded as committed) or not at all,
// b.txt and c.txt are never touched, and committing the transaction
// afterwards lands exactly all three, never reverting a.txt.
func TestE2EAttack12PartialKilledAtEachPointEndsWholeOrNothing(t *testing.T) {
	for _, point := range attack12KillPoints {
		t.Run(point, func(t *testing.T) {
			x := newH(t)
			partialTx(t, x, "k")
			r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=" + point}, "commit", "k", "--", "a.txt")
			if r.Code != -1 {
				t.Fatalf("the fault point %s did not kill airlock: %v", point, r)
			}
			wantCode(t, x.airlock("recover", "--workdir", x.base), 0)
			a := testbin.ReadFile(t, filepath.Join(x.base, "a.txt"))
			if a != "a-new\n" && a != "a-old\n" {
				t.Fatalf("a.txt = %q after recover: half a part", a)
			}
			wantFiles(t, x, a, "b-old\n", "c-old\n")
			show := x.airlock("show", "k.1")
			landed := strings.Contains(show.Stdout, "status:    committed")
			if landed != (a == "a-new\n") {
				t.Fatalf("a.txt = %q but k.1 committed = %v:\n%s", a, landed, show.Stdout)
			}
			r = x.airlock("commit", "k")
			wantCode(t, r, 0)
			wantFiles(t, x, "a-new\n", "b-new\n", "c-new\n")
		})
	}
}

// After a part landed, a person edits the landed path; the rest (which
// does not touch it) commits without drift and keeps the person's edit.
// The same after `undo ID.1` (the rest does not put a.txt back) and after
// `rebase` of the transaction.
func TestE2EAttack12RestNeverRevertsOrReappliesThePart(t *testing.T) {
	for _, after := range []string{"human edit", "undo", "rebase"} {
		t.Run(after, func(t *testing.T) {
			x := newH(t)
			partialTx(t, x, "r")
			r := x.airlock("commit", "r", "--", "a.txt")
			wantCode(t, r, 0)
			want := "a-new\n"
			switch after {
			case "human edit":
				writeFile(t, filepath.Join(x.base, "a.txt"), "a-human\n")
				want = "a-human\n"
			case "undo":
				wantCode(t, x.exec(run{dir: x.base, args: []string{"undo", "r.1"}}), 0)
				want = "a-old\n"
			case "rebase":
				writeFile(t, filepath.Join(x.base, "a.txt"), "a-human\n")
				wantCode(t, x.airlock("rebase", "r"), 0)
				want = "a-human\n"
			}
			if got, w := nameStatus(t, x, "r"), "M\tb.txt\nM\tc.txt\n"; got != w {
				t.Fatalf("the rest after %s:\n%s\nwant:\n%s", after, got, w)
			}
			r = x.airlock("commit", "r")
			wantCode(t, r, 0)
			wantFiles(t, x, want, "b-new\n", "c-new\n")
		})
	}
}

// undo of the first part reverts exactly it, after the second part and
// the rest landed.
func TestE2EAttack12UndoFirstPartAfterTheRestLanded(t *testing.T) {
	x := newH(t)
	partialTx(t, x, "u")
	wantCode(t, x.airlock("commit", "u", "--", "a.txt"), 0)
	wantCode(t, x.airlock("commit", "u", "--", "b.txt"), 0)
	wantCode(t, x.airlock("commit", "u"), 0)
	wantFiles(t, x, "a-new\n", "b-new\n", "c-new\n")
	wantCode(t, x.exec(run{dir: x.base, args: []string{"undo", "u.1"}}), 0)
	wantFiles(t, x, "a-old\n", "b-new\n", "c-new\n")
	wantCode(t, x.exec(run{dir: x.base, args: []string{"undo", "u.2"}}), 0)
	wantFiles(t, x, "a-old\n", "b-old\n", "c-new\n")
}

// A part's receipt verifies; with its paths edited (a path it did not
// land added, or one it did removed) it does not.
func TestE2EAttack12PartReceiptWithEditedPathsFailsVerify(t *testing.T) {
	for _, edit := range []struct{ name, from, to string }{
		{"widened", `"a.txt"`, `"a.txt", "b.txt"`},
		{"renamed", `"a.txt"`, `"c.txt"`},
	} {
		t.Run(edit.name, func(t *testing.T) {
			x := newH(t)
			partialTx(t, x, "v")
			wantCode(t, x.airlock("commit", "v", "--", "a.txt"), 0)
			wantCode(t, x.airlock("receipt", "verify", "v.1"), 0)
			p := filepath.Join(x.state, "tx", "v.1", "receipt.json")
			b, err := os.ReadFile(p)
			must(t, err)
			s := string(b)
			i := strings.Index(s, `"paths"`)
			if i < 0 {
				t.Fatalf("no paths in the part's receipt:\n%s", s)
			}
			s = s[:i] + strings.Replace(s[i:], edit.from, edit.to, 1)
			must(t, os.WriteFile(p, []byte(s), 0o600))
			r := x.airlock("receipt", "verify", "v.1")
			if r.Code == 0 {
				t.Fatalf("receipt verify accepted a part's receipt with paths %s:\n%s", edit.name, r)
			}
		})
	}
}

// The agent hard-links an unselected staged file to the selected one:
// the base gets a copy of the selected file alone, linked to nothing, and
// the unselected file is untouched.
func TestE2EAttack12HardLinkToUnselectedFileLandsACopy(t *testing.T) {
	x := newH(t)
	staged := partialTx(t, x, "hl")
	must(t, os.Remove(filepath.Join(staged, "b.txt")))
	must(t, os.Link(filepath.Join(staged, "a.txt"), filepath.Join(staged, "b.txt")))
	r := x.airlock("commit", "hl", "--", "a.txt")
	wantCode(t, r, 0)
	wantFiles(t, x, "a-new\n", "b-old\n", "c-old\n")
	var st syscall.Stat_t
	must(t, syscall.Stat(filepath.Join(x.base, "a.txt"), &st))
	if st.Nlink != 1 {
		t.Errorf("the landed a.txt has %d links", st.Nlink)
	}
	// The agent writes through the link afterwards: the base does not move.
	writeFile(t, filepath.Join(staged, "b.txt"), "through-link\n")
	wantFiles(t, x, "a-new\n", "b-old\n", "c-old\n")
}

// A mode-only change lands as a mode change alone; a file in a directory
// the transaction created lands with its directory and not its sibling.
func TestE2EAttack12ModeOnlyAndCreatedParent(t *testing.T) {
	x := newH(t)
	staged := partialTx(t, x, "m")
	writeFile(t, filepath.Join(staged, "a.txt"), "a-old\n")
	must(t, os.Chmod(filepath.Join(staged, "a.txt"), 0o755))
	must(t, os.MkdirAll(filepath.Join(staged, "lib", "deep"), 0o755))
	writeFile(t, filepath.Join(staged, "lib", "deep", "x"), "x\n")
	writeFile(t, filepath.Join(staged, "lib", "y"), "y\n")
	wantCode(t, x.airlock("commit", "m", "--", "a.txt", "lib/deep/x"), 0)
	fi, err := os.Stat(filepath.Join(x.base, "a.txt"))
	must(t, err)
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("a.txt mode %v, want 0755", fi.Mode().Perm())
	}
	wantFiles(t, x, "a-old\n", "b-old\n", "c-old\n")
	if got := testbin.ReadFile(t, filepath.Join(x.base, "lib", "deep", "x")); got != "x\n" {
		t.Errorf("lib/deep/x = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(x.base, "lib", "y")); err == nil {
		t.Errorf("the unselected lib/y landed with its parent")
	}
	if got, w := nameStatus(t, x, "m"), "M\tb.txt\nM\tc.txt\nA\tlib/y\n"; got != w {
		t.Errorf("the rest:\n%s\nwant:\n%s", got, w)
	}
	wantCode(t, x.airlock("commit", "m"), 0)
	if got := testbin.ReadFile(t, filepath.Join(x.base, "lib", "y")); got != "y\n" {
		t.Errorf("lib/y = %q after the rest", got)
	}
}

// The agent deletes a directory; a person adds a file to it in the base
// since open; the partial commit of the deletion does not take the
// person's file with it.
func TestE2EAttack12SelectedDirDeletionKeepsAPersonsNewFile(t *testing.T) {
	x := newH(t)
	must(t, os.MkdirAll(filepath.Join(x.base, "d"), 0o755))
	writeFile(t, filepath.Join(x.base, "d", "x"), "x\n")
	staged := partialTx(t, x, "dd")
	must(t, os.RemoveAll(filepath.Join(staged, "d")))
	writeFile(t, filepath.Join(x.base, "d", "human"), "mine\n")
	r := x.airlock("commit", "dd", "--", "d")
	if got := testbin.ReadFile(t, filepath.Join(x.base, "d", "human")); got != "mine\n" {
		t.Fatalf("the person's d/human is gone after the partial commit (exit %d):\n%s", r.Code, r)
	}
	wantFiles(t, x, "a-old\n", "b-old\n", "c-old\n")
}

// A partial commit killed within its apply (after the first operation,
// or after the last before the commit is recorded) is rolled back by
// recover, exactly: a.txt holds its old bytes again and the part k.1 is
// refused InterruptedApply. The transaction's own record of the base
// takes the restored files as the part's does, so the part commits again
// (as k.2), and then the rest, as after a whole commit killed at the same
// point.
func TestE2EAttack12PartKilledMidApplyCommitsAgain(t *testing.T) {
	for _, point := range []string{"apply:1", "applied"} {
		t.Run(point, func(t *testing.T) {
			x := newH(t)
			partialTx(t, x, "k")
			r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=" + point}, "commit", "k", "--", "a.txt")
			if r.Code != -1 {
				t.Fatalf("the fault point %s did not kill airlock: %v", point, r)
			}
			wantCode(t, x.airlock("recover", "--workdir", x.base), 0)
			wantFiles(t, x, "a-old\n", "b-old\n", "c-old\n")
			if show := x.airlock("show", "k.1"); !strings.Contains(show.Stdout, "InterruptedApply") {
				t.Fatalf("the part is not refused InterruptedApply after recover:\n%s", show.Stdout)
			}
			r = x.airlock("commit", "k", "--", "a.txt")
			if r.Code != 0 {
				t.Errorf("retrying the part after recover rolled it back:\n%s", r)
			}
			r = x.airlock("commit", "k")
			if r.Code != 0 {
				rb := x.airlock("rebase", "k")
				t.Fatalf("committing the transaction after recover rolled its part back is refused (rebase exit %d):\n%s", rb.Code, r)
			}
			wantFiles(t, x, "a-new\n", "b-new\n", "c-new\n")
		})
	}
}

// Killed after the part's receipt, before the transaction records the
// landing: with its apply still marked in flight (recorded; recover
// finishes it) or not (part-landed; the next commit of the transaction
// finishes it, under its lock). Either way the landing is recorded from
// the part's own state, so afterwards
//
//   - undo w.1 puts a.txt back, and committing the rest of w leaves it
//     back: the part's content is not re-applied over the undo;
//   - a person edits a.txt, and the rest (b.txt, c.txt) commits, leaving
//     the person's a.txt.
func TestE2EAttack12WindowFinishedLandedPathIsNoChange(t *testing.T) {
	for _, point := range []string{"recorded", "part-landed"} {
		for _, after := range []string{"undo", "human edit"} {
			t.Run(point+"/"+after, func(t *testing.T) {
				x := newH(t)
				partialTx(t, x, "w")
				r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=" + point}, "commit", "w", "--", "a.txt")
				if r.Code != -1 {
					t.Fatalf("the fault point did not kill airlock: %v", r)
				}
				wantCode(t, x.airlock("recover", "--workdir", x.base), 0)
				if point == "recorded" {
					// recover finished the landing's record.
					if got, w := nameStatus(t, x, "w"), "M\tb.txt\nM\tc.txt\n"; got != w {
						t.Errorf("the rest after recover:\n%s\nwant:\n%s", got, w)
					}
				}
				want := "a-old\n"
				if after == "undo" {
					wantCode(t, x.exec(run{dir: x.base, args: []string{"undo", "w.1"}}), 0)
				} else {
					writeFile(t, filepath.Join(x.base, "a.txt"), "a-human\n")
					want = "a-human\n"
				}
				r = x.airlock("commit", "w")
				if r.Code != 0 {
					t.Fatalf("the rest does not commit after %s and %s:\n%s", point, after, r)
				}
				if got := testbin.ReadFile(t, filepath.Join(x.base, "a.txt")); got != want {
					t.Errorf("a.txt = %q after the rest landed, want %q (what %s left)", got, want, after)
				}
				wantFiles(t, x, want, "b-new\n", "c-new\n")
			})
		}
	}
}

// attack12Names are changed files whose names a gitignore selector reads
// otherwise: wildcards, a backslash, a leading ! or #, a trailing space,
// and one name in NFC and NFD (and upper case).
var attack12Names = []string{"x", "x ", `a\b`, "ab", "[ab]", "a", "b", "!bang", "bang", "#h", "*", "q?", "qq",
	"Caf\u00e9", "Cafe\u0301", "CAFE"}

// attack12Selected opens a transaction changing every attack12Names
// file, commits the part sel selects and returns the paths it landed
// ("" and exit 125 when it selects none).
func attack12Selected(t *testing.T, sel ...string) (int, string) {
	t.Helper()
	x := newH(t)
	for _, n := range attack12Names {
		writeFile(t, filepath.Join(x.base, n), "old\n")
	}
	st := x.openTx("s")
	for _, n := range attack12Names {
		writeFile(t, filepath.Join(st, n), "new\n")
	}
	r := x.airlock(append([]string{"commit", "s", "--"}, sel...)...)
	landed := []string{}
	for _, n := range attack12Names {
		if testbin.ReadFile(t, filepath.Join(x.base, n)) == "new\n" {
			landed = append(landed, n)
		}
	}
	// A part's receipt names what landed (sorted); a plain commit (the
	// selection took everything) names none.
	if sorted := slices.Sorted(slices.Values(landed)); r.Code == 0 && r.Settle["part_of"] != "" && r.Settle["paths"] != strings.Join(sorted, ",") {
		t.Errorf("the part says it landed %q, the base holds new bytes at %q", r.Settle["paths"], sorted)
	}
	return r.Code, strings.Join(landed, "|")
}

// A name a selector would read otherwise, quoted as gitignore quotes it,
// selects exactly that file; a leading # is a name (the selector is
// anchored), NFC and NFD are different names, and case matters.
func TestE2EAttack12QuotedNamesSelectExactlyThemselves(t *testing.T) {
	for _, c := range []struct{ sel, want string }{
		{`x\ `, "x "},
		{`a\\b`, `a\b`},
		{`\[ab]`, "[ab]"},
		{`\!bang`, "!bang"},
		{`\*`, "*"},
		{`q\?`, "q?"},
		{"#h", "#h"},
		{"Caf\u00e9", "Caf\u00e9"},
		{"Cafe\u0301", "Cafe\u0301"},
	} {
		t.Run(c.sel, func(t *testing.T) {
			code, landed := attack12Selected(t, c.sel)
			if code != 0 || landed != c.want {
				t.Errorf("commit -- %q: exit %d, landed %q, want exactly %q", c.sel, code, landed, c.want)
			}
		})
	}
	// Case is not folded: "cafe" names nothing changed.
	if code, landed := attack12Selected(t, "cafe"); code != 125 || landed != "" {
		t.Errorf("commit -- cafe: exit %d, landed %q, want 125 and nothing", code, landed)
	}
}

// A person types the name of a changed file, shell-quoted, and exactly
// that file lands, though a gitignore selector would read the name as
// another changed file's ('x ' as x, 'a\b' as ab): a PATH that is a
// changed path byte for byte is that path. A trailing space that names no
// changed path is refused, not dropped.
func TestE2EAttack12TypedNameSelectsExactlyThatFile(t *testing.T) {
	for _, c := range []struct{ sel, want string }{
		{"x ", "x "},
		{`a\b`, `a\b`},
		{"!bang", "!bang"},
		{"*", "*"},
	} {
		t.Run(c.sel, func(t *testing.T) {
			if code, landed := attack12Selected(t, c.sel); code != 0 || landed != c.want {
				t.Errorf("commit -- %q: exit %d, landed %q, want exactly %q", c.sel, code, landed, c.want)
			}
		})
	}
	if code, landed := attack12Selected(t, "b "); code != 125 || landed != "" {
		t.Errorf(`commit -- "b ": exit %d, landed %q, want 125 and nothing`, code, landed)
	}
}

// attack12Review starts `airlock review ID` and returns its page's URL
// and the digest of the change set the page shows.
func attack12Review(t *testing.T, x *h, id string) (proc, string, string) {
	t.Helper()
	p := x.start(run{args: []string{"review", id, "--json", "--no-browser", "--timeout", "1h", "--quiet"}})
	page := reviewURL(t, p)
	return p, page, attack12Digest(t, page)
}

// attack12Digest is the digest of the change set the review page shows
// now.
func attack12Digest(t *testing.T, page string) string {
	t.Helper()
	resp, err := http.Get(page)
	must(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	must(t, err)
	m := regexp.MustCompile(`id="digest">(sha256:[0-9a-f]{64})<`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("the review page shows no digest:\n%s", body)
	}
	return string(m[1])
}

// attack12Post posts form to the review page's action, as its form
// would (same origin), and returns the answer's status and body.
func attack12Post(t *testing.T, page, action string, form url.Values) (int, string) {
	t.Helper()
	u, err := url.Parse(page)
	must(t, err)
	req, err := http.NewRequest(http.MethodPost, page+action, strings.NewReader(form.Encode()))
	must(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(body)
}

// The review page's checkbox subset, with the POST tampered: a path that
// is not exactly a file the page showed (wildcards, a leading !, a name
// never changed) is a 400 naming it and lands nothing; a digest from
// before the agent's later write
// is refused ReviewStale; the honest subset lands exactly the checked
// file and the page stays on the rest.
func TestE2EAttack12ReviewPostCannotWidenTheCheckedFiles(t *testing.T) {
	x := newH(t)
	staged := partialTx(t, x, "rv")
	p, page, digest := attack12Review(t, x, "rv")
	shown := []string{"a.txt", "b.txt", "c.txt"}
	post := func(digest string, paths ...string) string {
		t.Helper()
		code, body := attack12Post(t, page, "commit", url.Values{"diff_digest": {digest}, "select": {"1"}, "path": paths, "shown": shown})
		if code != http.StatusOK {
			t.Fatalf("POST commit: %d\n%s", code, body)
		}
		return body
	}
	for _, paths := range [][]string{{"*"}, {"*.txt"}, {"a.txt", "nothere.txt"}, {"[abc].txt"}, {"!a.txt"}} {
		code, body := attack12Post(t, page, "commit", url.Values{"diff_digest": {digest}, "select": {"1"}, "path": paths, "shown": shown})
		if bad := paths[len(paths)-1]; code != http.StatusBadRequest || !strings.Contains(body, strconv.Quote(bad)) {
			t.Errorf("POST commit of %q: %d, want 400 naming %q:\n%s", paths, code, bad, body)
		}
		wantFiles(t, x, "a-old\n", "b-old\n", "c-old\n")
	}
	// The agent writes b.txt after the page was rendered: the old digest
	// lands nothing, not even the unchanged a.txt.
	writeFile(t, filepath.Join(staged, "b.txt"), "b-newer\n")
	if body := post(digest, "a.txt"); !strings.Contains(body, "ReviewStale") {
		t.Errorf("a commit bound to the page's old digest did not say ReviewStale:\n%s", body)
	}
	wantFiles(t, x, "a-old\n", "b-old\n", "c-old\n")
	now := attack12Digest(t, page)
	post(now, "a.txt")
	wantFiles(t, x, "a-new\n", "b-old\n", "c-old\n")
	if got, w := nameStatus(t, x, "rv"), "M\tb.txt\nM\tc.txt\n"; got != w {
		t.Errorf("the rest after the page's part:\n%s\nwant:\n%s", got, w)
	}
	attack12Post(t, page, "discard", url.Values{})
	p.WaitSettled()
	wantFiles(t, x, "a-new\n", "b-old\n", "c-old\n")
}

// A POST that checks at most a.txt lands at most a.txt, whatever else
// the form says: the server holds the files the page bound to the digest
// showed, so a path of "." or the base's absolute path is not one of them
// (400, naming it, nothing lands), and a form with no shown fields still
// checks one of three files, a partial commit, not a plain one.
func TestE2EAttack12ReviewPostLandsOnlyTheCheckedFiles(t *testing.T) {
	for _, c := range []struct {
		name   string
		form   func(x *h, digest string) url.Values
		status int
		a      string
	}{
		{"dot", func(x *h, d string) url.Values {
			return url.Values{"diff_digest": {d}, "select": {"1"}, "path": {"."}, "shown": {"a.txt", "b.txt", "c.txt"}}
		}, http.StatusBadRequest, "a-old\n"},
		{"absolute base", func(x *h, d string) url.Values {
			return url.Values{"diff_digest": {d}, "select": {"1"}, "path": {x.base}, "shown": {"a.txt", "b.txt", "c.txt"}}
		}, http.StatusBadRequest, "a-old\n"},
		{"no shown", func(x *h, d string) url.Values {
			return url.Values{"diff_digest": {d}, "select": {"1"}, "path": {"a.txt"}}
		}, http.StatusOK, "a-new\n"},
		{"unknown digest", func(x *h, d string) url.Values {
			return url.Values{"diff_digest": {"sha256:" + strings.Repeat("0", 64)}, "select": {"1"}, "path": {"a.txt"}}
		}, http.StatusBadRequest, "a-old\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newH(t)
			partialTx(t, x, "rv")
			p, page, digest := attack12Review(t, x, "rv")
			if code, body := attack12Post(t, page, "commit", c.form(x, digest)); code != c.status {
				t.Errorf("POST commit: %d, want %d:\n%s", code, c.status, body)
			}
			wantFiles(t, x, c.a, "b-old\n", "c-old\n")
			// Not settled: the page is still open on the rest.
			attack12Post(t, page, "discard", url.Values{})
			p.WaitSettled()
		})
	}
}

// A partial commit's validators run on the base plus the selected part
// only, and what they saw is what lands: a validator that sees b.txt's
// change (left out) or misses a.txt's (selected) fails; one that writes
// its candidate lands none of those writes.
func TestE2EAttack12ValidationSeesThePartAndBindsIt(t *testing.T) {
	t.Run("candidate is base plus part", func(t *testing.T) {
		x := newH(t)
		partialTx(t, x, "v")
		r := x.airlock("commit", "v", "--validate", "grep -qx a-new a.txt && grep -qx b-old b.txt && grep -qx c-old c.txt", "--", "a.txt")
		wantCode(t, r, 0)
		wantFiles(t, x, "a-new\n", "b-old\n", "c-old\n")
		r = x.airlock("commit", "v", "--validate", "grep -qx b-new b.txt && grep -qx c-old c.txt", "--", "b.txt")
		wantCode(t, r, 0)
		r = x.airlock("commit", "v", "--validate", "grep -qx c-old c.txt", "--", "c.txt")
		wantCode(t, r, 75)
		if r.Settle["refusal"] != "ValidationFailed" || r.Settle["tx"] != "v" {
			t.Fatalf("a validator that fails on the part's c.txt did not refuse the transaction:\n%s", r)
		}
		wantFiles(t, x, "a-new\n", "b-new\n", "c-old\n")
	})
	t.Run("validator writes its candidate", func(t *testing.T) {
		x := newH(t)
		partialTx(t, x, "v")
		r := x.airlock("commit", "v", "--validate", `printf 'cand\n' > a.txt && printf 'cand\n' > c.txt && grep -qx cand a.txt`, "--", "a.txt")
		wantCode(t, r, 0)
		wantFiles(t, x, "a-new\n", "b-old\n", "c-old\n")
		if got, w := nameStatus(t, x, "v"), "M\tb.txt\nM\tc.txt\n"; got != w {
			t.Errorf("the rest after a validator wrote its candidate:\n%s\nwant:\n%s", got, w)
		}
	})
}

// A part's receipt is signed like any (gpg.format=ssh): receipt verify
// and log accept it, signed by the key; with its paths edited, receipt
// verify fails.
func TestE2EAttack12SignedPartReceipt(t *testing.T) {
	x := newH(t)
	alice := newSSHKey(t, "alice@example.invalid")
	gitRepoBase(t, x, tree{"a.txt": F(0o644, "a-old\n"), "b.txt": F(0o644, "b-old\n")})
	signWith(t, x.base, alice.private)
	signers := allowedSigners(t, alice)
	staged := x.openTx("sg", "--backend", "copy")
	writeFile(t, filepath.Join(staged, "a.txt"), "a-new\n")
	writeFile(t, filepath.Join(staged, "b.txt"), "b-new\n")
	wantCode(t, x.airlock("commit", "sg", "--", "a.txt"), 0)
	r := x.airlock("receipt", "verify", "sg.1", "--allowed-signers", signers)
	wantCode(t, r, 0)
	if !strings.Contains(r.Stdout, "signed by alice@example.invalid") {
		t.Errorf("the part's receipt is not signed by alice:\n%s", r.Stdout)
	}
	r = x.exec(run{dir: x.base, args: []string{"log", "--allowed-signers", signers}})
	wantCode(t, r, 0)
	if !strings.Contains(r.Stdout, "(part of sg:") {
		t.Errorf("log does not mark the part:\n%s", r.Stdout)
	}
	p := filepath.Join(x.state, "tx", "sg.1", "receipt.json")
	b, err := os.ReadFile(p)
	must(t, err)
	s := string(b)
	i := strings.Index(s, `"paths"`)
	if i < 0 {
		t.Fatalf("no paths in the part's receipt:\n%s", s)
	}
	s = s[:i] + strings.Replace(s[i:], `"a.txt"`, `"a.txt", "b.txt"`, 1)
	must(t, os.WriteFile(p, []byte(s), 0o600))
	if r := x.airlock("receipt", "verify", "sg.1", "--allowed-signers", signers); r.Code == 0 {
		t.Errorf("receipt verify accepted a signed part's receipt with paths widened:\n%s", r)
	}
}

// The agent swaps a selected directory for a symlink to an unselected
// one while the partial commit freezes the selection (paused after the
// first file): refused StagedChanged, nothing landed, the unselected
// directory's files never reach the base.
func TestE2EAttack12SelectedDirSwappedForSymlinkDuringFreeze(t *testing.T) {
	x := newH(t)
	must(t, os.MkdirAll(filepath.Join(x.base, "lib"), 0o755))
	writeFile(t, filepath.Join(x.base, "lib", "x1"), "x1-old\n")
	writeFile(t, filepath.Join(x.base, "lib", "x2"), "x2-old\n")
	staged := x.openTx("sw")
	writeFile(t, filepath.Join(staged, "lib", "x1"), "x1-new\n")
	writeFile(t, filepath.Join(staged, "lib", "x2"), "x2-new\n")
	must(t, os.MkdirAll(filepath.Join(staged, "secret"), 0o755))
	writeFile(t, filepath.Join(staged, "secret", "x1"), "SECRET\n")
	writeFile(t, filepath.Join(staged, "secret", "x2"), "SECRET\n")
	pause := t.TempDir()
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=freeze:1:" + pause}, args: []string{"commit", "sw", "--", "lib"}})
	waitPaused(t, p, pause)
	must(t, os.Rename(filepath.Join(staged, "lib"), filepath.Join(staged, "lib.old")))
	must(t, os.Symlink("secret", filepath.Join(staged, "lib")))
	touch(t, filepath.Join(pause, "continue"))
	r := p.WaitSettled()
	if r.Code == 0 {
		t.Fatalf("the partial commit landed although lib was swapped while it froze:\n%s", r)
	}
	if _, err := os.Lstat(filepath.Join(x.base, "secret")); err == nil {
		t.Errorf("the unselected secret/ reached the base")
	}
	for _, n := range []string{"x1", "x2"} {
		got := testbin.ReadFile(t, filepath.Join(x.base, "lib", n))
		if got != n+"-old\n" {
			t.Errorf("lib/%s = %q: part of a refused partial commit landed", n, got)
		}
	}
	if fi, err := os.Lstat(filepath.Join(x.base, "lib")); err != nil || !fi.IsDir() {
		t.Errorf("the base's lib is no longer a directory (%v)", err)
	}
}

// A rewind of the transaction started while its partial commit is
// paused after its checks: whichever way the two are ordered, the part
// lands what was frozen, and committing the rest afterwards makes the
// base equal the staged tree.
func TestE2EAttack12PartialCommitVsRewind(t *testing.T) {
	x := newH(t)
	staged := partialTx(t, x, "rw")
	wantCode(t, x.airlock("checkpoint", "rw"), 0)
	writeFile(t, filepath.Join(staged, "a.txt"), "a-newer\n")
	pause := t.TempDir()
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, args: []string{"commit", "rw", "--", "a.txt"}})
	waitPaused(t, p, pause)
	rw := x.start(run{args: []string{"rewind", "rw", "1"}})
	touch(t, filepath.Join(pause, "continue"))
	r, rr := p.WaitSettled(), rw.WaitSettled()
	wantCode(t, r, 0)
	wantFiles(t, x, "a-newer\n", "b-old\n", "c-old\n")
	// Refused (a checkpoint from before a partial commit) or done first:
	// either way the staged tree is what the rest must land.
	if rr.Code != 0 && rr.Code != 125 {
		t.Fatalf("rewind: exit %d\n%s", rr.Code, rr)
	}
	want := map[string]string{}
	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		want[n] = testbin.ReadFile(t, filepath.Join(staged, n))
	}
	wantCode(t, x.airlock("commit", "rw"), 0)
	for n, s := range want {
		if b := testbin.ReadFile(t, filepath.Join(x.base, n)); b != s {
			t.Errorf("%s: base %q, staged %q after the rest landed", n, b, s)
		}
	}
}

// Two partial commits of overlapping paths: the second waits for the
// first, then its selection names a path that landed and is refused
// (exit 125) whole: c.txt, which only it named, does not land either.
func TestE2EAttack12OverlappingPartialCommits(t *testing.T) {
	x := newH(t)
	partialTx(t, x, "ov")
	pause := t.TempDir()
	first := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, args: []string{"commit", "ov", "--", "a.txt", "b.txt"}})
	waitPaused(t, first, pause)
	second := x.start(run{args: []string{"commit", "ov", "--", "b.txt", "c.txt"}})
	touch(t, filepath.Join(pause, "continue"))
	r1, r2 := first.WaitSettled(), second.WaitSettled()
	wantCode(t, r1, 0)
	wantCode(t, r2, 125)
	if !strings.Contains(r2.Stderr, `"b.txt"`) {
		t.Errorf("the refusal does not name b.txt:\n%s", r2)
	}
	wantFiles(t, x, "a-new\n", "b-new\n", "c-old\n")
	if got, w := nameStatus(t, x, "ov"), "M\tc.txt\n"; got != w {
		t.Errorf("the rest:\n%s\nwant:\n%s", got, w)
	}
}

// The agent writes while a partial commit of a.txt is paused after its
// checks: to the selected a.txt (what was frozen lands, and the new
// write is a change of the rest, against what landed) and to the
// unselected b.txt (never lands with the part, is in the rest).
func TestE2EAttack12AgentWritesDuringPartialCommit(t *testing.T) {
	x := newH(t)
	staged := partialTx(t, x, "aw")
	pause := t.TempDir()
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, args: []string{"commit", "aw", "--", "a.txt"}})
	waitPaused(t, p, pause)
	for n, s := range map[string]string{"a.txt": "a-newer\n", "b.txt": "b-newer\n"} {
		tmp := filepath.Join(staged, "."+n+".tmp")
		writeFile(t, tmp, s)
		must(t, os.Rename(tmp, filepath.Join(staged, n)))
	}
	touch(t, filepath.Join(pause, "continue"))
	r := p.WaitSettled()
	wantCode(t, r, 0)
	wantFiles(t, x, "a-new\n", "b-old\n", "c-old\n")
	if got, w := nameStatus(t, x, "aw"), "M\ta.txt\nM\tb.txt\nM\tc.txt\n"; got != w {
		t.Errorf("the rest after the agent wrote during the part:\n%s\nwant:\n%s", got, w)
	}
	r = x.airlock("commit", "aw")
	wantCode(t, r, 0)
	if r.Settle["merged_paths"] != "" {
		t.Errorf("the rest merged %q: the part's landing counted as drift", r.Settle["merged_paths"])
	}
	wantFiles(t, x, "a-newer\n", "b-newer\n", "c-new\n")
}

// A file the transaction turns into a directory: selecting one file
// beneath it lands the directory (replacing the file) and that file only.
func TestE2EAttack12FileTurnedDirectoryPartial(t *testing.T) {
	x := newH(t)
	writeFile(t, filepath.Join(x.base, "lib"), "was a file\n")
	staged := partialTx(t, x, "fd")
	must(t, os.Remove(filepath.Join(staged, "lib")))
	must(t, os.MkdirAll(filepath.Join(staged, "lib"), 0o755))
	writeFile(t, filepath.Join(staged, "lib", "x"), "x\n")
	writeFile(t, filepath.Join(staged, "lib", "y"), "y\n")
	wantCode(t, x.airlock("commit", "fd", "--", "lib/x"), 0)
	if got := testbin.ReadFile(t, filepath.Join(x.base, "lib", "x")); got != "x\n" {
		t.Errorf("lib/x = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(x.base, "lib", "y")); err == nil {
		t.Errorf("the unselected lib/y landed")
	}
	wantFiles(t, x, "a-old\n", "b-old\n", "c-old\n")
	if got, w := nameStatus(t, x, "fd"), "M\ta.txt\nM\tb.txt\nM\tc.txt\nA\tlib/y\n"; got != w {
		t.Errorf("the rest:\n%s\nwant:\n%s", got, w)
	}
}

// undo of a part whose path a later part landed again (the command wrote
// it once more) does not silently take the later part's bytes away: it
// is refused, or a.txt keeps what the later part landed.
func TestE2EAttack12UndoPartAfterALaterPartOfTheSamePath(t *testing.T) {
	x := newH(t)
	staged := partialTx(t, x, "up")
	wantCode(t, x.airlock("commit", "up", "--", "a.txt"), 0)
	writeFile(t, filepath.Join(staged, "a.txt"), "a-newer\n")
	r := x.airlock("commit", "up", "--", "a.txt")
	wantCode(t, r, 0)
	if r.Settle["tx"] != "up.2" {
		t.Fatalf("want part up.2:\n%s", r)
	}
	wantFiles(t, x, "a-newer\n", "b-old\n", "c-old\n")
	r = x.exec(run{dir: x.base, args: []string{"undo", "up.1"}})
	if got := testbin.ReadFile(t, filepath.Join(x.base, "a.txt")); r.Code == 0 && got != "a-newer\n" {
		t.Errorf("undo up.1 took away what up.2 landed: a.txt = %q\n%s", got, r)
	}
	// Undoing the later part first, then the earlier, goes back to open.
	wantCode(t, x.exec(run{dir: x.base, args: []string{"undo", "up.2"}}), 0)
	wantCode(t, x.exec(run{dir: x.base, args: []string{"undo", "up.1"}}), 0)
	wantFiles(t, x, "a-old\n", "b-old\n", "c-old\n")
}

// Approval is per commit: --approve on a part that holds no protected
// path does not let the rest's protected path land unapproved; a part
// without a protected path needs no approval; one selecting it without
// --approve is refused with a remedy that repeats the paths.
func TestE2EAttack12ApprovalDoesNotCarryToTheRest(t *testing.T) {
	x := newH(t)
	writeFile(t, filepath.Join(x.base, ".envrc"), "export A=1\n")
	staged := partialTx(t, x, "ap")
	writeFile(t, filepath.Join(staged, ".envrc"), "export A=2\n")
	wantCode(t, x.airlock("commit", "ap", "--", "a.txt"), 0)
	r := x.airlock("commit", "ap", "--", ".envrc")
	wantCode(t, r, 75)
	if r.Settle["refusal"] != "ProtectedPathNotApproved" || r.Settle["tx"] != "ap" || !strings.Contains(r.Stderr, "--approve -- .envrc") {
		t.Errorf("a part selecting .envrc without --approve is not refused ProtectedPathNotApproved with the paths in its remedy:\n%s", r)
	}
	wantCode(t, x.airlock("commit", "ap", "--approve", "--", "b.txt"), 0)
	r = x.airlock("commit", "ap")
	wantCode(t, r, 75)
	if r.Settle["refusal"] != "ProtectedPathNotApproved" {
		t.Errorf("the rest with .envrc is not refused ProtectedPathNotApproved:\n%s", r)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, ".envrc")); got != "export A=1\n" {
		t.Errorf(".envrc = %q: the rest's protected path landed unapproved", got)
	}
	wantFiles(t, x, "a-new\n", "b-new\n", "c-old\n")
}

// undo of the transaction itself, after a part and the rest landed,
// reverts the rest only; the part stays until its own undo. After a
// discard of the rest, the part stays too, and its undo reverts it.
func TestE2EAttack12UndoTheWholeRevertsTheRestOnly(t *testing.T) {
	t.Run("undo ID", func(t *testing.T) {
		x := newH(t)
		partialTx(t, x, "w")
		wantCode(t, x.airlock("commit", "w", "--", "a.txt"), 0)
		wantCode(t, x.airlock("commit", "w"), 0)
		wantCode(t, x.exec(run{dir: x.base, args: []string{"undo", "w"}}), 0)
		wantFiles(t, x, "a-new\n", "b-old\n", "c-old\n")
		wantCode(t, x.exec(run{dir: x.base, args: []string{"undo", "w.1"}}), 0)
		wantFiles(t, x, "a-old\n", "b-old\n", "c-old\n")
	})
	t.Run("discard ID", func(t *testing.T) {
		x := newH(t)
		partialTx(t, x, "w")
		wantCode(t, x.airlock("commit", "w", "--", "b.txt"), 0)
		wantCode(t, x.airlock("discard", "w"), 0)
		wantFiles(t, x, "a-old\n", "b-new\n", "c-old\n")
		wantCode(t, x.exec(run{dir: x.base, args: []string{"undo", "w.1"}}), 0)
		wantFiles(t, x, "a-old\n", "b-old\n", "c-old\n")
	})
}
