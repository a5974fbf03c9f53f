package testdep

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDepsInstallsEveryDeclaredPackage finds every dependency declared
// through this package in the module's test files and checks that
// scripts/deps.sh installs its Debian package: `make deps` for tests,
// `make bench-deps` for benchmarks, `make e2e` for files with the e2e tag.
func TestDepsInstallsEveryDeclaredPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	lists := map[string]map[string]bool{}
	for _, kind := range []string{"build", "test", "bench", "e2e"} {
		out, err := exec.Command("bash", filepath.Join(root, "scripts", "deps.sh"), "--list", kind).Output()
		if err != nil {
			t.Fatalf("scripts/deps.sh --list %s: %v", kind, err)
		}
		lists[kind] = map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			lists[kind][p] = true
		}
	}
	if !lists["test"]["python3-torch"] {
		t.Fatal("deps.sh --list test lacks python3-torch, which trainer's tests need")
	}
	// `make demo` installs the build set only: what lcl links and the demo
	// reads, no test reference (the Python modules are hundreds of MB).
	for p := range lists["build"] {
		if !lists["test"][p] {
			t.Errorf("deps.sh: %s is in the build set but not in the test set (the tests build lcl too)", p)
		}
		if isPythonPackage(p) {
			t.Errorf("deps.sh: the build set (make demo) installs %s, a test reference", p)
		}
	}
	for _, p := range []string{"wordnet-base", "dataset-fashion-mnist", "libtorch-dev"} {
		if !lists["build"][p] {
			t.Errorf("deps.sh --list build lacks %s, which make demo needs", p)
		}
	}
	if demo, err := os.ReadFile(filepath.Join(root, "scripts", "demo.sh")); err != nil {
		t.Fatal(err)
	} else if strings.Contains(string(demo), "python") {
		t.Error("scripts/demo.sh runs Python, which make demo does not install")
	}

	decls := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		fileKind := "test"
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if strings.HasPrefix(c.Text, "//go:build") && strings.Contains(c.Text, "e2e") && !strings.Contains(c.Text, "!e2e") {
					fileKind = "e2e"
				}
			}
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			kind := fileKind
			if strings.HasPrefix(fn.Name.Name, "Benchmark") {
				kind = "bench"
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkgIdent, ok := sel.X.(*ast.Ident)
				if !ok || pkgIdent.Name != "testdep" {
					return true
				}
				if sel.Sel.Name != "PythonModules" && sel.Sel.Name != "Program" {
					return true
				}
				for _, a := range call.Args[1:] {
					lit, ok := a.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: %s takes string literals (so this test can read them)", fset.Position(a.Pos()), sel.Sel.Name)
						continue
					}
					name, _ := strconv.Unquote(lit.Value)
					pkg, known := Package(name)
					if !known {
						t.Errorf("%s: %q is not known to internal/testdep", fset.Position(a.Pos()), name)
						continue
					}
					decls++
					// e2e and bench runs install the test list too.
					if !lists[kind][pkg] && !lists["test"][pkg] {
						t.Errorf("%s: %s declares %s (Debian %s), which scripts/deps.sh does not install for `%s`",
							fset.Position(a.Pos()), fn.Name.Name, name, pkg, kind)
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if decls == 0 {
		t.Fatal("found no declared dependency: the scan is broken")
	}
}

// isPythonPackage reports whether p is the Debian package of a Python
// module a test may declare.
func isPythonPackage(p string) bool {
	for _, pkg := range pythonModules {
		if pkg == p {
			return true
		}
	}
	return strings.HasPrefix(p, "python3")
}
