package review

import (
	"os/exec"
)

// OpenBrowser tries to show url in the user's browser and reports whether
// it started one. A machine without a browser is not an error: the URL is
// printed anyway.
func OpenBrowser(url string) bool {
	name, ok := opener()
	if !ok {
		return false
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return false
	}
	cmd := exec.Command(path, url)
	if err := cmd.Start(); err != nil {
		return false
	}
	go cmd.Wait()
	return true
}
