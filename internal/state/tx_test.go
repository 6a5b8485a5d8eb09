package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func newTx(t *testing.T) *Tx {
	t.Helper()
	tx, err := openStore(t).Create("t")
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

type record struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

func TestWriteOnce(t *testing.T) {
	tx := newTx(t)
	if err := tx.WriteOnce("open.json", record{"first", 1}); err != nil {
		t.Fatal(err)
	}
	err := tx.WriteOnce("open.json", record{"second", 2})
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), tx.Path("open.json")) {
		t.Fatalf("second WriteOnce = %v, want an error naming the file and matching fs.ErrExist", err)
	}
	var got record
	if err := tx.Read("open.json", &got); err != nil {
		t.Fatal(err)
	}
	if got != (record{"first", 1}) {
		t.Fatalf("record was overwritten: %+v", got)
	}
	fi, err := os.Stat(tx.Path("open.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("open.json: %v %v", fi, err)
	}
	entries, _ := os.ReadDir(tx.Dir())
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWriteRead(t *testing.T) {
	tx := newTx(t)
	for i := range 2 {
		if err := tx.Write("state.json", record{"x", i}); err != nil {
			t.Fatal(err)
		}
		var got record
		if err := tx.Read("state.json", &got); err != nil {
			t.Fatal(err)
		}
		if got.N != i {
			t.Fatalf("read %+v after writing n=%d", got, i)
		}
	}
	fi, err := os.Stat(tx.Path("state.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state.json: %v %v", fi, err)
	}
	os.Mkdir(tx.Path("sub"), 0o700)
	if err := tx.Write("sub/a.json", 7); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.Read("sub/a.json", &n); err != nil || n != 7 {
		t.Fatalf("sub/a.json: %d %v", n, err)
	}
	err = tx.Read("missing.json", &n)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read(missing) = %v, want fs.ErrNotExist", err)
	}
	for _, name := range []string{"../x", "/etc/passwd", ".", ""} {
		if err := tx.Write(name, 1); err == nil {
			t.Fatalf("Write(%q) accepted a name outside the tx dir", name)
		}
	}
}

func TestReadCorrupt(t *testing.T) {
	tests := map[string]string{
		"empty":     "",
		"truncated": `{"name": "x", "n"`,
		"trailing":  `{"name": "x"} {"name": "y"}`,
		"wrongtype": `{"n": "seven"}`,
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			tx := newTx(t)
			path := tx.Path("r.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			var r record
			err := tx.Read("r.json", &r)
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("Read = %v, want *CorruptError naming %s", err, path)
			}
			if !strings.Contains(err.Error(), "corrupt state file "+path) || !strings.Contains(err.Error(), "cannot be trusted") {
				t.Fatalf("message: %v", err)
			}
		})
	}
}

func TestUnsafeStateFiles(t *testing.T) {
	t.Run("symlinked events log", func(t *testing.T) {
		tx := newTx(t)
		target := filepath.Join(t.TempDir(), "elsewhere.jsonl")
		os.WriteFile(target, []byte(`{"time":"2026-01-01T00:00:00Z","event":"x"}`+"\n"), 0o600)
		path := tx.Path(EventsFile)
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		_, err := tx.Events()
		wantUnsafe(t, err, path)
		wantUnsafe(t, tx.Append(Event{Event: "opened"}), path)
		if data, _ := os.ReadFile(target); strings.Count(string(data), "\n") != 1 {
			t.Fatalf("Append wrote through the symlink: %q", data)
		}
	})
	t.Run("fifo open record", func(t *testing.T) {
		tx := newTx(t)
		path := tx.Path("open.json")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			var r record
			done <- tx.Read("open.json", &r)
		}()
		select {
		case err := <-done:
			wantUnsafe(t, err, path)
			if !strings.Contains(err.Error(), "FIFO") {
				t.Fatalf("message should say what it is: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Read blocked on a FIFO")
		}
	})
	t.Run("world writable file", func(t *testing.T) {
		tx := newTx(t)
		path := tx.Path("r.json")
		os.WriteFile(path, []byte("{}"), 0o600)
		os.Chmod(path, 0o666)
		var r record
		wantUnsafe(t, tx.Read("r.json", &r), path)
	})
	t.Run("directory where a file belongs", func(t *testing.T) {
		tx := newTx(t)
		path := tx.Path("r.json")
		os.Mkdir(path, 0o700)
		var r record
		wantUnsafe(t, tx.Read("r.json", &r), path)
	})
	t.Run("symlinked subdirectory", func(t *testing.T) {
		tx := newTx(t)
		elsewhere := t.TempDir()
		os.WriteFile(filepath.Join(elsewhere, "a.json"), []byte("1"), 0o600)
		sub := tx.Path("sub")
		os.Symlink(elsewhere, sub)
		var n int
		wantUnsafe(t, tx.Read("sub/a.json", &n), sub)
		wantUnsafe(t, tx.Write("sub/b.json", 2), sub)
		if _, err := os.Lstat(filepath.Join(elsewhere, "b.json")); err == nil {
			t.Fatal("Write went through a symlinked directory")
		}
	})
	t.Run("foreign owner", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("needs root to chown")
		}
		tx := newTx(t)
		path := tx.Path("r.json")
		os.WriteFile(path, []byte("{}"), 0o600)
		if err := os.Chown(path, 4321, 4321); err != nil {
			t.Fatal(err)
		}
		var r record
		wantUnsafe(t, tx.Read("r.json", &r), path)
	})
}

