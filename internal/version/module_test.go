package version

import (
	"runtime/debug"
	"testing"
)

func TestModule(t *testing.T) {
	self := &debug.BuildInfo{Main: debug.Module{Path: "github.com/onceflow/onceflow", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}}}
	if v, r := module(self); v != "v0.3.0" || r != "abc123" {
		t.Errorf("module of onceflow itself = %q %q", v, r)
	}
	user := &debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
		Deps: []*debug.Module{{Path: "github.com/onceflow/onceflow", Version: "v0.4.1"}}}
	if v, r := module(user); v != "v0.4.1" || r != "" {
		t.Errorf("module as a dependency = %q %q", v, r)
	}
}
