package review_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
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
