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
// validator; the project's validate still runs first. Commit and Approve &
// commit from the page are both refused ValidationFailed while the
// project's fails, and the base is untouched.
func TestReviewCannotLowerValidate(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a", ".airlock.toml": "validate = \"test ! -e broken\"\n"})
	id, staged := w.open()
	testbin.WriteFiles(t, staged, map[string]string{"broken": "x"})
	rv := w.startReview(w.home, id, "--validate", "true", "--timeout", "1m")
	digest, _ := reviewedDigest(t, rv.url)
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
