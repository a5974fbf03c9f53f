package similarity

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
)

// unprepared hides a source's Prepare: it can only compute.
type unprepared struct{ Source }

// A stored matrix is found again for the same source, parameters and
// inputs (under the key it was stored by), and only then.
func TestCached(t *testing.T) {
	ctx := context.Background()
	st, err := simstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	set := &labels.Set{Name: "t", Classes: []labels.Class{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	file := filepath.Join(t.TempDir(), "m.csv")
	if err := os.WriteFile(file, []byte("1,0.5,0\n0.5,1,0.25\n0,0.25,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := Builtins()["matrix"].New(Deps{})
	params := map[string]string{"file": file}
	if hit, err := Cached(ctx, st, src, set, params); hit != nil || err != nil {
		t.Fatalf("empty store: %+v %v", hit, err)
	}
	res, err := Compute(ctx, src, set, params)
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Record(set, src.Name(), "lcl test")
	if rec.LabelSet != "t" || rec.Kind != "matrix" || rec.Provenance.Source != "matrix" || rec.Provenance.Tool != "lcl test" ||
		!slices.Equal(rec.Classes, []string{"a", "b", "c"}) || rec.Data[1] != 0.5 || rec.Data[5] != 0.25 || len(rec.Data) != 9 ||
		rec.Provenance.Inputs["file"] == "" || !maps.Equal(rec.Provenance.Params, res.Params) {
		t.Fatalf("record %+v", rec)
	}
	stored, err := st.PutMatrix(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	hit, err := Cached(ctx, st, src, set, params)
	if err != nil || hit == nil || hit.Key != stored || hit.Matrix.Data != nil || !slices.Equal(hit.Matrix.Classes, rec.Classes) ||
		!maps.Equal(hit.Params, res.Params) || !maps.Equal(hit.Inputs, res.Inputs) {
		t.Fatalf("cache hit: %+v %v, want key %q", hit, err, stored)
	}
	// Another input (the file's content changed) is another matrix.
	if err := os.WriteFile(file, []byte("1,0.4,0\n0.4,1,0.25\n0,0.25,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if hit, err := Cached(ctx, st, src, set, params); hit != nil || err != nil {
		t.Errorf("changed input: %+v %v, want no matrix", hit, err)
	}
	// A source that cannot tell its inputs is never a cache hit; a bad
	// parameter is an error.
	if hit, err := Cached(ctx, st, unprepared{src}, set, params); hit != nil || err != nil {
		t.Errorf("no Preparer: %+v %v", hit, err)
	}
	if _, err := Cached(ctx, st, src, set, map[string]string{"nonsense": "1"}); err == nil {
		t.Error("an unknown parameter: no error")
	}
}
