package tools

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestNoDeclarationNamedAfterStdPackage: no package-level type, function,
// variable or constant in internal/ or cmd/ has the name of a standard
// library package the tree imports (a type named runtime, say): in its
// package that name hides the import, so a reader who meets runtime.X
// must check which one it is, and a file of the package that needs the
// standard package cannot import it under its own name. Parses source
// only; starts no broker.
func TestNoDeclarationNamedAfterStdPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "std").Output()
	if err != nil {
		t.Fatalf("go list std: %v", err)
	}
	std := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		std[p] = true
	}
	type decl struct{ pos, name string }
	var decls []decl
	imported := map[string]bool{} // base names of the std packages the tree imports
	fset := token.NewFileSet()
	for _, root := range []string{"../../../internal", "../../../cmd"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, im := range f.Imports {
				if ip, _ := strconv.Unquote(im.Path.Value); std[ip] {
					imported[path.Base(ip)] = true
				}
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil {
						decls = append(decls, decl{fset.Position(d.Pos()).String(), d.Name.Name})
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							decls = append(decls, decl{fset.Position(s.Pos()).String(), s.Name.Name})
						case *ast.ValueSpec:
							for _, n := range s.Names {
								decls = append(decls, decl{fset.Position(n.Pos()).String(), n.Name})
							}
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var bad []string
	for _, d := range decls {
		if imported[d.name] {
			bad = append(bad, d.pos+": "+d.name)
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s is named after a standard library package the tree imports", b)
	}
}
