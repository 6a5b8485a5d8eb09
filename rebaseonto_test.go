package airlock

import "testing"

func TestHasMarkers(t *testing.T) {
	for _, tc := range []struct {
		content string
		want    bool
	}{
		{"a\n<<<<<<< transaction t1\nb\n", true},
		{"a\n|||||||\nb\n", true},
		{">>>>>>> base now\r\n", true},
		{">>>>>>>", true},
		{"a\n=======\nb\n", false}, // a heading's underline
		{"<<<<<<<<\n", false},      // eight: not a marker
		{"x <<<<<<< y\n", false},
		{"<<<<<<<x\n", false},
		{"", false},
	} {
		if got := hasMarkers([]byte(tc.content)); got != tc.want {
			t.Errorf("hasMarkers(%q) = %v, want %v", tc.content, got, tc.want)
		}
	}
}
