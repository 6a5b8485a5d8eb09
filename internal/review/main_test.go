package review_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// world is one test's base, state root and home.
type world struct {
	t                 *testing.T
	base, state, home string
	digest            string // the base's digest when the transaction opened
	id                string
	env               []string // added to the environment of the processes started now
}

func newWorld(t *testing.T, files map[string]string) *world {
	t.Helper()
	w := &world{t: t, base: testbin.RealDir(t), state: filepath.Join(testbin.RealDir(t), "state"), home: testbin.RealDir(t)}
	testbin.WriteFiles(t, w.base, files)
	return w
}

// airlockBin is the binary the tests drive; TestMain builds it once.
var airlockBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &airlockBin)) }

// environ is the environment of every process a test starts
// (testbin.Environ).
func (w *world) environ() []string { return testbin.Environ(w.state, w.home, w.env...) }

// airlock runs the binary and returns its stdout; it fails the test on a
// non-zero exit.
func (w *world) airlock(args ...string) string {
	w.t.Helper()
	r := testbin.Run(w.t, w.cmd(w.home, args...))
	if r.Code != 0 {
		w.t.Fatalf("%v", r)
	}
	return r.Stdout
}

// processTimeout bounds every process a test starts; it outlasts the
// longest --timeout a test gives review (2m).
const processTimeout = 3 * time.Minute

// cmd is airlock with args, run in dir.
func (w *world) cmd(dir string, args ...string) testbin.Cmd {
	return testbin.Cmd{Bin: airlockBin, Args: args, Dir: dir, Env: w.environ(), Timeout: processTimeout}
}

// open opens a transaction over the base and returns its id and staged
// path; the base's digest at that moment is what unchanged compares with.
func (w *world) open() (string, string) {
	w.t.Helper()
	lines := strings.Split(strings.TrimSpace(w.airlock("open", "--workdir", w.base)), "\n")
	if len(lines) != 2 {
		w.t.Fatalf("open printed %q", lines)
	}
	w.id = lines[0]
	w.digest = treeDigest(w.t, w.base)
	return lines[0], lines[1]
}

// unchanged fails the test unless the base is as it was at open and the
// transaction is still open.
func (w *world) unchanged() {
	w.t.Helper()
	if treeDigest(w.t, w.base) != w.digest {
		w.t.Fatal("the base changed")
	}
	if out := w.airlock("show", w.id, "--json"); !strings.Contains(out, `"status": "open"`) {
		w.t.Fatalf("the transaction is no longer open:\n%s", out)
	}
}

// treeDigest hashes every path and file content under root.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s\x00%v\x00", rel, d.Type())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// forge sends the requests a page on another site could make, or a local
// process without the token: each must get 403.
func forge(t *testing.T, url string) {
	t.Helper()
	origin := strings.Join(strings.Split(url, "/")[:3], "/")
	token := strings.Split(url, "/")[3]
	forged := []struct {
		name, method, url, origin, host string
	}{
		{"page without the token", "GET", origin + "/", "", ""},
		{"page with a wrong token", "GET", origin + "/" + strings.Repeat("0", len(token)) + "/", "", ""},
		{"commit without the token", "POST", origin + "/commit", origin, ""},
		{"commit without an Origin", "POST", url + "commit", "", ""},
		{"commit from another origin", "POST", url + "commit", "http://evil.example", ""},
		{"approve from another local port", "POST", url + "approve", "http://127.0.0.1:1", ""},
		{"discard for a rebound host name", "POST", url + "discard", "http://attacker.example:80", "attacker.example"},
	}
	for _, f := range forged {
		req, err := http.NewRequest(f.method, f.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.origin != "" {
			req.Header.Set("Origin", f.origin)
		}
		if f.host != "" {
			req.Host = f.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", f.name, resp.StatusCode)
		}
	}
}

// review is a running `airlock review`.
type review struct {
	t   *testing.T
	p   *testbin.Proc
	url string
}

func (r *review) stderr() string { return r.p.Stderr() }

func (r *review) wait() int {
	select {
	case <-r.p.Done():
		return r.p.Wait().Code
	case <-time.After(processTimeout):
		r.t.Fatalf("review did not exit\n%s", r.stderr())
		return -1
	}
}

// startReview starts `airlock review --no-browser ARGS...` in dir and
// reads the URL it prints.
func (w *world) startReview(dir string, args ...string) *review {
	w.t.Helper()
	r := &review{t: w.t, p: testbin.Start(w.t, w.cmd(dir, append([]string{"review", "--no-browser"}, args...)...))}
	line, ok := "", false
	for deadline := time.Now().Add(processTimeout); !ok && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		line, _, ok = strings.Cut(r.p.Stdout(), "\n")
		if !ok && r.p.Ended() {
			break
		}
	}
	if !ok {
		r.p.Signal(os.Kill)
		w.t.Fatalf("review printed no URL\n%s", r.stderr())
	}
	r.url = strings.TrimSpace(line)
	if !strings.HasPrefix(r.url, "http://127.0.0.1:") {
		w.t.Fatalf("URL %q is not on 127.0.0.1", r.url)
	}
	return r
}
