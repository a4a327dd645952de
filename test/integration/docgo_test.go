package integration

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var (
	docTestName = regexp.MustCompile(`\bTest[A-Z0-9_]\w*`)
	// "(internal/broker, TestA, TestB)": unit tests of another package.
	docUnitTests = regexp.MustCompile(`\(internal/([a-z0-9_/]+),([^)]*)\)`)
)

// TestDocGoNamesExist: every test doc.go cites is a test function that
// exists: in one of the integration packages (the directories under this
// one), or, inside "(internal/<pkg>, ...)", in that package's tests. Parses
// source only; starts no broker.
func TestDocGoNamesExist(t *testing.T) {
	fset := token.NewFileSet()
	doc, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Doc == nil {
		t.Fatal("doc.go has no package comment")
	}
	text := doc.Doc.Text()

	var missing []string
	check := func(dir string, names []string) {
		have := testFuncs(t, dir)
		for _, n := range names {
			if !have[n] {
				missing = append(missing, n+" (not a test in "+dir+")")
			}
		}
	}
	cited := 0
	for _, m := range docUnitTests.FindAllStringSubmatch(text, -1) {
		names := docTestName.FindAllString(m[2], -1)
		cited += len(names)
		check(filepath.Join("..", "..", "internal", m[1]), names)
	}
	local := docTestName.FindAllString(docUnitTests.ReplaceAllString(text, ""), -1)
	cited += len(local)
	check("./...", local)
	if cited < 100 {
		t.Fatalf("doc.go cites %d tests; the parse found too few to be checking anything", cited)
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("doc.go names %s", m)
	}
}

// testFuncs returns the names of the top-level Test functions in dir's
// _test.go files; "./..." means every directory under this one.
func testFuncs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	var files []string
	var err error
	if dir == "./..." {
		err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, "_test.go") {
				files = append(files, path)
			}
			return err
		})
	} else {
		files, err = filepath.Glob(filepath.Join(dir, "*_test.go"))
	}
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s (%v)", dir, err)
	}
	have := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
				have[fd.Name.Name] = true
			}
		}
	}
	return have
}
