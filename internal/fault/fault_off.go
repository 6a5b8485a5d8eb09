//go:build !airlock_faults

package fault

import "context"

// Enabled reports whether this build has live fault points. It is false:
// this build was made without the tag airlock_faults.
const Enabled = false

// Point does nothing in a build without the tag airlock_faults.
func Point(string) {}

// Off is always false in a build without the tag airlock_faults.
func Off(string) bool { return false }

// Count does nothing in a build without the tag airlock_faults.
func Count(string, int) {}

// WhenDone does nothing in a build without the tag airlock_faults.
func WhenDone(context.Context, string) func() bool { return noStop }

func noStop() bool { return false }
