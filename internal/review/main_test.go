package review_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Shared test helpers (internal/testbin).
var (
	realDir    = testbin.RealDir
	writeFiles = testbin.WriteFiles
	readFile   = testbin.ReadFile
	exists     = testbin.Exists
)

// airlockBin is the binary the tests drive; TestMain builds it once.
var airlockBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &airlockBin)) }

// world is one test's base, state root and home.
type world struct {
	t                 *testing.T
	base, state, home string
	digest            string // the base's digest when the transaction opened
	id                string
}

func newWorld(t *testing.T, files map[string]string) *world {
	t.Helper()
	w := &world{t: t, base: realDir(t), state: filepath.Join(realDir(t), "state"), home: realDir(t)}
	writeFiles(t, w.base, files)
	return w
}

// environ is the environment of every process a test starts
// (testbin.Environ).
func (w *world) environ() []string { return testbin.Environ(w.state, w.home) }

// airlock runs the binary and returns its stdout; it fails the test on a
// non-zero exit.
func (w *world) airlock(args ...string) string {
	w.t.Helper()
	cmd := exec.Command(airlockBin, args...)
	cmd.Dir = w.home
	cmd.Env = w.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("airlock %q: %v\n%s", args, err, errb.String())
	}
	return out.String()
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
