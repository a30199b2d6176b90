// Package version describes the running binary: its module version and
// the commit it was built from, for `onceflow --version`.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// String describes the running binary (see Format).
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "onceflow (unknown: no build information)"
	}
	return Format(info)
}

// Format describes a build: "onceflow <module version> (commit <revision>
// [modified] <commit time>) <go version>". A build from a checkout has
// module version "(devel)"; the commit part is there when the go command
// stamped VCS information (go build in a git checkout; not go run or go
// test).
func Format(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "onceflow %s", v)
	if rev != "" {
		parts := []string{"commit " + rev}
		if modified {
			parts = append(parts, "modified")
		}
		if when != "" {
			parts = append(parts, when)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	if info.GoVersion != "" {
		fmt.Fprintf(&b, " %s", info.GoVersion)
	}
	return b.String()
}

// Module returns onceflow's module version and, when the running binary
// was built from a checkout of onceflow itself with VCS stamping, its
// commit ("" when unknown). In a program that imports onceflow as a
// library, the version is the one its go.mod requires.
func Module() (version, revision string) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown", ""
	}
	return module(info)
}

func module(info *debug.BuildInfo) (version, revision string) {
	const path = "github.com/onceflow/onceflow"
	if info.Main.Path == path {
		version = info.Main.Version
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	for _, d := range info.Deps {
		if d.Path == path {
			version = d.Version
		}
	}
	if version == "" {
		version = "(devel)"
	}
	return version, revision
}
