package state_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/state"
)

// fuzzTx makes a transaction directory in a fresh state root, on a tmpfs
// where there is one (state writes fsync, and the fuzzer makes many).
func fuzzTx(f *testing.F, id string) (*state.Store, *state.Tx) {
	f.Helper()
	dir := f.TempDir()
	if d, err := os.MkdirTemp("/dev/shm", "airlock-fuzz-"); err == nil {
		f.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	st, err := state.Open(filepath.Join(dir, "state"))
	if err != nil {
		f.Fatal(err)
	}
	tx, err := st.Create(id)
	if err != nil {
		f.Fatal(err)
	}
	return st, tx
}

// corrupt checks that err is a *CorruptError naming file.
func corrupt(t *testing.T, err error, file string) {
	t.Helper()
	var ce *state.CorruptError
	if !errors.As(err, &ce) || ce.Path != file || !strings.Contains(err.Error(), file) {
		t.Fatalf("want a CorruptError naming %s, got %v", file, err)
	}
}

// FuzzEvents feeds arbitrary bytes to the event-log decoder: it either
// refuses them with a CorruptError naming the file, or returns events that
// each have a name and a time and that survive being appended again.
func FuzzEvents(f *testing.F) {
	f.Add([]byte(`{"time":"2026-11-29T10:00:00Z","event":"opened","detail":{"entries":3}}` + "\n"))
	f.Add([]byte(`{"time":"2026-11-29T10:00:00Z","event":"opened"}` + "\n" + `{"time":"2026-11-29T10:00:01Z","event":"applying","detail":{"ops":2}}` + "\n"))
	f.Add([]byte(`{"time":"2026-11-29T10:00:00Z","event":"opened"}`))
	f.Add([]byte("\n"))
	f.Add([]byte(`{"event":"committed"}` + "\n"))
	f.Add([]byte{})
	st, tx := fuzzTx(f, "fuzz")
	again, err := st.Create("again")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file := tx.Path(state.EventsFile)
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		evs, err := tx.Events()
		if err != nil {
			corrupt(t, err, file)
			return
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Fatalf("a log without a final newline was accepted: %q", data)
		}
		if n := bytes.Count(data, []byte("\n")); n != len(evs) {
			t.Fatalf("%d lines decoded to %d events", n, len(evs))
		}
		if err := os.Remove(again.Path(state.EventsFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Event == "" || ev.Time.IsZero() {
				t.Fatalf("an event without a name or time was accepted: %+v", ev)
			}
			if err := again.Append(ev); err != nil {
				t.Fatalf("an accepted event cannot be appended again: %v", err)
			}
		}
		evs2, err := again.Events()
		if err != nil || len(evs2) != len(evs) {
			t.Fatalf("re-appended events read back as %d (%v), want %d", len(evs2), err, len(evs))
		}
		for i := range evs {
			if evs[i].Event != evs2[i].Event || !evs[i].Time.Equal(evs2[i].Time) {
				t.Fatalf("event %d changed on the way back: %+v, then %+v", i, evs[i], evs2[i])
			}
		}
	})
}

// FuzzRecord feeds arbitrary bytes to the decoder of JSON records (the open
// record, and every other file read with Tx.Read): a CorruptError naming
// the file, or exactly one JSON value.
func FuzzRecord(f *testing.F) {
	f.Add([]byte(`{"id":"fuzz","base":"/tmp/x","base_device":1,"base_inode":2,"backend":"copy","exclude":[".aider*"],"protect":[".envrc"],"created_at":"2026-11-29T10:00:00Z","pid":1,"port_base":20000}` + "\n"))
	f.Add([]byte(`{"id":"fuzz"} {"id":"again"}`))
	f.Add([]byte(`{"base":{"base64":"/w=="}}`))
	f.Add([]byte(`   `))
	f.Add([]byte(`{"id":`))
	_, tx := fuzzTx(f, "fuzz")
	f.Fuzz(func(t *testing.T, data []byte) {
		file := tx.Path("open.json")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var v any
		err := tx.Read("open.json", &v)
		if err != nil {
			corrupt(t, err, file)
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		var w any
		if dec.Decode(&w) != nil || dec.More() {
			t.Fatalf("Read accepted %q, which is not exactly one JSON value", data)
		}
	})
}

// FuzzMarker feeds arbitrary bytes to the base's in-flight marker and
// head: a marker is accepted only as one line holding a valid transaction
// id (in flight) or one word (head).
func FuzzMarker(f *testing.F) {
	f.Add([]byte("20261129-190233-4f2a\n"))
	f.Add([]byte("sha256:00\n"))
	f.Add([]byte("..\n"))
	f.Add([]byte("a b\n"))
	f.Add([]byte("x"))
	f.Add([]byte("\n"))
	st, _ := fuzzTx(f, "fuzz")
	b, err := st.Base(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"inflight", "head"} {
			if err := os.WriteFile(filepath.Join(b.Dir(), name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		id, ok, err := b.Inflight()
		if err != nil {
			corrupt(t, err, filepath.Join(b.Dir(), "inflight"))
		} else if !ok || string(data) != id+"\n" || state.ValidID(id) != nil {
			t.Fatalf("in-flight marker %q read as %q (ok %v)", data, id, ok)
		}
		head, err := b.Head()
		if err != nil {
			corrupt(t, err, filepath.Join(b.Dir(), "head"))
		} else if string(data) != head+"\n" || strings.ContainsAny(head, " \t\r\n") || head == "" {
			t.Fatalf("head %q read as %q", data, head)
		}
	})
}
