package review_test

import (
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

var checkbox = regexp.MustCompile(`<input type="checkbox" form="settle" name="path" value="([^"]*)"[^>]* checked>`)

// postPicked sends Commit as the page's form does with the files checked
// among those shown, bound to digest.
func postPicked(t *testing.T, pageURL, digest string, shown, checked []string) string {
	t.Helper()
	form := url.Values{"diff_digest": {digest}, "select": {"1"}, "shown": shown, "path": checked}
	req, _ := http.NewRequest("POST", pageURL+"commit", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", strings.Join(strings.Split(pageURL, "/")[:3], "/"))
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("commit: status %d\n%s", resp.StatusCode, body)
	}
	return string(body)
}

// boxes are the paths page offers a checked checkbox for, in order.
func boxes(page string) []string {
	var out []string
	for _, m := range checkbox.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestReviewPageCommitsTheCheckedFiles: the page has a checkbox per file,
// all checked; Commit with some unchecked lands the checked ones as a part
// of the transaction, which stays open, the page then showing the rest.
// The selection is bound to the change set the page showed: the agent
// writing after the page rendered refuses it ReviewStale, nothing landed.
// No file checked lands nothing. All checked is a plain commit.
func TestReviewPageCommitsTheCheckedFiles(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a\n", "b": "b\n", "c": "c\n"})
	id, staged := w.open()
	testbin.WriteFiles(t, staged, map[string]string{"a": "a2\n", "b": "b2\n", "c": "c2\n"})
	rv := w.startReview(w.home, id, "--timeout", "1m")
	digest, page := reviewedDigest(t, rv.url)
	shown := boxes(page)
	if strings.Join(shown, ",") != "a,b,c" {
		t.Fatalf("the page's checkboxes are %q, want a, b and c, all checked:\n%s", shown, page)
	}

	body := postPicked(t, rv.url, digest, shown, nil)
	if !strings.Contains(body, "no file was checked") {
		t.Errorf("Commit with nothing checked: want it refused\n%s", body)
	}

	// The agent writes c after the page rendered: the page's selection,
	// a and b, is of a change set that is no longer there.
	testbin.WriteFiles(t, staged, map[string]string{"c": "c3\n"})
	body = postPicked(t, rv.url, digest, shown, []string{"a", "b"})
	if !strings.Contains(body, "ReviewStale") {
		t.Errorf("Commit of checked files of a stale page: want ReviewStale\n%s", body)
	}
	for n, want := range map[string]string{"a": "a\n", "b": "b\n", "c": "c\n"} {
		if got := testbin.ReadFile(t, filepath.Join(w.base, n)); got != want {
			t.Fatalf("%s = %q after a refused commit from the page, want %q", n, got, want)
		}
	}

	digest, page = reviewedDigest(t, rv.url)
	body = postPicked(t, rv.url, digest, boxes(page), []string{"a", "c"})
	if !strings.Contains(body, `id="landed"`) || !strings.Contains(body, id+".1") {
		t.Fatalf("Commit of a and c: want the part %s.1 landed, the page kept\n%s", id, body)
	}
	if got := boxes(body); strings.Join(got, ",") != "b" {
		t.Errorf("after the part landed the page shows %q, want the rest, b", got)
	}
	for n, want := range map[string]string{"a": "a2\n", "b": "b\n", "c": "c3\n"} {
		if got := testbin.ReadFile(t, filepath.Join(w.base, n)); got != want {
			t.Errorf("%s = %q after the partial commit, want %q", n, got, want)
		}
	}

	// The rest, all checked: a plain commit, which settles it.
	digest, page = reviewedDigest(t, rv.url)
	body = postPicked(t, rv.url, digest, boxes(page), boxes(page))
	if !strings.Contains(body, "Committed to the base") {
		t.Fatalf("Commit of the rest:\n%s", body)
	}
	if code := rv.wait(); code != 0 {
		t.Errorf("review exited %d\n%s", code, rv.stderr())
	}
	if got := testbin.ReadFile(t, filepath.Join(w.base, "b")); got != "b2\n" {
		t.Errorf("b = %q, want b2", got)
	}
	if out := w.airlock("show", id, "--json"); !strings.Contains(out, `"status": "committed"`) {
		t.Errorf("the transaction is not committed:\n%s", out)
	}
}
