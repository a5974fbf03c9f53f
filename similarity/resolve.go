package similarity

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
)

// MatrixStore is where Resolve finds stored matrices; *simstore.Store is one.
type MatrixStore interface {
	GetMatrixByKey(ctx context.Context, key string) (*simstore.Matrix, error)
	LatestMatrix(ctx context.Context, labelSet, kind string) (*simstore.Matrix, error)
}

// Ref names a matrix: a file, a store key, or the latest stored matrix of a
// source for a label set. Exactly one of File, Key and Source is set.
type Ref struct {
	// File is a CSV, whitespace-separated text or .npy file with the C×C
	// matrix in class order.
	File string
	// Key is a store key, sim/SET/KIND/DIGEST.
	Key string
	// Source names a source (semantic, visual, ...): the latest matrix it
	// stored for the label set SetName.
	Source string
	// SetName is the label set of Source (default: Set's name).
	SetName string
	// Set, when given, is the label set the matrix must describe: a stored
	// matrix is put into its class order (a missing class is an error), a
	// key must be of this set, a file must have its size, and rows are named
	// after its classes.
	Set *labels.Set
	// Normalize applies Normalize to a file's matrix (stored matrices are
	// normalised already); without it a file is only checked to be finite.
	Normalize bool
}

// ParseRef reads a matrix reference as `lcl similarity show/plot/compare`
// take it: an existing file, a store key (sim/...), or SET/SOURCE.
func ParseRef(s string) (Ref, error) {
	if _, err := os.Stat(s); err == nil {
		return Ref{File: s}, nil
	}
	if strings.HasPrefix(s, "sim/") {
		return Ref{Key: s}, nil
	}
	if set, src, ok := strings.Cut(s, "/"); ok && set != "" && src != "" && !strings.Contains(src, "/") {
		return Ref{Source: src, SetName: set}, nil
	}
	return Ref{}, fmt.Errorf("matrix %q: not a file, a store key (sim/...) or SET/SOURCE", s)
}

// Matrix is a resolved C×C similarity matrix.
type Matrix struct {
	Data  []float32 // row-major
	IDs   []string  // class ids in row order
	Names []string  // class names in row order (ids, or indices for a bare file)
	// LabelSet and Kind are a stored matrix's; "" for a file.
	LabelSet, Kind string
	// Label is how the reference named it (the file, the key, SET/SOURCE).
	Label string
	// From says where it came from, for messages: the file, or
	// "store SET/KIND (created-at)".
	From string
}

// N is the class count.
func (m *Matrix) N() int { return len(m.IDs) }

// Resolve finds the matrix ref names. st may be nil when ref is a file. A
// missing stored matrix is an error wrapping simstore.ErrNotFound.
func Resolve(ctx context.Context, st MatrixStore, ref Ref) (*Matrix, error) {
	if ref.File != "" {
		return resolveFile(ref)
	}
	if st == nil {
		return nil, fmt.Errorf("similarity: no store to find %s in", ref.label())
	}
	var m *simstore.Matrix
	var err error
	switch {
	case ref.Key != "":
		m, err = st.GetMatrixByKey(ctx, ref.Key)
	case ref.Source != "":
		set := ref.SetName
		if set == "" && ref.Set != nil {
			set = ref.Set.Name
		}
		m, err = st.LatestMatrix(ctx, set, ref.Source)
	default:
		return nil, fmt.Errorf("similarity: an empty matrix reference")
	}
	if err != nil {
		return nil, fmt.Errorf("matrix %s: %w", ref.label(), err)
	}
	return fromStore(m, ref)
}

func (r Ref) label() string {
	switch {
	case r.File != "":
		return r.File
	case r.Key != "":
		return r.Key
	}
	set := r.SetName
	if set == "" && r.Set != nil {
		set = r.Set.Name
	}
	return set + "/" + r.Source
}

func resolveFile(ref Ref) (*Matrix, error) {
	data, n, err := ReadMatrixFile(ref.File)
	if err != nil {
		return nil, err
	}
	m := &Matrix{Data: data, Label: ref.File, From: ref.File}
	if ref.Set != nil {
		if ref.Set.Len() != n {
			return nil, fmt.Errorf("%s: matrix is %d×%d but label set %s has %d classes", ref.File, n, n, ref.Set.Name, ref.Set.Len())
		}
		m.IDs, m.Names = ClassIDs(ref.Set), classNames(ref.Set)
	} else {
		m.IDs = make([]string, n)
		for i := range m.IDs {
			m.IDs[i] = fmt.Sprint(i)
		}
		m.Names = m.IDs
	}
	if ref.Normalize {
		if _, err := Normalize(m.Data, m.Names); err != nil {
			return nil, fmt.Errorf("%s: %w", ref.File, err)
		}
		return m, nil
	}
	if k := firstNonFinite(m.Data); k >= 0 {
		return nil, fmt.Errorf("%s: s(%s, %s) [row %d, column %d] is %v: similarities must be finite", ref.File, m.Names[k/n], m.Names[k%n], k/n, k%n, m.Data[k])
	}
	return m, nil
}

func fromStore(sm *simstore.Matrix, ref Ref) (*Matrix, error) {
	m := &Matrix{LabelSet: sm.LabelSet, Kind: sm.Kind, Label: ref.label(),
		From: fmt.Sprintf("store %s/%s (%s)", sm.LabelSet, sm.Kind, sm.Provenance.CreatedAt.Format(time.RFC3339))}
	set := ref.Set
	if set == nil {
		// Rows in stored order; names from the label set when it loads.
		m.IDs = sm.Classes
		m.Names = sm.Classes
		if s, err := labels.Load(sm.LabelSet); err == nil && s.Len() == sm.N() {
			m.Names = classNames(s)
		}
		m.Data = sm.Data // shared: a stored matrix is not copied
		return m, nil
	}
	if ref.Key != "" && sm.LabelSet != set.Name {
		return nil, fmt.Errorf("matrix %s is of label set %s, not %s", ref.Key, sm.LabelSet, set.Name)
	}
	// Into the set's class order.
	pos := make(map[string]int, sm.N())
	for i, id := range sm.Classes {
		pos[id] = i
	}
	c := set.Len()
	m.IDs, m.Names = ClassIDs(set), classNames(set)
	from := make([]int, c)
	same := c == sm.N()
	for i, a := range set.Classes {
		pa, ok := pos[a.ID]
		if !ok {
			return nil, fmt.Errorf("stored %s matrix of %s has no class %q; recompute it", sm.Kind, sm.LabelSet, a.ID)
		}
		from[i] = pa
		same = same && pa == i
	}
	if same { // already in class order: shared, not copied
		m.Data = sm.Data
		return m, nil
	}
	m.Data = make([]float32, c*c)
	for i, pa := range from {
		row := m.Data[i*c : (i+1)*c]
		src := sm.Data[pa*sm.N() : (pa+1)*sm.N()]
		for j, pb := range from {
			row[j] = src[pb]
		}
	}
	return m, nil
}

func classNames(set *labels.Set) []string {
	out := make([]string, set.Len())
	for i, c := range set.Classes {
		out[i] = c.Name
	}
	return out
}
