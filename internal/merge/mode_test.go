package merge

import (
	"io/fs"
	"testing"
)

func TestMode(t *testing.T) {
	const (
		rw   fs.FileMode = 0o644
		rwx  fs.FileMode = 0o755
		ro   fs.FileMode = 0o444
		priv fs.FileMode = 0o600
	)
	tests := []struct {
		name                   string
		ancestor, ours, theirs fs.FileMode
		want                   fs.FileMode
		wantOK                 bool
	}{
		{"nobody changed it", rw, rw, rw, rw, true},
		{"only ours changed it", rw, rwx, rw, rwx, true},
		{"only theirs changed it", rw, rw, rwx, rwx, true},
		{"both changed it alike", rw, rwx, rwx, rwx, true},
		{"both changed it differently", rw, rwx, ro, 0, false},
		{"both changed it differently, one back to a common value", rwx, rw, priv, 0, false},
		{"setuid kept with the change", rwx, rwx | fs.ModeSetuid, rwx, rwx | fs.ModeSetuid, true},
		{"sticky against chmod", rwx, rwx | fs.ModeSticky, rw, 0, false},
		{"a type change is no permission change", rw, rw, fs.ModeSymlink | 0o777, 0, false},
		{"types differ even when perms agree", fs.ModeDir | rwx, rwx, rwx, 0, false},
		{"directories merge their permissions", fs.ModeDir | rwx, fs.ModeDir | priv, fs.ModeDir | rwx, fs.ModeDir | priv, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Mode(tt.ancestor, tt.ours, tt.theirs)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Mode(%v, %v, %v) = %v, %v; want %v, %v", tt.ancestor, tt.ours, tt.theirs, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
