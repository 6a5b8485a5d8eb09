//go:build !linux

package running

// bootID names this boot where it can be read; here it cannot, and an
// uncontained mark counts in every boot (nothing is pooled here anyway).
func bootID() (string, error) { return "", nil }
