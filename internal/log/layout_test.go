package log

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestReadFileOnlyReads: read.go holds the Log's reads, so that a reader
// of the package finds every write in the files that write (append.go,
// txnindex.go, flush.go, retention.go, ...). None of its functions may
// call what writes a file or fails the log, nor set what only a write
// sets (a dirty flag, the log end, the failure).
func TestReadFileOnlyReads(t *testing.T) {
	writers := map[string]bool{"failLocked": true, "add": true, "rewrite": true, "truncateTo": true,
		"markDirty": true, "Write": true, "WriteAt": true, "Truncate": true, "Sync": true}
	written := map[string]bool{"dirty": true, "txnDirty": true, "idxDirty": true, "dirDirty": true,
		"failed": true, "leo": true, "flushed": true}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "read.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, lhs := range n.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok && written[sel.Sel.Name] {
						t.Errorf("%s: %s sets %s: a write, which belongs beside the writes", fset.Position(n.Pos()), fn.Name.Name, sel.Sel.Name)
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && writers[sel.Sel.Name] {
					t.Errorf("%s: %s calls %s: a write, which belongs beside the writes", fset.Position(n.Pos()), fn.Name.Name, sel.Sel.Name)
				}
			}
			return true
		})
	}
}
