package browsertest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airlockdev/airlock/internal/testbin"
)

// chromium finds a headless-capable Chromium: $AIRLOCK_CHROMIUM, else the
// usual names on PATH.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AIRLOCK_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testbin.Missing(t, "the review page's browser test needs Chromium, and none was found (chromium, chromium-browser, google-chrome on PATH): "+
		"install it (Debian: apt-get install -y chromium) or set AIRLOCK_CHROMIUM to a Chrome or Chromium binary")
	return ""
}

// artefacts is where screenshots go: $AIRLOCK_TEST_ARTIFACTS when set
// (kept after the test), else the test's temporary directory.
func artefacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AIRLOCK_TEST_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReviewInChromium reviews transactions in a real headless Chromium.
// First the diff is on the page, requests without the token or from
// another origin (a cross-site form in the same browser) are refused and
// change nothing, and pressing Commit lands the change and ends the
// review. Then a protected path is refused and approved.
func TestReviewInChromium(t *testing.T) {
	chrome := chromium(t)
	ctx, shot := newBrowser(t, chrome)
	t.Run("commit", func(t *testing.T) { reviewCommit(t, ctx, shot) })
	t.Run("refusal then approval", func(t *testing.T) { reviewRefusal(t, ctx, shot) })
	t.Run("counts are files", func(t *testing.T) { reviewCounts(t, ctx) })
	t.Run("checked files", func(t *testing.T) { reviewPartial(t, ctx, shot) })
}

// reviewPartial: each file has a checkbox; unchecking one and pressing
// Approve & commit (a button of the same form, by its formaction) lands
// the checked files as a part of the transaction, approved; the page
// stays, showing the rest, for which a plain Commit is now offered and
// lands it, ending the review.
func reviewPartial(t *testing.T, ctx context.Context, shot func(string)) {
	w := newWorld(t, map[string]string{"app.py": "print('hi')\n", "lib.py": "x = 1\n"})
	id, staged := w.open()
	testbin.WriteFiles(t, staged, map[string]string{".envrc": "export A=1\n", "app.py": "print('hi there')\n", "lib.py": "x = 2\n"})
	rv := w.startReview(w.home, id, "--timeout", "2m")
	// Files in path order: .envrc, app.py, lib.py. Only Approve & commit
	// is offered: a plain commit of all three would be refused.
	if err := chromedp.Do(ctx, chromedp.Navigate(rv.url), chromedp.WaitVisible(chromedp.ID("approve")),
		chromedp.Click(chromedp.ID("pick1")), chromedp.Click(chromedp.ID("approve"))); err != nil {
		t.Fatalf("uncheck app.py and press Approve & commit: %v\n%s", err, rv.stderr())
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.ID("landed")), chromedp.WaitVisible(chromedp.ID("commit")))
	wcancel()
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("no landed part after Approve & commit of two files (%v):\n%.2000s\n%s", err, body, rv.stderr())
	}
	landed, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("landed")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(landed, id+".1") || !strings.Contains(landed, ".envrc") || !strings.Contains(landed, "lib.py") || strings.Contains(landed, "app.py") {
		t.Errorf("the landed banner: %q", landed)
	}
	shot("review-partial.png")
	if got := testbin.ReadFile(t, filepath.Join(w.base, "app.py")); got != "print('hi')\n" {
		t.Errorf("app.py, unchecked, landed: %q", got)
	}
	if got := testbin.ReadFile(t, filepath.Join(w.base, "lib.py")); got != "x = 2\n" || !testbin.Exists(filepath.Join(w.base, ".envrc")) {
		t.Errorf("the checked files did not land")
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("commit"))); err != nil {
		t.Fatalf("press Commit for the rest: %v", err)
	}
	if code := rv.wait(); code != 0 || !strings.Contains(rv.stderr(), "airlock.outcome=committed") {
		t.Errorf("review exited %d after the rest was committed\n%s", code, rv.stderr())
	}
	if got := testbin.ReadFile(t, filepath.Join(w.base, "app.py")); got != "print('hi there')\n" {
		t.Errorf("app.py after the rest: %q", got)
	}
}

