//go:build !linux

package airlock

// baseView finds nothing where airlock has no same-path mode: the base is
// always seen at its own path.
func baseView(*Tx) (string, bool) { return "", false }
