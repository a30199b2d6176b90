package version_test

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/version"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"a checkout with local changes", debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "4da6e0b1c2"}, {Key: "vcs.time", Value: "2025-06-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		}}, "onceflow (devel) (commit 4da6e0b1c2, modified, 2025-06-01T10:00:00Z) go1.25.1"},
		{"a clean checkout", debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4da6e0b1c2"}, {Key: "vcs.modified", Value: "false"},
		}}, "onceflow (devel) (commit 4da6e0b1c2) go1.25.1"},
		{"go install of a release", debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Version: "v0.3.0"}},
			"onceflow v0.3.0 go1.25.1"},
		{"no version at all (a test binary)", debug.BuildInfo{}, "onceflow (devel)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := version.Format(&tc.info); got != tc.want {
				t.Errorf("Format = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	if got := version.String(); !strings.HasPrefix(got, "onceflow ") {
		t.Errorf("String = %q, want it to start with \"onceflow \"", got)
	}
}
