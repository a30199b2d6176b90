package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeShowsThisExample keeps the README's example the code that
// go test compiles and runs: each Go block of README.md is one file of
// this directory (main.go without its package comment, main_test.go), and
// the describe output it shows is this topology's.
func TestReadmeShowsThisExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, name := range []string{"main.go", "main_test.go"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = withoutPackageComment(string(b))
	}
	shown := map[string]int{}
	for i, m := range regexp.MustCompile("(?s)\n```go\n(.*?)```\n").FindAllStringSubmatch(string(readme), -1) {
		name := ""
		for n, src := range files {
			if m[1] == src {
				name = n
			}
		}
		if name == "" {
			t.Errorf("README.md's Go block %d is no file of examples/quickstart:\n%s", i+1, m[1])
			continue
		}
		shown[name]++
	}
	for name := range files {
		if shown[name] != 1 {
			t.Errorf("README.md shows examples/quickstart/%s %d times, want once", name, shown[name])
		}
	}

	console := regexp.MustCompile("(?s)\n\\$ quickstart describe\n(.*?)\n\\$ ").FindStringSubmatch(string(readme))
	if console == nil {
		t.Fatal("README.md shows no quickstart describe")
	}
	if want := strings.TrimRight(BigOrders().Describe(), "\n"); console[1] != want {
		t.Errorf("README.md's quickstart describe shows\n%s\nthe topology describes itself as\n%s", console[1], want)
	}
}

// withoutPackageComment drops the comment lines before the package clause.
func withoutPackageComment(src string) string {
	for strings.HasPrefix(src, "//") {
		_, src, _ = strings.Cut(src, "\n")
	}
	return src
}
