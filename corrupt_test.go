package airlock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock/internal/state"
)

// TestCorruptErrorIsPublic: a harness tells untrustworthy state from other
// failures with errors.As and airlock's own type, whichever state file is
// bad, and the message is the one airlock always gave.
func TestCorruptErrorIsPublic(t *testing.T) {
	for _, tt := range []struct {
		name, file, content string
		load                bool // the damage shows when the transaction is loaded
	}{
		{"record that does not decode", "open.json", "{", true},
		{"event log that does not decode", state.EventsFile, "not json\n", false},
		{"event log without its opened event", state.EventsFile, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := OpenStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			base := t.TempDir()
			tx, err := s.Open(t.Context(), OpenOptions{Base: base, Backend: "copy"})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(tx.StateDir(), tt.file)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = s.Tx(tx.ID())
			if !tt.load {
				if err != nil {
					t.Fatal(err)
				}
				_, err = tx.Status()
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("err = %v (%T), want a *CorruptError naming %s", err, err, path)
			}
			if ce.Error() != err.Error() {
				t.Errorf("the public error says %q, airlock said %q", ce.Error(), err.Error())
			}
		})
	}
}
