package similarity

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/lcl-project/lcl/labels"
)

// Missing-value handling of the visual source (parameter "missing").
const (
	// MissingMean replaces a missing attribute value by the mean of that
	// attribute over the classes that have it: the class is assumed
	// typical where nothing is known. Default.
	MissingMean = "mean"
	// MissingZero replaces it by 0, as many zero-shot codebases do with
	// AwA2's −1: the attribute is assumed absent.
	MissingZero = "zero"
)

// Visual is the cosine similarity of per-class attribute vectors.
//
// Parameters: "attributes" names a matrix of the label set (AwA2:
// continuous, binary; CUB: continuous; default continuous) or a file of C rows
// × A columns (whitespace or CSV, NaN/NA = missing); "missing" is mean
// (default) or zero.
type Visual struct{}

// Name implements Source.
func (Visual) Name() string { return "visual" }

func (Visual) resolve(set *labels.Set, in map[string]string) (*params, [][]float64, string, error) {
	p, err := newParams(in, "visual")
	if err != nil {
		return nil, nil, "", err
	}
	if _, err := p.choice("missing", MissingMean, MissingZero); err != nil {
		return nil, nil, "", err
	}
	name := p.str("attributes")
	if a, ok := set.Attributes[name]; ok {
		if len(a.Values) != set.Len() {
			return nil, nil, "", fmt.Errorf("attributes %s of %s: %d rows for %d classes", name, set.Name, len(a.Values), set.Len())
		}
		return p, a.Values, "attributes:" + name, nil
	}
	if _, err := os.Stat(name); err != nil {
		var have []string
		for k := range set.Attributes {
			have = append(have, k)
		}
		sort.Strings(have)
		if len(have) == 0 {
			return nil, nil, "", fmt.Errorf("label set %s has no built-in attributes; give --attributes FILE (C rows × A columns)", set.Name)
		}
		return nil, nil, "", fmt.Errorf("attributes %q: not a matrix of %s (%s) and not a readable file", name, set.Name, strings.Join(have, ", "))
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, "", err
	}
	defer f.Close()
	rows, err := ReadTable(f, name)
	if err != nil {
		return nil, nil, "", err
	}
	if len(rows) != set.Len() {
		return nil, nil, "", fmt.Errorf("%s: %d rows, but label set %s has %d classes (one row per class, in class order)", name, len(rows), set.Name, set.Len())
	}
	delete(p.effective, "attributes") // the file's digest identifies it
	return p, rows, "attributes-file", nil
}

// Prepare implements Preparer.
func (v Visual) Prepare(_ context.Context, set *labels.Set, in map[string]string) (Provenance, error) {
	p, rows, input, err := v.resolve(set, in)
	if err != nil {
		return Provenance{}, err
	}
	return Provenance{Params: p.effective, Inputs: map[string]string{"classes": ClassesDigest(set), input: floatsDigest(rows)}}, nil
}

// Compute implements Source.
func (v Visual) Compute(ctx context.Context, set *labels.Set, in map[string]string) (*Result, error) {
	p, rows, input, err := v.resolve(set, in)
	if err != nil {
		return nil, err
	}
	x, filled, err := fillMissing(rows, p.effective["missing"], set)
	if err != nil {
		return nil, err
	}
	data, err := cosine(ctx, x, func(i int) string { return set.Classes[i].ID }, nil, true)
	if err != nil {
		return nil, err
	}
	res := &Result{
		Classes:    ClassIDs(set),
		Data:       data,
		Provenance: Provenance{Params: p.effective, Inputs: map[string]string{"classes": ClassesDigest(set), input: floatsDigest(rows)}},
	}
	if filled > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("missing values: %d filled with the %s", filled, map[string]string{MissingMean: "attribute's mean over the other classes", MissingZero: "value 0"}[p.effective["missing"]]))
	}
	return res, nil
}

// fillMissing returns a copy of rows with NaN replaced per mode.
func fillMissing(rows [][]float64, mode string, set *labels.Set) ([][]float64, int, error) {
	cols := len(rows[0])
	out := make([][]float64, len(rows))
	filled := 0
	for i, r := range rows {
		out[i] = append([]float64(nil), r...)
	}
	for j := 0; j < cols; j++ {
		sum, n := 0.0, 0
		for _, r := range rows {
			if !math.IsNaN(r[j]) {
				sum += r[j]
				n++
			}
		}
		for i, r := range rows {
			if !math.IsNaN(r[j]) {
				continue
			}
			if math.IsInf(r[j], 0) {
				return nil, 0, fmt.Errorf("attribute %d of class %s is infinite", j+1, set.Classes[i].ID)
			}
			filled++
			switch {
			case mode == MissingZero:
				out[i][j] = 0
			case n == 0:
				return nil, 0, fmt.Errorf("attribute %d is missing for every class; use --missing zero or drop the column", j+1)
			default:
				out[i][j] = sum / float64(n)
			}
		}
	}
	return out, filled, nil
}
