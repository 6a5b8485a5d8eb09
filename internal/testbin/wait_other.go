//go:build !linux

package testbin

import "time"

func waitFile(path string, deadline time.Time, stop <-chan struct{}) error {
	return pollFile(path, deadline, stop)
}
