package safefs

// adoptsFd: never on macOS, where a moved file would keep ACLs and flags
// this package does not look at; the caller copies.
func adoptsFd(int) bool { return false }