// reviewCounts: one new workflow file in new directories is "1 added" on
// the page, as git counts it, not 3. A workflow is protected by default:
// the page offers Approve & commit.
func reviewCounts(t *testing.T, ctx context.Context) {
	w := newWorld(t, map[string]string{"app.py": "print('hi')\n"})
	id, staged := w.open()
	testbin.WriteFiles(t, staged, map[string]string{".github/workflows/ci.yml": "on: push\n"})
	rv := w.startReview(w.home, id, "--timeout", "2m")
	if err := chromedp.Do(ctx, chromedp.Navigate(rv.url), chromedp.WaitVisible(chromedp.ID("approve"))); err != nil {
		t.Fatalf("load the review page: %v\n%s", err, rv.stderr())
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "1 added · 0 modified · 0 deleted") {
		t.Errorf("the page does not count one new file as 1 added:\n%s", text)
	}
}

func reviewCommit(t *testing.T, ctx context.Context, shot func(string)) {
	w := newWorld(t, map[string]string{
		"src/app.go": "package app\n\nfunc Hello() string {\n\treturn \"hello\"\n}\n",
		"README.md":  "# demo\n\nA small project.\n",
		"old.txt":    "to be removed\n",
	})
	id, staged := w.open()
	testbin.WriteFiles(t, staged, map[string]string{
		"src/app.go": "package app\n\nfunc Hello() string {\n\treturn \"hello, reviewer\"\n}\n\nfunc Bye() string { return \"bye\" }\n",
		"NOTES.md":   "Reviewed <b>in a browser</b> & rendered on the server.\n",
	})
	if err := os.Remove(filepath.Join(staged, "old.txt")); err != nil {
		t.Fatal(err)
	}

	rv := w.startReview(w.home, id, "--timeout", "2m")
	url := rv.url

	forge(t, url)
	w.unchanged()

	// The page shows the change set.
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("commit"))); err != nil {
		t.Fatalf("load the review page: %v\n%s", err, rv.stderr())
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"src/app.go", "NOTES.md", "old.txt", `return "hello, reviewer"`, `return "hello"`, "func Bye()", "Reviewed <b>in a browser</b> & rendered on the server."} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not show %q:\n%s", want, text)
		}
	}
	shot("review-unified.png")
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"?view=split"), chromedp.WaitVisible(chromedp.CSS("table.split"))); err != nil {
		t.Fatalf("side-by-side view: %v", err)
	}
	split, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(split, `return "hello, reviewer"`) {
		t.Errorf("the side-by-side view does not show the change:\n%s", split)
	}
	shot("review-split.png")

	// A page on another origin posts a form to the review URL, token and
	// all, from the same browser: the browser sends its own Origin, and
	// the review refuses it.
	evil := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(rw, `<form id=f method=post action="%scommit"></form><script>document.getElementById('f').submit()</script>`, url)
	}))
	defer evil.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatalf("cross-origin form: %v", err)
	}
	var forbidden string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		forbidden, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		if err == nil && strings.Contains(forbidden, "403 forbidden") {
			break
		}
	}
	if !strings.Contains(forbidden, "403 forbidden") {
		t.Errorf("a cross-origin form post was not refused; the browser shows:\n%s", forbidden)
	}
	w.unchanged()

	// Commit from the page.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.ID("commit")),
		chromedp.Click(chromedp.ID("commit")),
	); err != nil {
		t.Fatalf("press Commit: %v\n%s", err, rv.stderr())
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	err = chromedp.Do(wctx, chromedp.WaitVisible(chromedp.ID("outcome")))
	wcancel()
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		shot("review-commit-failed.png")
		t.Fatalf("no outcome after pressing Commit (%v); the browser is at %s showing:\n%.2000s\nreview's stderr:\n%s", err, loc, body, rv.stderr())
	}
	outcome, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("outcome")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(outcome, "Committed to the base") || !strings.Contains(outcome, "2 added") && !strings.Contains(outcome, "1 added") {
		t.Errorf("outcome banner: %q", outcome)
	}
	shot("review-committed.png")
	if got := testbin.ReadFile(t, filepath.Join(w.base, "src", "app.go")); !strings.Contains(got, "hello, reviewer") {
		t.Errorf("the base did not change: src/app.go is %q", got)
	}
	if testbin.Exists(filepath.Join(w.base, "old.txt")) || !testbin.Exists(filepath.Join(w.base, "NOTES.md")) {
		t.Error("the base is not base + change set")
	}
	code := rv.wait()
	if code != 0 || !strings.Contains(rv.stderr(), "airlock.outcome=committed") {
		t.Errorf("review exited %d after the commit\n%s", code, rv.stderr())
	}
}

// newBrowser starts a headless Chromium with a fresh profile and returns a
// tab's context and a function that saves a screenshot of the page as a
// test artefact.
func newBrowser(t *testing.T, chrome string) (context.Context, func(name string)) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(cancelT)
	shots := artefacts(t)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		p := filepath.Join(shots, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}

	return ctx, shot
}

