package testbin

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestBlockIsStrict(t *testing.T) {
	for _, tt := range []struct {
		name, stderr string
		want         map[string]string
		err          string
	}{
		{"none", "airlock: note\n", nil, ""},
		{"block", "x\nairlock.tx=a\nairlock.outcome=committed\n", map[string]string{"tx": "a", "outcome": "committed"}, ""},
		{"no '='", "airlock.tx=a\nairlock.outcome\n", map[string]string{"tx": "a"}, "without '='"},
		{"twice", "airlock.tx=a\nairlock.tx=b\n", map[string]string{"tx": "b"}, `"tx" appears twice`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Result{Stderr: tt.stderr}.Block()
			if (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %v, want one saying %q", err, tt.err)
			}
			if len(got) != len(tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("block %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("block %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestRunReportsCodeSignalAndOutput(t *testing.T) {
	r := Run(t, Cmd{Bin: "sh", Args: []string{"-c", "cat; echo err >&2; exit 3"}, Stdin: "in\n"})
	if r.Code != 3 || r.Stdout != "in\n" || r.Stderr != "err\n" || r.Args[0] != "sh" {
		t.Errorf("got %v", r)
	}
	p := Start(t, Cmd{Bin: "sleep", Args: []string{"30"}})
	if p.Ended() {
		t.Fatal("sleep ended at once")
	}
	p.Signal(syscall.SIGKILL)
	if r := p.Wait(); r.Code != -1 || r.Signal != syscall.SIGKILL || !p.Ended() {
		t.Errorf("killed: %v", r)
	}
}

func TestAHangFailsTheTest(t *testing.T) {
	s := stop(func(tb testing.TB) {
		Run(tb, Cmd{Bin: "sleep", Args: []string{"30"}, Timeout: 100 * time.Millisecond})
	})
	if !strings.Contains(s.failed, "did not end within 100ms") {
		t.Errorf("a hang was not a failure: %q", s.failed)
	}
}
