package review_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestReviewRefusesForgedRequests needs no browser: forged requests get
// 403 and change nothing; the page's own Discard settles and ends the
// review.
func TestReviewRefusesForgedRequests(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a"})
	id, staged := w.open()
	testbin.WriteFiles(t, staged, map[string]string{"a": "changed"})
	rv := w.startReview(w.home, id, "--timeout", "1m")
	forge(t, rv.url)
	w.unchanged()

	resp, err := http.Get(rv.url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for h, want := range map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"X-Frame-Options":         "DENY",
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	if resp.StatusCode != 200 || !strings.Contains(string(body), `<td class="add">changed</td>`) || strings.Contains(string(body), "<script") {
		t.Fatalf("page: status %d\n%s", resp.StatusCode, body)
	}
	if r, err := http.Get(rv.url + "commit"); err != nil || r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET of an action: %v %v, want 405", r.StatusCode, err)
	}
	w.unchanged()

	origin := strings.Join(strings.Split(rv.url, "/")[:3], "/")
	req, _ := http.NewRequest("POST", rv.url+"discard", nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Discarded") {
		t.Fatalf("discard from the page: %d\n%s", resp.StatusCode, body)
	}
	if code := rv.wait(); code != 0 || !strings.Contains(rv.stderr(), "airlock.outcome=discarded") {
		t.Errorf("review exited %d\n%s", code, rv.stderr())
	}
	if out := w.airlock("show", id, "--json"); !strings.Contains(out, `"status": "discarded"`) {
		t.Errorf("transaction not discarded:\n%s", out)
	}
	if testbin.ReadFile(t, filepath.Join(w.base, "a")) != "a" {
		t.Error("discard changed the base")
	}
}

// TestReviewPicksAndTimesOut: without an id, review takes the newest open
// transaction over the current directory; with no decision it exits 1
// after --timeout and keeps the transaction.
func TestReviewPicksAndTimesOut(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a"})
	w.open()
	newest, _ := w.open()
	rv := w.startReview(w.base, "--timeout", "1s")
	if code := rv.wait(); code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, rv.stderr())
	}
	want := "airlock: review timed out after 1s with no decision; transaction " + newest + " is kept\n"
	if !strings.Contains(rv.stderr(), "reviewing transaction "+newest) || !strings.HasSuffix(rv.stderr(), want) {
		t.Errorf("stderr should name the newest transaction and end with %q:\n%s", want, rv.stderr())
	}
	w.unchanged()

	// Over a directory with no transaction, review says so.
	r := testbin.Run(t, w.cmd("", "review", "--no-browser", "--workdir", w.home))
	if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "no open or refused transaction over "+w.home) {
		t.Errorf("review over an empty directory: %v", r)
	}
}

// TestReviewCannotLowerValidate: a review started with --validate adds a
// validator; the project's validate still runs first. While the project's
// fails the page offers neither Commit nor Approve & commit, and both,
// posted anyway, are refused ValidationFailed, the base untouched.
func TestReviewCannotLowerValidate(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a", ".airlock.toml": "validate = \"test ! -e broken\"\n"})
	id, staged := w.open()
	testbin.WriteFiles(t, staged, map[string]string{"broken": "x"})
	rv := w.startReview(w.home, id, "--validate", "true", "--timeout", "1m")
	digest, page := reviewedDigest(t, rv.url)
	if b := buttons(page); b != "" {
		t.Errorf("the page offers %q although the project's validation fails", b)
	}
	// Pressed anyway (a page loaded before the validator began to fail),
	// each is refused.
	for _, action := range []string{"commit", "approve"} {
		body := post(t, rv.url, action, digest)
		if !strings.Contains(body, "ValidationFailed") {
			t.Errorf("%s from the page: want a ValidationFailed refusal\n%s", action, body)
		}
		if _, err := os.Lstat(filepath.Join(w.base, "broken")); err == nil {
			t.Fatalf("%s from the page landed although the project's validation failed", action)
		}
	}
	if out := w.airlock("show", id, "--json"); !strings.Contains(out, `"status": "refused"`) {
		t.Errorf("transaction not kept as refused:\n%s", out)
	}
}

// TestReviewPageOffersOnlyWhatWouldLand: the page offers Commit only when
// a plain commit of what it shows would land, Approve & commit only when
// protected paths hold it and an approving commit would land, neither
// when any commit would be refused (saying why), and nothing once the
// transaction is settled; it names each protected path once, however many
// selectors match it and whether or not a commit was refused for it.
func TestReviewPageOffersOnlyWhatWouldLand(t *testing.T) {
	const cfg = "protect = [\".envrc\", \"*.rc\"]\nvalidate = \"test ! -e broken\"\n"
	cases := []struct {
		name      string
		write     map[string]string
		drift     map[string]string // written to the base before the review
		commit    []string          // a commit from the command line first
		buttons   string            // the commit buttons offered
		discard   bool              // Discard is offered
		banner    string            // on the page
		protected []string          // named once each
	}{
		{name: "no changes", discard: true, banner: `id="empty"`},
		{name: "a change that lands", write: map[string]string{"a": "a2"}, buttons: "commit", discard: true},
		{name: "a protected path, refused before", write: map[string]string{"a": "a2", ".envrc": "x", "b.rc": "y"}, commit: []string{"commit"},
			buttons: "approve", discard: true, banner: "Last commit refused: ProtectedPathNotApproved", protected: []string{".envrc", "b.rc"}},
		{name: "a protected path whose approval validation refuses", write: map[string]string{".envrc": "x", "broken": "b"},
			discard: true, banner: "A commit now would be refused: ValidationFailed", protected: []string{".envrc"}},
		{name: "validation refuses", write: map[string]string{"broken": "b"}, discard: true, banner: "A commit now would be refused: ValidationFailed"},
		// The base gains the file the agent adds, with other content.
		{name: "drift refuses", write: map[string]string{"new": "mine\n"}, drift: map[string]string{"new": "theirs\n"},
			discard: true, banner: "A commit now would be refused: BaseDrift"},
		{name: "settled", write: map[string]string{"a": "a2"}, commit: []string{"commit"}, banner: "committed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, map[string]string{"a": "a", ".airlock.toml": cfg})
			id, staged := w.open()
			testbin.WriteFiles(t, staged, c.write)
			testbin.WriteFiles(t, w.base, c.drift)
			if c.commit != nil {
				testbin.Run(t, w.cmd(w.home, append(c.commit, id)...))
			}
			rv := w.startReview(w.home, id, "--timeout", "1m")
			resp, err := http.Get(rv.url)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			page := string(b)
			if got := buttons(page); got != c.buttons {
				t.Errorf("the page offers %q, want %q", got, c.buttons)
			}
			if got := strings.Contains(page, `id="discard"`); got != c.discard {
				t.Errorf("Discard offered: %v, want %v", got, c.discard)
			}
			if !strings.Contains(page, c.banner) {
				t.Errorf("the page does not say %q", c.banner)
			}
			if strings.Contains(page, `id="protected"`) != (c.protected != nil) {
				t.Errorf("the protected paths banner is there: %v, want %v", !(c.protected != nil), c.protected != nil)
			}
			for _, p := range c.protected {
				if n := strings.Count(page, "<code>"+p+"</code>"); n != 1 {
					t.Errorf("the page names protected %s %d times, want once", p, n)
				}
			}
			if t.Failed() {
				t.Logf("page:\n%s", page)
			}
		})
	}
}
