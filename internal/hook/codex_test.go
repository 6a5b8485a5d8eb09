package hook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// agentScript is a stand-in for `codex exec`: it works in its current
// directory and, at the end of each turn, runs the Stop hook as Codex
// does (Stop's JSON on stdin, in the session's cwd), keeping each answer
// in OUT/turnN.json. $1 names the turns' edits.
const agentScript = `set -e
turn() {
	printf '{"session_id":"s-1","turn_id":"t-%s","transcript_path":null,"cwd":"%s","hook_event_name":"Stop","model":"gpt-5-codex","permission_mode":"default","stop_hook_active":false,"last_assistant_message":"done"}' "$1" "$PWD" |
		airlock hook codex stop >"$OUT/turn$1.json" 2>"$OUT/turn$1.err"
}
echo feature >feature.txt
turn 1
echo 'export X=1' >.envrc
turn 2
rm .envrc
echo oops >bad
turn 3
rm bad
turn 4
`

// TestCodexStopUnderRun drives `airlock run -- <agent>` as
// docs/agents/codex.md documents for `codex exec`: in same-path mode the agent, and so its Stop
// hook, sees the staged workspace at the base's own path; the hook finds
// the transaction by AIRLOCK_TX and checks it against the real base.
//
// As an unprivileged user, same-path mode lives in a user namespace that
// may not look into its parent's mounts: the hook cannot see the real base
// and checks what needs none (protected paths, validation of the staged
// tree), saying so on stderr. Either way a plain change must not read as
// drift.
func TestCodexStopUnderRun(t *testing.T) {
	for _, mode := range []string{"same-path", "no-same-path", "unprivileged"} {
		t.Run(mode, func(t *testing.T) {
			files := map[string]string{"a": "a", ".airlock.toml": "validate = \"test ! -e bad || { echo 'remove bad'; exit 1; }\"\n"}
			var w *world
			var out string
			if mode == "unprivileged" {
				w, out = nobodyWorld(t, files)
			} else {
				w = newWorld(t, files)
				out = testbin.RealDir(t)
			}
			script := filepath.Join(out, "agent.sh")
			if mode != "unprivileged" {
				testbin.WriteFiles(t, out, map[string]string{"agent.sh": agentScript})
			}
			args := []string{w.bin, "run", "--quiet"}
			if mode == "no-same-path" {
				args = append(args, "--no-same-path")
			}
			r := w.run(w.base, "", []string{"OUT=" + out}, append(args, "--", "sh", script)...)
			mustCode(t, r, 0)
			if mode != "no-same-path" && strings.Contains(r.Stderr, "same-path mode unavailable") {
				testbin.Missing(t, "no mount namespace here: %s", r.Stderr)
			}
			answer := func(n string) map[string]any {
				t.Helper()
				b, err := os.ReadFile(filepath.Join(out, "turn"+n+".json"))
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil || !strings.HasSuffix(string(b), "}\n") {
					t.Fatalf("turn %s: stdout %q is not one JSON object (%v); stderr: %s", n, b, err, testbin.ReadFile(t, filepath.Join(out, "turn"+n+".err")))
				}
				return m
			}
			if m := answer("1"); len(m) != 0 {
				t.Errorf("turn 1 (a plain change): %v, want {}", m)
			}
			if m := answer("2"); m["decision"] != "block" || !strings.Contains(m["reason"].(string), "ProtectedPathNotApproved") {
				t.Errorf("turn 2 (.envrc): %v, want a block for the protected path", m)
			}
			if m := answer("3"); m["decision"] != "block" || !strings.Contains(m["reason"].(string), "remove bad") {
				t.Errorf("turn 3 (bad): %v, want a block with the validator's output", m)
			}
			if m := answer("4"); len(m) != 0 {
				t.Errorf("turn 4 (fixed): %v, want {}", m)
			}
			if mode == "unprivileged" {
				if e := testbin.ReadFile(t, filepath.Join(out, "turn1.err")); !strings.Contains(e, "checked in part: the base is hidden by the same-path view") {
					t.Errorf("the limited check should say so on stderr, got %q", e)
				}
			}
			// The run committed when the agent exited 0.
			if testbin.ReadFile(t, filepath.Join(w.base, "feature.txt")) != "feature\n" || testbin.Exists(filepath.Join(w.base, "bad")) || testbin.Exists(filepath.Join(w.base, ".envrc")) {
				t.Error("the base is not the agent's final tree")
			}
		})
	}
}

// nobodyWorld is a world whose processes run as the unprivileged user
// nobody, in directories that user owns, with a copy of the binary it can
// execute. It needs root to set up.
func nobodyWorld(t *testing.T, files map[string]string) (*world, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as another user; the other cases already run unprivileged")
	}
	const nobody = 65534
	root, err := os.MkdirTemp("", "airlock-hook-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if root, err = filepath.EvalSymlinks(root); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, base: filepath.Join(root, "base"), state: filepath.Join(root, "state"), home: filepath.Join(root, "home"),
		bin: filepath.Join(root, "bin", "airlock"), cred: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out := filepath.Join(root, "out")
	for _, d := range []string{w.base, w.home, out, filepath.Dir(w.bin)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testbin.WriteFiles(t, w.base, files)
	testbin.WriteFiles(t, out, map[string]string{"agent.sh": agentScript})
	bin, err := os.ReadFile(airlockBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.bin, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	})
	if err != nil {
		t.Fatal(err)
	}
	return w, out
}
