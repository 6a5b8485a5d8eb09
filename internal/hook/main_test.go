package hook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Shared test helpers (internal/testbin).
var (
	realDir    = testbin.RealDir
	writeFiles = testbin.WriteFiles
	readFile   = testbin.ReadFile
	exists     = testbin.Exists
)

// airlockBin is the binary the tests drive, as an agent would: TestMain
// builds it once.
var airlockBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &airlockBin)) }

// world is one test's base, state root and home, each its own directory.
type world struct {
	t     *testing.T
	base  string
	state string
	home  string
	bin   string              // the airlock binary; airlockBin unless copied
	cred  *syscall.Credential // run processes as this user, when set
}

func newWorld(t *testing.T, files map[string]string) *world {
	t.Helper()
	w := &world{t: t, base: realDir(t), state: filepath.Join(realDir(t), "state"), home: realDir(t), bin: airlockBin}
	writeFiles(t, w.base, files)
	return w
}

// environ is the environment of every process a test starts
// (testbin.Environ), with the binary first on PATH as an installed airlock
// would be.
func (w *world) environ(extra ...string) []string {
	path := "PATH=" + filepath.Dir(w.bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	return testbin.Environ(w.state, w.home, append([]string{path}, extra...)...)
}

// result is how one process ended.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("%q: exit %d\nstdout:\n%s\nstderr:\n%s", r.args, r.code, r.stdout, r.stderr)
}

// run starts argv in dir with stdin and waits for it.
func (w *world) run(dir, stdin string, env []string, argv ...string) result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	if dir == "" {
		cmd.Dir = w.home
	}
	cmd.Env = w.environ(env...)
	cmd.Stdin = strings.NewReader(stdin)
	if w.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.cred}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{args: argv, stdout: out.String(), stderr: errb.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			w.t.Fatalf("%q: %v", argv, err)
		}
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			w.t.Fatalf("%q died of %v\n%s", argv, ws.Signal(), r)
		}
	}
	return r
}

// airlock runs the binary from the home directory.
func (w *world) airlock(stdin string, args ...string) result {
	w.t.Helper()
	return w.run("", stdin, nil, append([]string{airlockBin}, args...)...)
}

// hook sends an event's JSON to `airlock hook AGENT EVENT`.
func (w *world) hook(agent, event string, input map[string]any, env ...string) result {
	w.t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		w.t.Fatal(err)
	}
	return w.run("", string(b), env, airlockBin, "hook", agent, event)
}

// common are the fields Claude Code sends with every event.
func common(event, cwd string) map[string]any {
	return map[string]any{
		"session_id":      "abc123",
		"transcript_path": "/home/user/.claude/projects/x/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
		"cwd":             cwd,
		"permission_mode": "default",
		"hook_event_name": event,
	}
}

func with(m map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// worktreeCreate is Claude Code's WorktreeCreate input for name, run from
// the project.
func worktreeCreate(cwd, name string) map[string]any {
	m := common("WorktreeCreate", cwd)
	delete(m, "permission_mode")
	m["name"] = name
	return m
}

func stopInput(cwd string, active bool) map[string]any {
	return with(common("Stop", cwd), "stop_hook_active", active, "last_assistant_message", "I've completed the change.")
}

// codexStop is Codex's Stop input (its schema's required fields).
func codexStop(cwd string, active bool) map[string]any {
	return map[string]any{
		"session_id": "s-1", "turn_id": "t-1", "transcript_path": nil, "cwd": cwd,
		"hook_event_name": "Stop", "model": "gpt-5-codex", "permission_mode": "default",
		"stop_hook_active": active, "last_assistant_message": "done",
	}
}

// mustCode fails unless r ended with code.
func mustCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\n%s", r.code, code, r)
	}
}

// decode parses stdout as exactly one JSON object on one line.
func decode(t *testing.T, r result) map[string]any {
	t.Helper()
	if !strings.HasSuffix(r.stdout, "\n") || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout is not one line of JSON\n%s", r)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, r)
	}
	return m
}

// keys returns m's keys, sorted.
func keys(m map[string]any) string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return strings.Join(k, ",")
}

// status reads a transaction's status with `airlock show --json`.
func (w *world) status(id string) string {
	w.t.Helper()
	r := w.airlock("", "show", id, "--json")
	mustCode(w.t, r, 0)
	var info struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil {
		w.t.Fatalf("show --json: %v\n%s", err, r)
	}
	return info.Status
}
