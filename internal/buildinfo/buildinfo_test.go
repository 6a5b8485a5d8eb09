package buildinfo

import (
	"runtime/debug"
	"testing"
	"time"
)

func TestFromBuildInfo(t *testing.T) {
	base := Info{Version: devel, Go: "go0", Platform: "os/arch"}
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want Info
	}{
		{"devel without vcs", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: devel}},
			Info{Version: devel, Go: "go1.26.0", Platform: "os/arch"}},
		{"go install of a release", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}},
			Info{Version: "v1.2.3", Go: "go1.26.0", Platform: "os/arch"}},
		{"checkout with changes", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20260301120000-0123456789ab+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-03-01T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			Info{Version: "v0.0.0-20260301120000-0123456789ab+dirty", Commit: "0123456789abcdef", CommitTime: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Dirty: true, Go: "go1.26.0", Platform: "os/arch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fromBuildInfo(&tt.bi, base); got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	for _, tt := range []struct {
		in   Info
		want string
	}{
		{Info{Version: devel, Go: "go1.26.0", Platform: "linux/amd64"}, "airlock (devel) (go1.26.0 linux/amd64)"},
		{Info{Version: "v1.2.3", Commit: "0123456789abcdef", Go: "go1.26.0", Platform: "darwin/arm64"}, "airlock v1.2.3 (commit 0123456789ab; go1.26.0 darwin/arm64)"},
		{Info{Version: "v1.2.3", Commit: "0123456789abcdef", Dirty: true, Go: "go1.26.0", Platform: "linux/arm64"}, "airlock v1.2.3 (commit 0123456789ab, dirty; go1.26.0 linux/arm64)"},
	} {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.in, got, tt.want)
		}
	}
}
