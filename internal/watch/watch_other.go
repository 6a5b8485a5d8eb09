//go:build !linux

package watch

import "errors"

// Watch is Linux-only: elsewhere Start fails and the caller walks.
type Watch struct{}

// Changes: see the Linux build.
type Changes struct {
	Paths map[string]bool
	Trees map[string]bool
}

// Start fails: inotify is Linux's.
func Start(root string, dirs []string) (*Watch, error) {
	return nil, errors.New("watching a tree for changes is Linux-only")
}

// Stop is never reached.
func (w *Watch) Stop() (*Changes, error) { return nil, errors.New("no watch") }

// Pause is never reached.
func (w *Watch) Pause() (*Changes, error) { return nil, errors.New("no watch") }

// Hand is never reached.
func (w *Watch) Hand() (int, map[int32]string) { return -1, nil }

// Close does nothing.
func (w *Watch) Close() {}

// Resume fails: inotify is Linux's.
func Resume(root string, fd int, dirs map[int32]string) (*Watch, error) {
	return nil, errors.New("watching a tree for changes is Linux-only")
}
