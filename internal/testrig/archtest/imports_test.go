package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path every rule's packages are relative to.
const module = "github.com/onceflow/onceflow"

// forbid says: no package matching from depends on a package matching any
// of never, directly or through other packages.
type forbid struct {
	from   []string
	never  []string
	reason string
}

// onlyDirect says: a package may import target directly only if it matches
// one of allowed.
type onlyDirect struct {
	target  string
	allowed []string
	reason  string
}

// publicPackages are the packages a user imports. sinks does not exist yet;
// the rule holds for it from its first commit.
var publicPackages = []string{"topology/...", "serde/...", "processor/...", "statestore/...", "sinks/...", "app/..."}

var forbidden = []forbid{
	{
		from:   []string{"topology/..."},
		never:  []string{"processor/...", "internal/engine/...", "internal/kafka/...", "github.com/IBM/sarama/..."},
		reason: "the runtime imports the topology, never the reverse; a topology is built and tested without a broker",
	},
	{
		from:   []string{"internal/kafka/..."},
		never:  append([]string{"internal/graph/...", "internal/taskstate/...", "internal/engine/..."}, publicPackages...),
		reason: "the Kafka seam moves bytes and headers (internal/wire); it does not know the graph or the state",
	},
	{
		from:   []string{"internal/kafka/..."},
		never:  []string{"internal/tooling/clientcfg/..."},
		reason: "the replica sets up its own clients; the tooling's clients check it from the outside and share none of its code",
	},
	{
		from:   publicPackages,
		never:  []string{"benchmarks/...", "cmd/..."},
		reason: "what a user imports must not drag in the benchmark harness or the CLI",
	},
}

// runtimePackages are what a replica links: the public packages but app
// (whose command line offers the tooling's verify) and the runtime's
// internal packages.
var runtimePackages = []string{"topology/...", "serde/...", "processor/...", "statestore/...", "sinks/...",
	"internal/engine/...", "internal/kafka/...", "internal/graph/...", "internal/taskstate/...", "internal/wire/...",
	"internal/sinkrunner/...", "internal/statedir/...", "internal/version/..."}

// forbiddenInCode are rules over a package's code alone: its tests may use
// what its code must not.
var forbiddenInCode = []forbid{
	{
		from:   runtimePackages,
		never:  []string{"internal/tooling/...", "internal/testrig/..."},
		reason: "the runtime never links the tooling, which checks it from the outside, or the test rigs",
	},
}

var direct = []onlyDirect{
	{
		target: "github.com/IBM/sarama/...",
		// benchmarks/peers/sarama is the bare sarama copy loop the benchmark
		// measures as the client's floor: importing sarama is its purpose.
		allowed: []string{"internal/kafka/...", "benchmarks/peers/sarama"},
		reason:  "the engine reaches Kafka only through the internal/kafka seam",
	},
}

// TestImportRules checks every rule against the module's packages, tests
// included, as `go list` sees them with the kafka build tag.
func TestImportRules(t *testing.T) {
	pkgs := load(t)
	for _, r := range forbidden {
		matched := 0
		for _, p := range slices.Sorted(maps.Keys(pkgs)) {
			if !matchAny(p, r.from) {
				continue
			}
			matched++
			for _, never := range r.never {
				// One report per forbidden pattern: the package itself
				// sorts before its subpackages.
				i := slices.IndexFunc(pkgs[p].deps, func(dep string) bool { return match(dep, never) })
				if i >= 0 {
					dep := pkgs[p].deps[i]
					t.Errorf("%s imports %s%s: %s", rel(p), rel(dep), via(pkgs, p, dep), r.reason)
				}
			}
		}
		if matched == 0 {
			t.Errorf("no package matches %v: the rule checks nothing", r.from)
		}
	}
	for _, r := range forbiddenInCode {
		matched := 0
		for _, p := range slices.Sorted(maps.Keys(pkgs)) {
			if !matchAny(p, r.from) {
				continue
			}
			matched++
			for _, never := range r.never {
				if i := slices.IndexFunc(pkgs[p].codeDeps, func(dep string) bool { return match(dep, never) }); i >= 0 {
					t.Errorf("%s's code imports %s: %s", rel(p), rel(pkgs[p].codeDeps[i]), r.reason)
				}
			}
		}
		if matched == 0 {
			t.Errorf("no package matches %v: the rule checks nothing", r.from)
		}
	}
	for _, r := range direct {
		importers := 0
		for _, p := range slices.Sorted(maps.Keys(pkgs)) {
			if !slices.ContainsFunc(pkgs[p].imports, func(i string) bool { return match(i, r.target) }) {
				continue
			}
			importers++
			if !matchAny(p, r.allowed) {
				t.Errorf("%s imports %s directly: %s", rel(p), r.target, r.reason)
			}
		}
		if importers == 0 {
			t.Errorf("no package imports %s: the rule checks nothing", r.target)
		}
	}
}

