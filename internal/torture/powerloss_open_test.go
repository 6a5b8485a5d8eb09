package torture

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestPowerLossOrderOpen records the system calls of an open with strace
// and holds their order to what survives a power cut, now that the open
// syncs the transaction's directory once before its record and once
// after, not once per file: every state file is fsync'd before its name
// appears; the files the open record depends on are named durably (their
// directory fsync'd) before the record is published; and the record, the
// event log and the port file are named durably before open prints the
// transaction. txindex.json, a cache sealed by a digest, is the one file
// renamed into place unsynced.
func TestPowerLossOrderOpen(t *testing.T) {
	needStrace(t)
	w := newWorld(t)
	powerLossTrees(t, w)
	tr := filepath.Join(w.root, "open.trace")
	r := testbin.Run(t, straceCmd(w, tr, nil, "open", "--workdir", w.base, "--id", "o1"))
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "o1\n") {
		t.Fatalf("traced open: %v", r)
	}
	tl := parseTrace(t, tr)
	tx := w.txDir("o1")
	// Where each state file got its name (rename, or link for write-once
	// records), and where open printed the transaction.
	named := map[string]int{}
	for _, ev := range tl.events {
		switch {
		case strings.HasPrefix(ev.name, "rename") && ev.ok:
			named[ev.dst] = ev.i
		case ev.name == "linkat" && ev.ok && len(ev.args) > 3:
			named[join(fdPath(ev.args[2]), unquote(ev.args[3]))] = ev.i
		}
	}
	printed := -1
	for _, ev := range tl.events {
		if ev.name == "write" && len(ev.args) > 1 && strings.HasPrefix(ev.args[0], "1") && strings.Contains(ev.args[1], "o1") {
			printed = ev.i
			break
		}
	}
	if printed < 0 {
		t.Fatal("the trace holds no write of the transaction id to stdout")
	}
	record, ok := named[filepath.Join(tx, "open.json")]
	if !ok {
		t.Fatal("the trace holds no link of the open record")
	}
	for _, name := range []string{"base.manifest.json", "staged.manifest.json", "base.links.json"} {
		p := filepath.Join(tx, name)
		at, ok := named[p]
		if !ok {
			t.Errorf("%s was not renamed into place", name)
			continue
		}
		if at > record || tl.fsyncedAfter(tx, at, record) < 0 {
			t.Errorf("%s (named at call %d) was not durable (its directory fsync'd) before the open record was published (call %d)", name, at, record)
		}
	}
	for _, name := range []string{"open.json", "port"} {
		at := named[filepath.Join(tx, name)]
		if tl.fsyncedAfter(tx, max(at, record), printed) < 0 {
			t.Errorf("%s's name was not durable (the directory fsync'd after call %d) before open printed the transaction (call %d)", name, max(at, record), printed)
		}
	}
	if tl.fsyncedAfter(filepath.Join(tx, "events.jsonl"), record, printed) < 0 {
		t.Errorf("the opened event was not fsync'd before open printed the transaction")
	}
	// No file but the index is renamed into place before its bytes are
	// fsync'd (checkRenamedSynced, with the index left out).
	var kept []sysEvent
	for _, ev := range tl.events {
		if !strings.Contains(ev.path, ".txindex.json.tmp-") {
			kept = append(kept, ev)
		}
	}
	for i := range kept {
		kept[i].i = i
	}
	n := (&traceLog{events: kept, fds: tl.fds}).checkRenamedSynced(t)
	t.Logf("%d system calls traced, %d renames of new files checked", len(tl.events), n)
}
