package torture

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tampers are the ways a state file is damaged: each leaves bytes that no
// airlock wrote.
var tampers = map[string]func([]byte) []byte{
	"truncated": func(b []byte) []byte { return b[:len(b)/2] },
	"empty":     func([]byte) []byte { return nil },
	"appended":  func(b []byte) []byte { return append(append([]byte(nil), b...), "}{\x00garbage"...) },
	"first-byte": func(b []byte) []byte {
		c := append([]byte(nil), b...)
		c[0] = 0
		return c
	},
}

func tamper(t *testing.T, file string, how func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	check(t, os.WriteFile(file, how(b), 0o600))
}

// TestTamperedState damages each state file a commit or recover reads:
// airlock must refuse to act (exit 125) with a message naming the file,
// and the base must not change.
func TestTamperedState(t *testing.T) {
	type target struct {
		file func(w *world) string // the file to damage, after setup
		// setup brings the transaction t1 to where the file is read by
		// the command that follows; midApply reports a base that is
		// already half applied (recover reads the damaged file).
		midApply bool
		cmd      func(w *world) []string
	}
	commit := func(w *world) []string { return []string{"commit", "t1"} }
	recover := func(w *world) []string { return []string{"recover", "--workdir", w.base} }
	targets := map[string]target{
		"open-record":         {file: func(w *world) string { return filepath.Join(w.txDir("t1"), "open.json") }, cmd: commit},
		"event-log":           {file: func(w *world) string { return filepath.Join(w.txDir("t1"), "events.jsonl") }, cmd: commit},
		"base-manifest":       {file: func(w *world) string { return filepath.Join(w.txDir("t1"), "base.manifest.json") }, cmd: commit},
		"journal":             {file: func(w *world) string { return filepath.Join(w.txDir("t1"), "journal", "journal.json") }, midApply: true, cmd: recover},
		"event-log-mid-apply": {file: func(w *world) string { return filepath.Join(w.txDir("t1"), "events.jsonl") }, midApply: true, cmd: recover},
		"inflight-marker": {file: func(w *world) string {
			m, _ := filepath.Glob(filepath.Join(w.state, "bases", "*", "inflight"))
			return m[0]
		}, midApply: true, cmd: recover},
	}
	for tname, tg := range targets {
		for hname, how := range tampers {
			t.Run(tname+"/"+hname, func(t *testing.T) {
				w := newWorld(t)
				orig := hostileBase(w, w.outside())
				staged := w.open("t1")
				check(t, os.WriteFile(filepath.Join(staged, "e"), []byte("new e\n"), 0o644))
				check(t, os.WriteFile(filepath.Join(staged, "d/a"), []byte("new a\n"), 0o644))
				check(t, os.Remove(filepath.Join(staged, "d/b")))
				if tg.midApply {
					r := w.airlockEnv([]string{"AIRLOCK_TEST_FAULT=apply:2"}, "commit", "t1")
					if r.Signal != syscall.SIGKILL {
						t.Fatalf("the commit did not stop at apply:2: %v", r)
					}
				}
				before := snapshot(t, w.base)
				file := tg.file(w)
				tamper(t, file, how)
				r := w.airlock(tg.cmd(w)...)
				if tname == "event-log-mid-apply" && hname == "empty" && r.Code == 0 {
					// The journal and the in-flight marker are intact and
					// name the transaction: rolling back is right too.
					w.beforeOrAfter(orig, nil)
					return
				}
				wantFailure(t, r, file)
				if got := snapshot(t, w.base); !got.equal(before) {
					t.Fatalf("airlock acted on damaged state: the base changed:\n%s", before.diff(got, 10))
				}
			})
		}
	}
}