// userPrograms are programs written as a user would, on the public API
// only: of the module, they and their tests import public packages alone.
var userPrograms = []string{"examples/mergecount", "examples/quickstart"}

// TestUserProgramsUsePublicAPI: what a user program proves (replicas
// count a merge exactly) is proven for users only if it reaches no
// internal package.
func TestUserProgramsUsePublicAPI(t *testing.T) {
	pkgs := load(t)
	for _, prog := range userPrograms {
		p, ok := pkgs[module+"/"+prog]
		if !ok {
			t.Errorf("%s is not a package of the module", prog)
			continue
		}
		for _, imp := range p.imports {
			if match(imp, module+"/...") && !matchAny(imp, publicPackages) {
				t.Errorf("%s imports %s: a user program imports public packages only", prog, rel(imp))
			}
		}
	}
}

// pkg is what the rules need of one package: its direct imports and all it
// depends on, each over its code and its tests together.
type pkg struct {
	imports []string
	deps    []string
	// codeDeps is all the package's code alone depends on.
	codeDeps []string
}

// listed is one entry of `go list -json`.
type listed struct {
	ImportPath string
	ForTest    string
	Imports    []string
	Deps       []string
}

// load lists the module's packages with their test variants and merges each
// package's variants into one pkg.
func load(t *testing.T) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "kafka", "-deps", "-test", "-json=ImportPath,ForTest,Imports,Deps", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l listed
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		owner, ok := ownerOf(l)
		if !ok {
			continue
		}
		p := pkgs[owner]
		if p == nil {
			p = &pkg{}
			pkgs[owner] = p
		}
		p.imports = union(p.imports, l.Imports)
		p.deps = union(p.deps, l.Deps)
		if l.ForTest == "" {
			p.codeDeps = l.Deps
		}
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages of %s: is the test run inside the module?", len(pkgs), module)
	}
	return pkgs
}

// ownerOf says which of the module's packages a listed entry belongs to: the
// package itself, or its internal or external test variant. Test mains and
// dependencies (the module's own are listed by themselves) belong to none.
func ownerOf(l listed) (string, bool) {
	name := strip(l.ImportPath)
	if l.ForTest != "" {
		if name != l.ForTest && name != l.ForTest+"_test" {
			return "", false
		}
		name = l.ForTest
	}
	if strings.HasSuffix(name, ".test") || !match(name, module+"/...") {
		return "", false
	}
	return name, true
}

// strip removes the " [p.test]" suffix go list gives a package built for a
// test.
func strip(path string) string {
	if i := strings.Index(path, " ["); i >= 0 {
		return path[:i]
	}
	return path
}

// union adds paths (stripped) to set, keeping it sorted and unique.
func union(set, paths []string) []string {
	for _, p := range paths {
		set = append(set, strip(p))
	}
	slices.Sort(set)
	return slices.Compact(set)
}

// match reports whether path matches pattern: a path, or a path ending in
// "/..." for it and everything under it. Patterns without a dot in their
// first element are relative to the module.
func match(path, pattern string) bool {
	if first, _, _ := strings.Cut(pattern, "/"); !strings.Contains(first, ".") {
		pattern = module + "/" + pattern
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchAny(path string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(path, p) })
}

// via names the module's packages p imports directly through which it
// reaches dep, when it does not import dep itself: the imports to look at.
func via(pkgs map[string]*pkg, p, dep string) string {
	if slices.Contains(pkgs[p].imports, dep) {
		return ""
	}
	var through []string
	for _, i := range pkgs[p].imports {
		if q := pkgs[i]; i != p && q != nil && slices.Contains(q.deps, dep) {
			through = append(through, rel(i))
		}
	}
	return " (through " + strings.Join(through, ", ") + ")"
}

func rel(path string) string {
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return path
}
