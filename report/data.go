// Package report turns stored runs into the paper's evidence: tables (one per
// data set and metric, a block per data ratio, rows = models, columns =
// methods, best in bold) as Markdown, LaTeX and CSV; average ranks with the
// Friedman test, the Iman–Davenport correction and the Nemenyi critical
// difference; paired differences against SL and LS; PNG plots; and one
// self-contained HTML file that embeds all of it.
package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/lcl-project/lcl/simstore"
)

// Entry is the final result of one model of one run: a DML run gives two
// entries, one per peer (DML₁, DML₂).
type Entry struct {
	RunID    string
	Dataset  string
	Model    string
	Fraction float64
	Strategy string
	Method   string
	Seed     int
	Top1     float64
	Top5     float64 // NaN when the run did not report it
	// Hier holds the hierarchical metrics of a run with a hierarchy, by
	// Metric name (mistake_severity, hdist1, hdist5, hdist20).
	Hier  map[string]float64
	Curve []EpochPoint
	// Selected is the epoch whose weights model selection kept (the run
	// had a validation split: its figures are of those weights), of the
	// Trained epochs the run logged; 0 without model selection.
	Selected, Trained int
}

// EpochPoint is one epoch of a run's metrics log for one model.
type EpochPoint struct {
	Epoch   int
	Top1    float64
	Entropy float64 // mean entropy of the training targets (nats); NaN if not logged
}

var subscripts = []string{"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"}

// FromRuns converts finished stored runs into entries; runs that are not
// done are skipped and counted. Runs store accuracies as fractions (what lcl
// train writes); entries and everything printed are in percent.
func FromRuns(runs []simstore.Run) (entries []Entry, skipped int, err error) {
	// Runs of several presets (a grid's recipe axis) are told apart by a
	// method name that ends in the preset's.
	presets := map[string]bool{}
	for _, r := range runs {
		presets[r.Config.Preset] = true
	}
	for _, r := range runs {
		if r.Status != simstore.RunDone || len(r.Top1) == 0 {
			skipped++
			continue
		}
		c := r.Config
		curves, err := parseEpochs(r.Epochs, len(r.Top1))
		if err != nil {
			return nil, 0, fmt.Errorf("run %s: epochs: %w", r.ID, err)
		}
		selected, err := selectedEpochs(r.Epochs)
		if err != nil {
			return nil, 0, fmt.Errorf("run %s: epochs: %w", r.ID, err)
		}
		method := c.Method()
		if len(presets) > 1 {
			method += " [" + cmp.Or(c.Preset, "default") + "]"
		}
		for i, top1 := range r.Top1 {
			m := method
			if len(r.Top1) > 1 && i+1 < len(subscripts) {
				name := strings.ToUpper(c.Strategy)
				m = name + subscripts[i+1] + strings.TrimPrefix(method, name)
			}
			top5 := math.NaN()
			if i < len(r.Top5) {
				top5 = 100 * r.Top5[i]
			}
			var hier map[string]float64
			for name, v := range r.Hier {
				if i < len(v) {
					if hier == nil {
						hier = map[string]float64{}
					}
					hier[name] = v[i]
				}
			}
			entries = append(entries, Entry{RunID: r.ID, Dataset: dataset(c), Model: c.Model,
				Fraction: c.Fraction, Strategy: c.Strategy, Method: m, Seed: c.Seed,
				Top1: 100 * top1, Top5: top5, Hier: hier, Curve: curves[i], Trained: len(curves[i])})
			if i < len(selected) {
				entries[len(entries)-1].Selected = selected[i]
			}
		}
	}
	return entries, skipped, nil
}

// dataset names a run's data set in tables: its label set, else the kind of
// its data spec (a run trained by hand on --data alone).
func dataset(c simstore.RunConfig) string {
	if c.Labels != "" {
		return c.Labels
	}
	kind, _, _ := strings.Cut(c.Data, "?")
	kind, _, _ = strings.Cut(kind, ":")
	return kind
}

// parseEpochs reads the per-epoch log: each object has "epoch", "top1" (a
// number or one per model) and optionally "target_entropy" (or "entropy").
func parseEpochs(raw json.RawMessage, models int) ([][]EpochPoint, error) {
	curves := make([][]EpochPoint, models)
	if len(raw) == 0 {
		return curves, nil
	}
	var epochs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &epochs); err != nil {
		return nil, err
	}
	for i, e := range epochs {
		var n int
		if v, ok := e["epoch"]; ok {
			if err := json.Unmarshal(v, &n); err != nil {
				return nil, fmt.Errorf("epoch %d: epoch: %w", i, err)
			}
		} else {
			n = i + 1
		}
		top1, err := numbers(e["top1"])
		if err != nil {
			return nil, fmt.Errorf("epoch %d: top1: %w", n, err)
		}
		ent := []float64{math.NaN()}
		for _, key := range []string{"target_entropy", "entropy"} {
			if v, ok := e[key]; ok {
				if ent, err = numbers(v); err != nil {
					return nil, fmt.Errorf("epoch %d: %s: %w", n, key, err)
				}
				break
			}
		}
		for m := 0; m < models; m++ {
			p := EpochPoint{Epoch: n, Top1: math.NaN(), Entropy: math.NaN()}
			if m < len(top1) {
				p.Top1 = 100 * top1[m]
			}
			if m < len(ent) {
				p.Entropy = ent[m]
			} else if len(ent) == 1 {
				p.Entropy = ent[0]
			}
			curves[m] = append(curves[m], p)
		}
	}
	return curves, nil
}

// selectedEpochs is model selection's pick per model: the best_epoch of
// the log's last epoch (nil when the run selected nothing).
func selectedEpochs(raw json.RawMessage) ([]int, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var epochs []struct {
		Best []int `json:"best_epoch"`
	}
	if err := json.Unmarshal(raw, &epochs); err != nil {
		return nil, err
	}
	if len(epochs) == 0 {
		return nil, nil
	}
	return epochs[len(epochs)-1].Best, nil
}

func numbers(raw json.RawMessage) ([]float64, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var one float64
	if err := json.Unmarshal(raw, &one); err == nil {
		return []float64{one}, nil
	}
	var many []float64
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("expected a number or a list of numbers, got %s", raw)
	}
	return many, nil
}

// methodOrder puts the paper's columns first: SL, LS, KD, DML, CN, then LCL
// and anything else, each group by name.
func methodOrder(strategy string) int {
	switch strings.ToLower(strategy) {
	case "sl":
		return 0
	case "ls":
		return 1
	case "kd":
		return 2
	case "dml":
		return 3
	case "cn":
		return 4
	case "lcl":
		return 5
	}
	return 6
}

// methods returns the methods present in entries, in column order.
func methods(entries []Entry) []string {
	strat := map[string]string{}
	for _, e := range entries {
		strat[e.Method] = e.Strategy
	}
	out := make([]string, 0, len(strat))
	for m := range strat {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		oi, oj := methodOrder(strat[out[i]]), methodOrder(strat[out[j]])
		if oi != oj {
			return oi < oj
		}
		return out[i] < out[j]
	})
	return out
}

func uniqueSorted[T string | float64 | int](xs []T) []T {
	seen := map[T]bool{}
	var out []T
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
