package catalogs

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"strings"
	"testing"
)

// TestContract: every exported interface declared in this package has its
// row in Contract, and every row names one.
func TestContract(t *testing.T) {
	fset := gotoken.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.IsExported() {
					if _, ok := ts.Type.(*ast.InterfaceType); ok {
						declared[ts.Name.Name] = true
					}
				}
				return true
			})
		}
	}
	rows := map[string]bool{}
	for _, c := range Contract {
		if rows[c.Interface] {
			t.Errorf("Contract: %s has two rows", c.Interface)
		}
		rows[c.Interface] = true
		if !declared[c.Interface] {
			t.Errorf("Contract: row %s names no interface of this package", c.Interface)
		}
		if c.Caller == "" || c.Fallback == "" || c.Check == "" {
			t.Errorf("Contract: row %s lacks its caller, fallback or check", c.Interface)
		}
	}
	for name := range declared {
		if !rows[name] {
			t.Errorf("interface %s has no row in Contract (contract.go): say who calls it, the fallback and its catalogtest check", name)
		}
	}
}
