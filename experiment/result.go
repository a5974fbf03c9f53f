package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/simstore"
)

// Files a finished `lcl train --out DIR` leaves in DIR; the runner and the
// cluster collector read them.
const (
	// ResultFile holds the final result: {"top1": [...], "top5": [...]} with
	// one value per model (DML: one per peer); a single number is accepted too.
	// It is written last, so its presence means the run finished.
	ResultFile = "result.json"
	// MetricsFile holds one JSON object per epoch (epoch, loss, top1, top5 per
	// model, and target_entropy where the strategy logs it).
	MetricsFile = "metrics.jsonl"
	// ConfigFile is written by the runner and the emitted cluster jobs next
	// to the run so that a run directory explains itself.
	ConfigFile = "lcl-run.json"
	// ClaimFile is the lock a runner holds on a run directory while it
	// trains the run (a dot-file: no work of the run's).
	ClaimFile = ".lcl-claim"
)

// ErrNoResult means a run directory holds no result file yet.
var ErrNoResult = errors.New("no " + ResultFile)

// perModel accepts a number or a list of numbers.
type perModel []float64

func (p *perModel) UnmarshalJSON(b []byte) error {
	var one float64
	if err := json.Unmarshal(b, &one); err == nil {
		*p = perModel{one}
		return nil
	}
	var many []float64
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("expected a number or a list of numbers, got %s", b)
	}
	*p = many
	return nil
}

