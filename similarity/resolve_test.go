package similarity

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
)

// Every built-in takes exactly its spec's parameters, and uses the spec's
// defaults: with no parameters given, each declared default is
// the effective value recorded in the matrix's provenance.
func TestSpecsAreTheSourcesParameters(t *testing.T) {
	ctx := context.Background()
	specs := Builtins()
	for name, b := range specs {
		if got := b.New(Deps{}).Name(); got != name {
			t.Errorf("built-in %q makes a source called %q", name, got)
		}
		if b.NeedsAttributes != (name == "visual") {
			t.Errorf("%s: NeedsAttributes %v: only visual reads the label set's attributes", name, b.NeedsAttributes)
		}
	}
	// A label set with a hierarchy (simrank, lca) and attributes (visual).
	set := &labels.Set{Name: "t", Classes: []labels.Class{{ID: "a"}, {ID: "b"}, {ID: "c"}},
		Hierarchy:  []labels.Node{{ID: "r"}, {ID: "a", Parent: "r"}, {ID: "b", Parent: "r"}, {ID: "c", Parent: "r"}},
		Attributes: map[string]*labels.Attributes{"continuous": {Names: []string{"x", "y"}, Values: [][]float64{{1, 0}, {0, 1}, {1, 1}}}}}
	file := filepath.Join(t.TempDir(), "m.csv")
	if err := os.WriteFile(file, []byte("1,0,0\n0,1,0\n0,0,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	given := map[string]map[string]string{"matrix": {"file": file}}
	for _, name := range []string{"visual", "simrank", "lca", "matrix"} {
		src := specs[name].New(Deps{}).(Preparer)
		prov, err := src.Prepare(ctx, set, given[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var declared []string
		for _, p := range specs[name].Params {
			declared = append(declared, p.Name)
			if p.Default != "" && prov.Params[p.Name] != p.Default {
				t.Errorf("%s: %s is %q in effect, the spec says %q", name, p.Name, prov.Params[p.Name], p.Default)
			}
		}
		_, err = src.Prepare(ctx, set, map[string]string{"nonsense": "1"})
		if err == nil || !strings.Contains(err.Error(), "this source takes: "+strings.Join(sortedCopy(declared), ", ")) {
			t.Errorf("%s with an unknown parameter: %v", name, err)
		}
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestParseRef(t *testing.T) {
	file := filepath.Join(t.TempDir(), "awa2") // a file named like a set
	os.WriteFile(file, []byte("1"), 0o644)
	for _, tt := range []struct {
		in   string
		want Ref
		bad  bool
	}{
		{in: file, want: Ref{File: file}},
		{in: "sim/awa2/visual/0123", want: Ref{Key: "sim/awa2/visual/0123"}},
		{in: "awa2/visual", want: Ref{Source: "visual", SetName: "awa2"}},
		{in: "awa2", bad: true},
		{in: "a/b/c", bad: true},
	} {
		got, err := ParseRef(tt.in)
		if tt.bad != (err != nil) || (!tt.bad && got != tt.want) {
			t.Errorf("ParseRef(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

func TestResolveFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	set := &labels.Set{Name: "t", Classes: []labels.Class{{ID: "a", Name: "Ant"}, {ID: "b", Name: "Bee"}}}
	asym := filepath.Join(dir, "asym.npy")
	if err := npy.WriteFile(asym, 2, 2, []float64{1, 0.2, 0.6, 1}); err != nil {
		t.Fatal(err)
	}
	// As given (a strategy's --matrix), named after the set.
	m, err := Resolve(ctx, nil, Ref{File: asym, Set: set})
	if err != nil || m.N() != 2 || m.Data[1] != 0.2 || m.Data[2] != 0.6 || m.Names[1] != "Bee" || m.From != asym {
		t.Fatalf("%+v %v", m, err)
	}
	// Normalised (lcl similarity show/plot/compare).
	m, err = Resolve(ctx, nil, Ref{File: asym, Normalize: true})
	if err != nil || m.Data[1] != m.Data[2] || m.Names[0] != "0" {
		t.Fatalf("normalised %+v %v", m, err)
	}
	csv := filepath.Join(dir, "nan.csv")
	os.WriteFile(csv, []byte("1,nan\n0.5,1\n"), 0o644)
	if _, err := Resolve(ctx, nil, Ref{File: csv, Set: set}); err == nil || !strings.Contains(err.Error(), "s(Ant, Bee) [row 0, column 1] is NaN") {
		t.Errorf("NaN: %v", err)
	}
	three := &labels.Set{Name: "three", Classes: []labels.Class{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	if _, err := Resolve(ctx, nil, Ref{File: asym, Set: three}); err == nil || !strings.Contains(err.Error(), "label set three has 3 classes") {
		t.Errorf("size: %v", err)
	}
}

func TestResolveStored(t *testing.T) {
	ctx := context.Background()
	st, err := simstore.Open("", simstore.InMemory())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Stored in the order b, a, c; s(a,b) = 0.2, s(a,c) = 0.3, s(b,c) = 0.4.
	key, err := st.PutMatrix(ctx, simstore.Matrix{LabelSet: "t", Kind: "visual", Classes: []string{"b", "a", "c"},
		Provenance: simstore.Provenance{Source: "visual"}, Data: []float32{1, 0.2, 0.4, 0.2, 1, 0.3, 0.4, 0.3, 1}})
	if err != nil {
		t.Fatal(err)
	}
	set := &labels.Set{Name: "t", Classes: []labels.Class{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	for _, ref := range []Ref{{Key: key, Set: set}, {Source: "visual", Set: set}} {
		m, err := Resolve(ctx, st, ref)
		if err != nil {
			t.Fatal(err)
		}
		want := []float64{1, 0.2, 0.3, 0.2, 1, 0.4, 0.3, 0.4, 1} // in the set's order a, b, c
		for i := range want {
			if m.Data[i] != float32(want[i]) {
				t.Fatalf("%+v: data %v, want %v", ref, m.Data, want)
			}
		}
		if m.LabelSet != "t" || m.Kind != "visual" || !strings.HasPrefix(m.From, "store t/visual (") {
			t.Errorf("%+v: %+v", ref, m)
		}
	}
	// Without a set: the stored order.
	if m, err := Resolve(ctx, st, Ref{Source: "visual", SetName: "t"}); err != nil || m.IDs[0] != "b" || m.Label != "t/visual" {
		t.Errorf("stored order: %+v %v", m, err)
	}
	other := &labels.Set{Name: "u", Classes: set.Classes}
	if _, err := Resolve(ctx, st, Ref{Key: key, Set: other}); err == nil || !strings.Contains(err.Error(), "is of label set t, not u") {
		t.Errorf("key of another set: %v", err)
	}
	more := &labels.Set{Name: "t", Classes: append(append([]labels.Class(nil), set.Classes...), labels.Class{ID: "d"})}
	if _, err := Resolve(ctx, st, Ref{Source: "visual", Set: more}); err == nil || !strings.Contains(err.Error(), `has no class "d"`) {
		t.Errorf("missing class: %v", err)
	}
	if _, err := Resolve(ctx, st, Ref{Source: "semantic", Set: set}); !errors.Is(err, simstore.ErrNotFound) || !strings.Contains(err.Error(), "matrix t/semantic") {
		t.Errorf("missing matrix: %v", err)
	}
}
