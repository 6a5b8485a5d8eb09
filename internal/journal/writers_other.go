//go:build !linux

package journal

// openWriter finds nothing where the system offers no way to list other
// processes' descriptors without privileges (macOS): the limit docs/reliability.md
// states for a writer that holds a file open across a commit applies
// there unchecked.
func openWriter(ids map[fileID]string, marker string) *BusyError { return nil }
