package git

import "testing"

func TestVersionNumber(t *testing.T) {
	tests := []struct {
		in           string
		major, minor int
		ok           bool
	}{
		{"git version 2.39.5", 2, 39, true},
		{"git version 2.39.3 (Apple Git-146)", 2, 39, true},
		{"git version 2.17.0.windows.1", 2, 17, true},
		{"git version 3", 0, 0, false},
		{"hg version 2.1", 0, 0, false},
	}
	for _, tt := range tests {
		major, minor, ok := Version{Text: tt.in}.Number()
		if major != tt.major || minor != tt.minor || ok != tt.ok {
			t.Errorf("Version{%q}.Number() = %d, %d, %v", tt.in, major, minor, ok)
		}
	}
}
