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

func TestTerminal(t *testing.T) {
	tests := []struct {
		name     string
		run      time.Duration
		disabled bool
		want     bool
	}{
		{"long task draws", 150 * time.Millisecond, false, true},
		{"short task draws nothing", 0, false, false},
		{"disabled draws nothing", 150 * time.Millisecond, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			m := &Terminal{W: &out, Delay: 50 * time.Millisecond, Every: 10 * time.Millisecond}
			if tt.disabled {
				m.Disable()
			}
			ctx := With(context.Background(), m)
			task := Start(ctx, "staging", 2000, 40<<20)
			task.Add(1234, 12<<20)
			time.Sleep(tt.run)
			task.Done()
			m.Close()
			s := out.String()
			if got := strings.Contains(s, "airlock: staging 1,234/2,000 files, 12 MB/40 MB"); got != tt.want {
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
