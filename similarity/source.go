package similarity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/lcl-project/lcl/labels"
)

// Source computes a class-similarity matrix for a label set. Implementations
// read only the set's classes (ids, names, wnids), its attribute matrices and
// the string parameters, plus whatever they were constructed with (WordNet,
// the store); that keeps the contract expressible as one request/response
// message for plugins.
type Source interface {
	// Name is the source's name as given to --source.
	Name() string
	// Compute returns the C×C matrix of the set's classes, in class order.
	Compute(ctx context.Context, set *labels.Set, params map[string]string) (*Result, error)
}

// Preparer is implemented by sources that can resolve their parameters and
// digest their inputs without computing the matrix, so a stored matrix can
// be found before any work is done.
type Preparer interface {
	// Prepare fills in default parameters, rejects bad ones, and returns the
	// effective parameters and the sha256 digests of every input.
	Prepare(ctx context.Context, set *labels.Set, params map[string]string) (Provenance, error)
}

// Provenance is what made a matrix: the effective parameters (defaults
// filled in) and the digests of its inputs (input name → sha256 hex).
type Provenance struct {
	Params map[string]string
	Inputs map[string]string
}

// Result is a computed matrix.
type Result struct {
	Classes []string // class ids, in class order
	// Data is C×C, row-major: Data[i*C+j] = s(i,j). A built-in source whose
	// matrix is symmetric by construction may fill only the entries above
	// the diagonal (upper); Compute completes it, so use Compute.
	Data []float32
	Provenance
	// Notes are facts worth telling the user (zero share, iterations,
	// missing-value handling), as "key: value" lines.
	Notes []string
	// upper says the source filled only the entries above the diagonal
	// (symmetric by construction): Compute mirrors them while normalising.
	upper bool
}

// N is the class count.
func (r *Result) N() int { return len(r.Classes) }

// At returns s(i,j).
func (r *Result) At(i, j int) float64 { return float64(r.Data[i*len(r.Classes)+j]) }

// Compute runs a source, checks the shape of its result against the set and
// applies the normalisation policy (see Normalize). A result that breaks the
// policy beyond repair is an error; nothing is returned then.
func Compute(ctx context.Context, src Source, set *labels.Set, params map[string]string) (*Result, error) {
	res, err := src.Compute(ctx, set, params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Name(), err)
	}
	c := set.Len()
	if len(res.Data) != c*c {
		return nil, fmt.Errorf("%s: returned %d values, want %d×%d for label set %s", src.Name(), len(res.Data), c, c, set.Name)
	}
	if res.Classes == nil {
		res.Classes = ClassIDs(set)
	}
	if len(res.Classes) != c {
		return nil, fmt.Errorf("%s: returned %d class ids, want %d", src.Name(), len(res.Classes), c)
	}
	normalize := Normalize
	if res.upper {
		normalize = normalizeUpper
	}
	notes, err := normalize(res.Data, res.Classes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Name(), err)
	}
	res.Notes = append(res.Notes, notes...)
	return res, nil
}

// ClassIDs returns the set's class ids in class order.
func ClassIDs(set *labels.Set) []string {
	out := make([]string, set.Len())
	for i, c := range set.Classes {
		out[i] = c.ID
	}
	return out
}

// ClassesDigest digests the class list (ids and wnids): every source's
// matrix depends on it.
func ClassesDigest(set *labels.Set) string {
	h := sha256.New()
	for _, c := range set.Classes {
		fmt.Fprintf(h, "%s\t%s\n", c.ID, c.WNID)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func floatsDigest(rows [][]float64) string {
	h := sha256.New()
	for _, r := range rows {
		for _, x := range r {
			h.Write([]byte(strconv.FormatFloat(x, 'g', -1, 64)))
			h.Write([]byte{' '})
		}
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}