func TestEvents(t *testing.T) {
	tx := newTx(t)
	evs, err := tx.Events()
	if err != nil || len(evs) != 0 {
		t.Fatalf("events of a new tx: %v %v", evs, err)
	}
	when := time.Date(2026, 11, 29, 19, 2, 33, 0, time.UTC)
	if err := tx.Append(Event{Time: when, Event: "opened", Detail: map[string]any{"path": "a\nb"}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Append(Event{Event: "committed"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Append(Event{}); err == nil {
		t.Fatal("Append accepted an event without a name")
	}
	evs, err = tx.Events()
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || !evs[0].Time.Equal(when) || evs[0].Event != "opened" || evs[0].Detail["path"] != "a\nb" ||
		evs[1].Event != "committed" || evs[1].Time.IsZero() {
		t.Fatalf("events: %+v", evs)
	}
	fi, err := os.Stat(tx.Path(EventsFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("events file: %v %v", fi, err)
	}
}

func TestEventsCorrupt(t *testing.T) {
	good := `{"time":"2026-01-01T00:00:00Z","event":"opened"}` + "\n"
	tests := []struct {
		name, content string
		line          int
	}{
		{"truncated last line", good + `{"time":"2026-01-01T00:00:00Z","ev`, 2},
		{"complete json without newline", good + good[:len(good)-1], 2},
		{"garbage", good + good + "not json\n", 3},
		{"blank line", good + "\n" + good, 2},
		{"no event name", `{"time":"2026-01-01T00:00:00Z"}` + "\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx := newTx(t)
			path := tx.Path(EventsFile)
			os.WriteFile(path, []byte(tt.content), 0o600)
			_, err := tx.Events()
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != path || ce.Line != tt.line {
				t.Fatalf("Events = %v, want *CorruptError at %s line %d", err, path, tt.line)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%s line %d", path, tt.line)) {
				t.Fatalf("message should name file and line: %v", err)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	tx := newTx(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "keep"), []byte("k"), 0o600)
	staged := tx.Path("staged")
	os.MkdirAll(filepath.Join(staged, "a", "b"), 0o700)
	os.WriteFile(filepath.Join(staged, "a", "b", "f"), []byte("x"), 0o400)
	os.Symlink(outside, filepath.Join(staged, "link"))
	os.Chmod(filepath.Join(staged, "a", "b"), 0o500)
	os.Chmod(filepath.Join(staged, "a"), 0o500)
	if err := tx.WriteOnce("open.json", 1); err != nil {
		t.Fatal(err)
	}
	if err := tx.Remove("staged"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(staged); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("staged still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Fatalf("Remove followed a symlink: %v", err)
	}
	if _, err := os.Stat(tx.Path("open.json")); err != nil {
		t.Fatalf("Remove took more than asked: %v", err)
	}
	if err := tx.Remove("staged"); err != nil {
		t.Fatalf("removing a missing name: %v", err)
	}
	if err := tx.Remove(".."); err == nil {
		t.Fatal("Remove accepted a name outside the tx dir")
	}
}
