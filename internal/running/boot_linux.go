package running

import (
	"os"
	"strings"
)

// bootID names this boot: no process of an earlier one is left.
func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b)), err
}
