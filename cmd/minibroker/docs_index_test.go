package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// mdLink matches a relative Markdown link target: ](target) or
// ](target#anchor).
var mdLink = regexp.MustCompile(`\]\(([^)#:\s]+)(#[^)]*)?\)`)

// docsIndexProblems lists the documents and pictures in docsDir that the
// index does not link, and the index's links that name no file.
func docsIndexProblems(t *testing.T, docsDir, index string) []string {
	t.Helper()
	entries, err := os.ReadDir(docsDir)
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(index, -1) {
		linked[filepath.Clean(m[1])] = true
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || name == "README.md" || !(strings.HasSuffix(name, ".md") || strings.HasSuffix(name, ".svg")) {
			continue
		}
		if !linked[name] {
			out = append(out, "not linked: "+name)
		}
	}
	for target := range linked {
		if _, err := os.Stat(filepath.Join(docsDir, target)); err != nil {
			out = append(out, "links a missing file: "+target)
		}
	}
	slices.Sort(out)
	return out
}

// TestDocsIndexLinksEveryDocument: docs/README.md is the index of docs/,
// so every document and picture in docs/ is linked from it, and every link
// in it (and every link in the repository's README) names a file that
// exists. A document added without its line, or renamed, fails here.
func TestDocsIndexLinksEveryDocument(t *testing.T) {
	docs := filepath.Join("..", "..", "docs")
	index, err := os.ReadFile(filepath.Join(docs, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range docsIndexProblems(t, docs, string(index)) {
		t.Errorf("docs/README.md %s", p)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range mdLink.FindAllStringSubmatch(string(readme), -1) {
		n++
		if _, err := os.Stat(filepath.Join("..", "..", m[1])); err != nil {
			t.Errorf("README.md links a missing file: %s", m[1])
		}
	}
	if n < 5 {
		t.Fatalf("README.md has %d relative links: too few to be checking anything", n)
	}
}

// TestDocsIndexCheckFailsOnMissingLink is the negative control: the index
// with one document's link removed and one link renamed reports both.
func TestDocsIndexCheckFailsOnMissingLink(t *testing.T) {
	docs := filepath.Join("..", "..", "docs")
	b, err := os.ReadFile(filepath.Join(docs, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	index := strings.ReplaceAll(string(b), "(QUOTAS.md)", "")
	index = strings.ReplaceAll(index, "(SOAK.md)", "(SOAKING.md)")
	got := docsIndexProblems(t, docs, index)
	want := []string{"links a missing file: SOAKING.md", "not linked: QUOTAS.md", "not linked: SOAK.md"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
