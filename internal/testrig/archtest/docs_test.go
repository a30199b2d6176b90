package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// elsewhere are the folders the architecture document describes as a whole
// rather than package by package.
var elsewhere = []string{"examples/", "benchmarks", "cmd/onceflow"}

// TestArchitectureDocListsEveryPackage keeps docs/architecture.md's package
// layout true: every package of the module is named there (or lies in a
// folder described as a whole), and every package it names exists.
func TestArchitectureDocListsEveryPackage(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := docSection(t, string(doc), "## Package layout")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z][a-z0-9/]*)`").FindAllStringSubmatch(section, -1) {
		named[m[1]] = true
	}

	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	packages := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		packages[rel] = true
		if named[rel] || underAny(rel, elsewhere) {
			continue
		}
		t.Errorf("package %s is not named in docs/architecture.md's package layout", rel)
	}
	for name := range named {
		if !strings.HasPrefix(name, "internal/") && !packages[name] {
			continue // a file, a topic or a type, not a package
		}
		if !packages[name] {
			t.Errorf("docs/architecture.md names package %s, which does not exist", name)
		}
	}
}

// TestDocLinksResolve fails on a relative link in the README or docs/ that
// points at no file of the repository.
func TestDocLinksResolve(t *testing.T) {
	root := repoRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "benchmarks", "README.md"), filepath.Join(root, "benchmarks", "RESULTS.md"))
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
	// Fenced code is not Markdown: a generic call such as
	// registry.Avro[T](ctx, ...) is no link.
	fenced := regexp.MustCompile("(?s)```.*?```")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fenced.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
				rel, _ := filepath.Rel(root, f)
				t.Errorf("%s links to %s, which does not exist", rel, target)
			}
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// docSection returns the text from heading to the next heading of its level.
func docSection(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/architecture.md has no %q section", heading)
	}
	rest := doc[i+len(heading)+2:]
	level := heading[:strings.Index(heading, " ")+1]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func underAny(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if p == strings.TrimSuffix(pre, "/") || strings.HasPrefix(p, strings.TrimSuffix(pre, "/")+"/") {
			return true
		}
	}
	return false
}

// TestReadmeIsAFrontDoor keeps the README short and its first lines the two
// commands a newcomer runs: the rest belongs in docs/.
func TestReadmeIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if n := len(lines); n > 250 {
		t.Errorf("README.md has %d lines; at most 250, the rest in docs/", n)
	}
	head := strings.Join(lines[:min(8, len(lines))], "\n")
	for _, cmd := range []string{"go run ./cmd/onceflow demo", "make test"} {
		if !strings.Contains(head, cmd) {
			t.Errorf("README.md does not start with %q", cmd)
		}
	}
}