// ReadResult reads a finished run's directory (result.json, metrics.jsonl)
// into the record of the run with configuration c, keyed by c.ID(). The
// grid runner, the cluster collector and `lcl train` all record runs with it.
func ReadResult(c simstore.RunConfig, dir string) (simstore.Run, error) {
	path := filepath.Join(dir, ResultFile)
	raw, err := bounded.ReadFile(path, maxResultBytes, "result file")
	if errors.Is(err, os.ErrNotExist) {
		return simstore.Run{}, fmt.Errorf("%s: %w", bounded.Quote(dir), ErrNoResult)
	}
	if err != nil {
		return simstore.Run{}, err
	}
	var res struct {
		Top1             perModel    `json:"top1"`
		Top5             perModel    `json:"top5"`
		MistakeSeverity  perModel    `json:"mistake_severity"`
		HDist1           perModel    `json:"hdist1"`
		HDist5           perModel    `json:"hdist5"`
		HDist20          perModel    `json:"hdist20"`
		Mistakes         perModel    `json:"mistakes"`
		MistakesByHeight [][]float64 `json:"mistakes_by_height"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return simstore.Run{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(res.Top1) == 0 {
		return simstore.Run{}, fmt.Errorf("%s: no top1 value", bounded.Quote(path))
	}
	if err := checkAccuracies(res.Top1, res.Top5); err != nil {
		return simstore.Run{}, fmt.Errorf("%s: %w", bounded.Quote(path), err)
	}
	epochs, err := readEpochs(filepath.Join(dir, MetricsFile))
	if err != nil {
		return simstore.Run{}, err
	}
	var hier map[string][]float64
	for _, h := range []struct {
		name string
		v    perModel
	}{{HierSeverity, res.MistakeSeverity}, {HierDist1, res.HDist1}, {HierDist5, res.HDist5}, {HierDist20, res.HDist20}} {
		if len(h.v) == 0 {
			continue
		}
		if len(h.v) != len(res.Top1) {
			return simstore.Run{}, fmt.Errorf("%s: %d %s values for %d top1 values: want one per model", bounded.Quote(path), len(h.v), h.name, len(res.Top1))
		}
		if hier == nil {
			hier = map[string][]float64{}
		}
		hier[h.name] = h.v
	}
	if hier, err = heightCounts(hier, res.Mistakes, res.MistakesByHeight, len(res.Top1)); err != nil {
		return simstore.Run{}, fmt.Errorf("%s: %w", bounded.Quote(path), err)
	}
	return simstore.Run{ID: c.ID(), Config: c, Status: simstore.RunDone, Top1: res.Top1, Top5: res.Top5,
		Hier: hier, Epochs: epochs, Dir: dir}, nil
}

// heightCounts adds result.json's mistakes and their distribution over LCA
// heights to a run's Hier (HierMistakes, HierHeight(h) for every height up
// to the greatest any model has, one count per model), checked: whole
// counts ≥ 0, one list per model, summing to its mistakes.
func heightCounts(hier map[string][]float64, mistakes perModel, byHeight [][]float64, models int) (map[string][]float64, error) {
	if len(mistakes) == 0 && len(byHeight) == 0 {
		return hier, nil
	}
	if len(mistakes) != models || len(byHeight) != models {
		return nil, fmt.Errorf("%d mistakes and %d mistakes_by_height values for %d top1 values: want one of each per model", len(mistakes), len(byHeight), models)
	}
	if hier == nil {
		hier = map[string][]float64{}
	}
	hier[HierMistakes] = mistakes
	heights := 0
	for i, counts := range byHeight {
		sum := 0.0
		for h, n := range counts {
			if n < 0 || n != math.Trunc(n) {
				return nil, fmt.Errorf("mistakes_by_height[%d][%d] = %g: want a count", i, h, n)
			}
			sum += n
		}
		if sum != mistakes[i] {
			return nil, fmt.Errorf("mistakes_by_height[%d] sums to %g, mistakes[%d] is %g", i, sum, i, mistakes[i])
		}
		heights = max(heights, len(counts))
	}
	for h := range heights {
		col := make([]float64, models)
		for i, counts := range byHeight {
			if h < len(counts) {
				col[i] = counts[h]
			}
		}
		hier[HierHeight(h)] = col
	}
	return hier, nil
}

// HierHeight names the count of a model's top-1 mistakes at LCA height h
// in a stored run's Hier.
func HierHeight(h int) string { return fmt.Sprintf("%s%d", hierHeightPrefix, h) }

// ParseHierHeight is HierHeight's inverse: the height a Hier name counts
// the mistakes of, and false for any other name.
func ParseHierHeight(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, hierHeightPrefix)
	if !ok {
		return 0, false
	}
	h, err := strconv.Atoi(rest)
	return h, err == nil && h >= 0 && strconv.Itoa(h) == rest
}

const hierHeightPrefix = "mistakes_h"

// The names of the hierarchical metrics in result.json and in a stored
// run's Hier.
const (
	HierSeverity = "mistake_severity"
	HierDist1    = "hdist1"
	HierDist5    = "hdist5"
	HierDist20   = "hdist20"
	// HierMistakes is the number of top-1 mistakes (HierHeight(h) their
	// count at LCA height h).
	HierMistakes = "mistakes"
)

// maxResultBytes bounds result.json (a few numbers per model).
const maxResultBytes = 1 << 20

// checkAccuracies refuses accuracies that are not fractions in [0, 1]
// (lcl writes 0.75 for 75 %: a percentage imported as is would be
// reported as 7500 %), top-5 values below their top-1, and a top-5 list
// of another length than top-1's.
func checkAccuracies(top1, top5 []float64) error {
	for _, l := range []struct {
		name string
		v    []float64
	}{{"top1", top1}, {"top5", top5}} {
		for i, x := range l.v {
			if math.IsNaN(x) || x < 0 || x > 1 {
				return fmt.Errorf("%s[%d] = %g: want a fraction in [0, 1] (lcl writes accuracies as fractions: 0.75 for 75 %%)", l.name, i, x)
			}
		}
	}
	if len(top5) > 0 && len(top5) != len(top1) {
		return fmt.Errorf("%d top5 values for %d top1 values: want one per model", len(top5), len(top1))
	}
	for i := range top5 {
		if top5[i] < top1[i] {
			return fmt.Errorf("top5[%d] = %g is below top1[%d] = %g", i, top5[i], i, top1[i])
		}
	}
	return nil
}

// epochAccuracies are the fields of a metrics line that hold accuracies.
type epochAccuracies struct {
	Top1 perModel `json:"top1"`
	Top5 perModel `json:"top5"`
}

// readEpochs turns the JSONL metrics log into a JSON array; a missing log
// gives nil (a run may legitimately log nothing per epoch). Every line must
// be a JSON object whose top1/top5, if any, are fractions in [0, 1].
func readEpochs(path string) (json.RawMessage, error) {
	f, err := bounded.OpenRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	buf.WriteByte('[')
	sc := bounded.NewScanner(f, 16<<20)
	n := 0
	for sc.Scan() {
		line := sc.Line()
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var acc epochAccuracies
		if b[0] != '{' || json.Unmarshal(b, &acc) != nil {
			return nil, fmt.Errorf("%s:%d: not a JSON object with top1/top5 numbers", bounded.Quote(path), line)
		}
		for _, v := range [][]float64{acc.Top1, acc.Top5} {
			for _, x := range v {
				if math.IsNaN(x) || x < 0 || x > 1 {
					return nil, fmt.Errorf("%s:%d: accuracy %g: want a fraction in [0, 1] (lcl writes 0.75 for 75 %%)", bounded.Quote(path), line, x)
				}
			}
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
		n++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// writeFileAtomic writes data to path so a crash leaves the old or the new file.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o644)
}
