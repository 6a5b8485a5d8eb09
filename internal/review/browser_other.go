//go:build !darwin

package review

import "os"

// opener is the command that opens a URL in the default browser: on a
// desktop session xdg-open; without a display there is no browser to open.
func opener() (string, bool) {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return "", false
	}
	return "xdg-open", true
}
