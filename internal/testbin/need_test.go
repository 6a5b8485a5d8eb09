package testbin

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// stopTB records how a helper stopped or failed a test, in place of a
// real one.
type stopTB struct {
	testing.TB
	mu              sync.Mutex
	skipped, failed string
	cleanups        []func()
}

// Errorf records the failure; any goroutine may call it, as the real one.
func (s *stopTB) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed += fmt.Sprintf(format, args...)
}

func (s *stopTB) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

func (s *stopTB) Helper() {}

// Skip and Fatalf end the calling goroutine, as the real ones do.
func (s *stopTB) Skip(args ...any) {
	s.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}

func (s *stopTB) Fatalf(format string, args ...any) {
	s.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func stop(f func(tb testing.TB)) *stopTB {
	s := &stopTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			for i := len(s.cleanups) - 1; i >= 0; i-- {
				s.cleanups[i]()
			}
		}()
		f(s)
	}()
	<-done
	return s
}

func TestMissingSkipsOutsideCIAndFailsInCI(t *testing.T) {
	for _, tt := range []struct {
		ci       string
		wantFail bool
	}{{"", false}, {"false", false}, {"true", true}, {"1", true}} {
		t.Run("CI="+tt.ci, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			s := stop(func(tb testing.TB) { Require(tb, "airlock-no-such-tool", "the test's reason") })
			got := s.skipped
			if tt.wantFail {
				got = s.failed
			}
			if (s.failed != "") != tt.wantFail || (s.skipped != "") == tt.wantFail {
				t.Fatalf("skipped %q, failed %q; want it to fail: %v", s.skipped, s.failed, tt.wantFail)
			}
			if !strings.Contains(got, "airlock-no-such-tool is not installed (the test's reason)") {
				t.Errorf("message %q does not name the missing tool and the reason", got)
			}
		})
	}
	t.Run("present", func(t *testing.T) {
		t.Setenv("CI", "true")
		var path string
		s := stop(func(tb testing.TB) { path = Require(tb, "sh", "a shell") })
		if s.skipped != "" || s.failed != "" || path == "" {
			t.Errorf("Require(sh) = %q, skipped %q, failed %q; want sh's path", path, s.skipped, s.failed)
		}
	})
}