// reviewRefusal: a change to a protected path is flagged on the page,
// named once, and only Approve & commit is offered, since a plain Commit
// would be refused; pressing it lands the change. A change set the
// project's validation refuses gets no commit button at all, and says
// why.
func reviewRefusal(t *testing.T, ctx context.Context, shot func(string)) {
	w := newWorld(t, map[string]string{"app.py": "print('hi')\n", ".airlock.toml": "protect = [\".envrc\", \"*rc\"]\nvalidate = \"test ! -e broken\"\n"})
	id, staged := w.open()
	testbin.WriteFiles(t, staged, map[string]string{".envrc": "export API_URL=http://localhost:8080\n", "app.py": "print('hi there')\n"})
	// A commit from the command line is refused first: the page names the
	// protected path once all the same.
	if r := testbin.Run(t, w.cmd(w.home, "commit", id)); r.Code != 75 {
		t.Fatalf("commit of a protected path: %v, want exit 75", r)
	}
	rv := w.startReview(w.base, "--timeout", "2m") // no id: the newest over the current directory
	if err := chromedp.Do(ctx, chromedp.Navigate(rv.url), chromedp.WaitVisible(chromedp.ID("approve"))); err != nil {
		t.Fatalf("load the review page: %v\n%s", err, rv.stderr())
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "Protected paths changed") || !strings.Contains(text, id) && !strings.Contains(rv.stderr(), id) {
		t.Errorf("the page does not flag the protected path:\n%s", text)
	}
	// Named once: in the list of protected paths, not again under the
	// recorded refusal (the file list and the diff show every file).
	listed, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#outcome code, #last code, #blocked code, #protected code")].map(e => e.textContent).join("\n")`))
	if err != nil {
		t.Fatal(err)
	}
	if listed != ".envrc" {
		t.Errorf("the page's banners name %q, want .envrc once", listed)
	}
	if n := count(t, ctx, "#commit"); n != 0 {
		t.Errorf("the page offers Commit, which would be refused ProtectedPathNotApproved")
	}
	shot("review-protected.png")
	if treeDigest(t, w.base) != w.digest {
		t.Fatal("the review changed the base")
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("approve"))); err != nil {
		t.Fatalf("press Approve & commit: %v\n%s", err, rv.stderr())
	}
	outcome := waitText(ctx, "#outcome", "Committed to the base")
	if !strings.Contains(outcome, "Committed to the base") {
		t.Errorf("outcome banner after Approve: %q", outcome)
	}
	if testbin.ReadFile(t, filepath.Join(w.base, ".envrc")) != "export API_URL=http://localhost:8080\n" {
		t.Error("the approved change did not land")
	}
	if code := rv.wait(); code != 0 {
		t.Errorf("review exited %d\n%s", code, rv.stderr())
	}

	// Validation refuses the next change set: no commit button, the
	// reason in its place, and Discard still there.
	id, staged = w.open()
	testbin.WriteFiles(t, staged, map[string]string{"broken": "x\n"})
	rv = w.startReview(w.home, id, "--timeout", "2m")
	if err := chromedp.Do(ctx, chromedp.Navigate(rv.url), chromedp.WaitVisible(chromedp.ID("blocked"))); err != nil {
		t.Fatalf("load the review page: %v\n%s", err, rv.stderr())
	}
	blocked, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("blocked")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(blocked, "A commit now would be refused: ValidationFailed") {
		t.Errorf("the page does not say why it offers no commit: %q", blocked)
	}
	if n := count(t, ctx, "#commit, #approve"); n != 0 || count(t, ctx, "#discard") != 1 {
		t.Errorf("a change set validation refuses: the page offers %d commit buttons, want none and Discard", n)
	}
	shot("review-blocked.png")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("discard"))); err != nil {
		t.Fatalf("press Discard: %v", err)
	}
	if outcome := waitText(ctx, "#outcome", "Discarded"); !strings.Contains(outcome, "Discarded") {
		t.Errorf("outcome banner after Discard: %q", outcome)
	}
	if code := rv.wait(); code != 0 {
		t.Errorf("review exited %d\n%s", code, rv.stderr())
	}
}

// count is how many elements of the page sel matches.
func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitText polls the text of the element sel until it holds want, for up
// to a minute, and returns the last text read.
func waitText(ctx context.Context, sel, want string) string {
	var text string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		got, err := chromedp.Run(wctx, chromedp.Text(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			text = got
			if strings.Contains(text, want) {
				break
			}
		}
	}
	return text
}
