package progress

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the meter's drawing goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTerminal: a task draws once it has run for Delay, not before, and
// not at all when the meter is disabled. How long the task has run is set,
// not slept: a task that ran for 2*Delay is one started that long ago, and
// a fresh one has run for far less than a Delay of a minute, however busy
// the machine.
func TestTerminal(t *testing.T) {
	const delay = time.Minute
	line := "airlock: staging 1,234/2,000 files, 12 MB/40 MB"
	tests := []struct {
		name     string
		ran      time.Duration
		disabled bool
		want     bool
	}{
		{"long task draws", 2 * delay, false, true},
		{"short task draws nothing", 0, false, false},
		{"disabled draws nothing", 2 * delay, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			m := &Terminal{W: &out, Delay: delay, Every: 10 * time.Millisecond}
			if tt.disabled {
				m.Disable()
			}
			ctx := With(context.Background(), m)
			task := Start(ctx, "staging", 2000, 40<<20)
			m.mu.Lock() // the redraw loop reads the task under it
			task.started = task.started.Add(-tt.ran)
			m.mu.Unlock()
			task.Add(1234, 12<<20)
			if tt.want {
				// The redraw loop draws at its next tick.
				for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), line) && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
			} else {
				m.draw() // a tick, whether or not the loop runs
			}
			task.Done()
			m.Close()
			s := out.String()
			if got := strings.Contains(s, line); got != tt.want {
				t.Fatalf("drew %q; want a progress line: %v", s, tt.want)
			}
			if tt.want && !strings.HasSuffix(s, "\r\x1b[K") {
				t.Errorf("the line was not erased when the task ended: %q", s)
			}
		})
	}
}

func TestNoMeter(t *testing.T) {
	task := Start(context.Background(), "staging", 1, 1)
	if task != nil {
		t.Fatal("Start without a meter returned a task")
	}
	task.Add(1, 1) // a nil task is usable
	task.Done()
}

func TestLine(t *testing.T) {
	if got := Line("committing", 3, 10, 0, 0, 2500*time.Millisecond); got != "committing 3/10 files, 2s" {
		t.Errorf("Line = %q", got)
	}
	if got := Line("staging", 1234567, 2000000, 5<<30, 20<<30, 0); got != "staging 1,234,567/2,000,000 files, 5120 MB/20 GB, 0s" {
		t.Errorf("Line = %q", got)
	}
}
