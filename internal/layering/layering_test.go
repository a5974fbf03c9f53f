package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

type pkg struct {
	ImportPath string
	Imports    []string
	Module     *struct{ Path string }
}

// modulePackages lists every package of the module with its imports
// (non-test files: what the package itself depends on).
func modulePackages(t *testing.T) (module string, pkgs []pkg) {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "-e", "github.com/lcl-project/lcl/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module != nil {
			module = p.Module.Path
		}
		pkgs = append(pkgs, p)
	}
	if module == "" || len(pkgs) < 10 {
		t.Fatalf("go list found %d packages of module %q", len(pkgs), module)
	}
	return module, pkgs
}

// floor is the floor of a module-relative package path, and the prefix that
// set it; ok is false for a path no prefix covers.
func floor(rel string) (int, string, bool) {
	best, at := "", 0
	for prefix, f := range Floors() {
		if (rel == prefix || strings.HasPrefix(rel, prefix+"/")) && len(prefix) > len(best) {
			best, at = prefix, f
		}
	}
	return at, best, best != ""
}

func TestNoPackageImportsAHigherFloor(t *testing.T) {
	module, pkgs := modulePackages(t)
	var bad []string
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		f, _, ok := floor(rel)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: on no floor (add it to layering.Floors)", rel))
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			irel := strings.TrimPrefix(imp, module+"/")
			g, prefix, ok := floor(irel)
			if ok && g > f {
				bad = append(bad, fmt.Sprintf("%s (floor %d) imports %s (floor %d, %s)", rel, f, irel, g, prefix))
			}
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("imports that run up the floors (package layering states them):\n  %s", strings.Join(bad, "\n  "))
	}
}

// The check itself: a lower package importing a higher one is caught.
func TestFloorOrder(t *testing.T) {
	for _, tt := range []struct {
		lower, higher string
	}{
		{"simstore", "wiki"}, {"internal/npy", "wiki"}, {"labels", "wiki/wikitest"}, {"wiki", "embed/wncorpus"}, {"embed", "similarity"},
		{"similarity", "plugins/sdk"}, {"plugins/strategy", "trainer/torch"}, {"curriculum", "trainer"},
		{"trainer/launch", "experiment"}, {"experiment", "report"}, {"report", "cmd/lcl/internal/cli"},
	} {
		lo, _, ok1 := floor(tt.lower)
		hi, _, ok2 := floor(tt.higher)
		if !ok1 || !ok2 || lo >= hi {
			t.Errorf("%s (floor %d) is not below %s (floor %d)", tt.lower, lo, tt.higher, hi)
		}
	}
	if _, _, ok := floor("wikipedia"); ok {
		t.Error(`"wikipedia" matched the prefix "wiki"`)
	}
}
