package similarity

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
)

// VectorStore is what the semantic source reads: the class vectors written
// by `lcl embed`.
type VectorStore interface {
	GetVectors(ctx context.Context, labelSet, model string) (*simstore.Vectors, error)
	List(ctx context.Context, kind string) ([]simstore.Entry, error)
}

// Semantic is the cosine similarity of the class vectors that `lcl embed`
// stored for the label set (doc2vec of each class's Wikipedia article).
//
// Parameter "model" picks the embedding model id; without it the most
// recently created vectors of the label set are used. Where the vectors hold
// several rows for one class id (several articles), their mean is the class
// vector.
type Semantic struct {
	Store    VectorStore
	Progress ProgressFunc // optional, one unit per block of 256 rows
	// MaxMemory bounds the matrix it may plan to hold, in bytes (0:
	// DefaultMaxMemory).
	MaxMemory int64
}

// Name implements Source.
func (Semantic) Name() string { return "semantic" }

func (s Semantic) vectors(ctx context.Context, set *labels.Set, in map[string]string) (*params, *simstore.Vectors, error) {
	if s.Store == nil {
		return nil, nil, fmt.Errorf("no store to read vectors from")
	}
	p, err := newParams(in, "semantic")
	if err != nil {
		return nil, nil, err
	}
	model := p.str("model")
	if model != "" {
		v, err := s.Store.GetVectors(ctx, set.Name, model)
		if errors.Is(err, simstore.ErrNotFound) {
			return nil, nil, fmt.Errorf("no vectors of model %q for label set %s; run `lcl embed --synsets %s` first: %w", model, set.Name, set.Name, err)
		}
		return p, v, err
	}
	entries, err := s.Store.List(ctx, simstore.KindVectors)
	if err != nil {
		return nil, nil, err
	}
	prefix := "vec/" + url.PathEscape(set.Name) + "/"
	var best *simstore.Vectors
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Key, prefix)
		if !ok {
			continue
		}
		m, err := url.PathUnescape(rest)
		if err != nil {
			continue
		}
		v, err := s.Store.GetVectors(ctx, set.Name, m)
		if err != nil {
			return nil, nil, err
		}
		if best == nil || v.CreatedAt.After(best.CreatedAt) {
			best = v
		}
	}
	if best == nil {
		return nil, nil, fmt.Errorf("no vectors for label set %s in the store; run `lcl embed --synsets %s` first: %w", set.Name, set.Name, simstore.ErrNotFound)
	}
	p.effective["model"] = best.Model
	return p, best, nil
}

func vectorsDigest(v *simstore.Vectors) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n%s\n", v.Model, v.Dim, strings.Join(v.IDs, "\t"))
	binary.Write(h, binary.LittleEndian, v.Data)
	return hex.EncodeToString(h.Sum(nil))
}

// Prepare implements Preparer.
func (s Semantic) Prepare(ctx context.Context, set *labels.Set, in map[string]string) (Provenance, error) {
	p, v, err := s.vectors(ctx, set, in)
	if err != nil {
		return Provenance{}, err
	}
	return Provenance{Params: p.effective, Inputs: map[string]string{"classes": ClassesDigest(set), "vectors": vectorsDigest(v)}}, nil
}

// Compute implements Source.
func (s Semantic) Compute(ctx context.Context, set *labels.Set, in map[string]string) (*Result, error) {
	p, v, err := s.vectors(ctx, set, in)
	if err != nil {
		return nil, err
	}
	c := int64(set.Len())
	need := MatrixBytes(set.Len()) + 8*c*int64(v.Dim)*2 + 8*cosineBlock*c*int64(runtime.GOMAXPROCS(0))
	if err := checkMemory(fmt.Sprintf("semantic of %d classes (a %d×%d float32 matrix)", c, c, c), need, s.MaxMemory); err != nil {
		return nil, err
	}
	rows, err := ClassVectors(set, v)
	if err != nil {
		return nil, err
	}
	bar := s.Progress.start(int64((len(rows)+cosineBlock-1)/cosineBlock), "semantic cosines")
	defer bar.Finish()
	data, err := cosine(ctx, rows, func(i int) string { return set.Classes[i].ID }, bar, false)
	if err != nil {
		return nil, fmt.Errorf("vectors %s: %w", v.Model, err)
	}
	return &Result{
		Classes:    ClassIDs(set),
		Data:       data,
		Provenance: Provenance{Params: p.effective, Inputs: map[string]string{"classes": ClassesDigest(set), "vectors": vectorsDigest(v)}},
		upper:      true, // Compute mirrors it
	}, nil
}

// ClassVectors returns one vector per class in class order: the mean of the
// rows stored under the class id. A class without a row is an error naming
// it.
func ClassVectors(set *labels.Set, v *simstore.Vectors) ([][]float64, error) {
	pos := map[string]int{}
	for i, c := range set.Classes {
		pos[c.ID] = i
	}
	out := make([][]float64, set.Len())
	count := make([]int, set.Len())
	for r, id := range v.IDs {
		i, ok := pos[id]
		if !ok {
			continue
		}
		if out[i] == nil {
			out[i] = make([]float64, v.Dim)
		}
		for k, x := range v.Row(r) {
			out[i][k] += float64(x)
		}
		count[i]++
	}
	var missing []string
	for i, row := range out {
		if row == nil {
			missing = append(missing, set.Classes[i].ID)
			continue
		}
		for k := range row {
			row[k] /= float64(count[i])
		}
	}
	if len(missing) > 0 {
		more := ""
		if len(missing) > 5 {
			more = fmt.Sprintf(" and %d more", len(missing)-5)
			missing = missing[:5]
		}
		return nil, fmt.Errorf("vectors %s have no row for class(es) %s%s", v.Model, strings.Join(missing, ", "), more)
	}
	return out, nil
}