// TestTamperedBackup alters a backup of a half-applied commit: recover must
// refuse to restore from it, naming the backup, before it changes anything.
func TestTamperedBackup(t *testing.T) {
	for _, how := range []string{"content", "truncated", "removed"} {
		t.Run(how, func(t *testing.T) {
			w := newWorld(t)
			hostileBase(w, w.outside())
			staged := w.open("t1")
			for _, f := range []string{"e", "d/a", "d/b", "d/sub/c"} {
				check(t, os.WriteFile(filepath.Join(staged, f), []byte("new "+f+"\n"), 0o644))
			}
			r := w.airlockEnv([]string{"AIRLOCK_TEST_FAULT=apply:3"}, "commit", "t1")
			if r.Signal != syscall.SIGKILL {
				t.Fatalf("the commit did not stop at apply:3: %v", r)
			}
			backups, _ := filepath.Glob(filepath.Join(w.txDir("t1"), "journal", "backup", "*"))
			if len(backups) < 4 {
				t.Fatalf("want 4 backups, have %v", backups)
			}
			// Backups in path order: d/a, d/b, d/sub/c, e. The apply wrote
			// the first three before it was killed; restore puts d/a and
			// d/b back before it reaches d/sub/c, so a restore that checks
			// backups only as it goes leaves a mix.
			victim := backups[2]
			switch how {
			case "content":
				b, err := os.ReadFile(victim)
				check(t, err)
				check(t, os.WriteFile(victim, bytes.ToUpper(b), 0o600))
			case "truncated":
				check(t, os.WriteFile(victim, nil, 0o600))
			case "removed":
				check(t, os.Remove(victim))
			}
			before := snapshot(t, w.base)
			r = w.airlock("recover", "--workdir", w.base)
			wantFailure(t, r, victim)
			if got := snapshot(t, w.base); !got.equal(before) {
				t.Fatalf("recover restored part of the base from a journal with a bad backup:\n%s", before.diff(got, 10))
			}
		})
	}
}

// TestTamperedReceipt edits a committed receipt: `receipt verify` refuses
// it, naming the file, and so does every command that would report it.
func TestTamperedReceipt(t *testing.T) {
	edits := map[string]func([]byte) []byte{
		"count":    func(b []byte) []byte { return bytes.Replace(b, []byte(`"modified": 2`), []byte(`"modified": 3`), 1) },
		"outcome":  func(b []byte) []byte { return bytes.Replace(b, []byte(`"committed"`), []byte(`"refused"`), 1) },
		"truncate": func(b []byte) []byte { return b[:len(b)/2] },
		"digest": func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"digest": "sha256:`), []byte(`"digest": "sha256:0`), 1)
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			hostileBase(w, w.outside())
			staged := w.open("t1")
			check(t, os.WriteFile(filepath.Join(staged, "e"), []byte("new e\n"), 0o644))
			check(t, os.WriteFile(filepath.Join(staged, "d/a"), []byte("new a\n"), 0o644))
			w.must("commit", "t1")
			rf := filepath.Join(w.txDir("t1"), "receipt.json")
			b, err := os.ReadFile(rf)
			check(t, err)
			e := edit(b)
			if bytes.Equal(e, b) {
				t.Fatalf("the edit %s changed nothing in %s", name, b)
			}
			check(t, os.WriteFile(rf, e, 0o600))
			r := w.airlock("receipt", "verify", "t1")
			if r.Code == 0 || !strings.Contains(r.Stderr+r.Stdout, rf) {
				t.Fatalf("receipt verify accepted an edited receipt or did not name it: %v", r)
			}
			r = w.airlock("commit", "t1")
			wantFailure(t, r, rf)
		})
	}
}

// TestHandEditedOpenRecord edits the open record of a transaction in ways
// that still parse: dropping the protected selectors, and pointing it at
// another directory. airlock must not act on a record it did not write.
func TestHandEditedOpenRecord(t *testing.T) {
	w := newWorld(t)
	hostileBase(w, w.outside())
	staged := w.open("t1")
	check(t, os.WriteFile(filepath.Join(staged, ".envrc"), []byte("export X=1\n"), 0o644))
	rec := filepath.Join(w.txDir("t1"), "open.json")
	b, err := os.ReadFile(rec)
	check(t, err)
	e := bytes.Replace(b, []byte(`".envrc"`), []byte(`"none-such"`), 1)
	if bytes.Equal(e, b) {
		t.Fatalf("no .envrc selector in %s", b)
	}
	check(t, os.WriteFile(rec, e, 0o600))
	before := snapshot(t, w.base)
	r := w.airlock("commit", "t1")
	if r.Code == 0 {
		t.Errorf("a commit of .envrc went through after its protection was edited out of %s", rec)
	}
	if r.Code != 125 || !strings.Contains(r.Stderr, rec) {
		t.Errorf("want a failure naming %s: %v", rec, r)
	}
	if got := snapshot(t, w.base); !got.equal(before) {
		t.Errorf("the base changed:\n%s", before.diff(got, 10))
	}
}
