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

// TestStatus: a status is drawn at once, in place of the one before; a
// task too young to draw leaves it up, and it comes back when a task that
// drew ends; a status already up is not drawn again (a task's begin and
// end redraw it); Status "" and Close erase it; a disabled meter (--quiet)
// draws none. The meter's loop is not started by a status alone, so what
// was written is exactly what these calls wrote.
func TestStatus(t *testing.T) {
	const clear = "\r\x1b[K"
	t.Run("drawn, replaced, erased", func(t *testing.T) {
		var out syncBuffer
		m := &Terminal{W: &out}
		ctx := With(context.Background(), m)
		Status(ctx, "staging .")
		Status(ctx, "committing")
		Status(ctx, "committing") // already up: not drawn again
		Status(ctx, "")
		want := clear + "airlock: staging ." + clear + "airlock: committing" + clear
		if got := out.String(); got != want {
			t.Errorf("wrote %q, want %q", got, want)
		}
		m.Close()
		if got := out.String(); got != want {
			t.Errorf("Close wrote %q after an erased status", strings.TrimPrefix(got, want))
		}
	})
	t.Run("a task keeps it up until it draws", func(t *testing.T) {
		var out syncBuffer
		m := &Terminal{W: &out, Delay: time.Hour, Every: time.Hour}
		ctx := With(context.Background(), m)
		Status(ctx, "staging .")
		task := Start(ctx, "staging", 10, 0)
		m.draw() // too young: nothing
		task.Done()
		m.Close()
		s := out.String()
		if s != clear+"airlock: staging ."+clear {
			t.Errorf("the status was not up until Close erased it: %q", s)
		}
		if strings.Contains(s, "files") {
			t.Errorf("a task younger than Delay drew: %q", s)
		}
	})
	t.Run("back after a task that drew", func(t *testing.T) {
		var out syncBuffer
		m := &Terminal{W: &out, Delay: time.Minute, Every: time.Hour}
		ctx := With(context.Background(), m)
		Status(ctx, "committing")
		task := Start(ctx, "freezing", 10, 0)
		m.mu.Lock()
		task.started = task.started.Add(-2 * time.Minute)
		m.mu.Unlock()
		m.draw()
		Status(ctx, "validating") // under the task's line: not drawn yet
		if s := out.String(); strings.Contains(s, "validating") || !strings.HasSuffix(s, "airlock: freezing 0/10 files, 120s") {
			t.Fatalf("the task's line did not hold the terminal: %q", s)
		}
		task.Done()
		if s := out.String(); !strings.HasSuffix(s, "files, 120s"+clear+"airlock: validating") {
			t.Errorf("the status did not come back when the task ended: %q", s)
		}
		m.Close()
	})
	t.Run("disabled", func(t *testing.T) {
		var out syncBuffer
		m := &Terminal{W: &out}
		m.Disable()
		Status(With(context.Background(), m), "staging .")
		m.Close()
		if s := out.String(); s != "" {
			t.Errorf("a disabled meter wrote %q", s)
		}
	})
	t.Run("no meter", func(t *testing.T) {
		Status(context.Background(), "staging .") // says nothing, does not panic
	})
}
