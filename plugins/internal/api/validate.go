package api

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
)

// RowSumTolerance is how far a target row may sum from 1.
const RowSumTolerance = 1e-6

// ValidatePlan checks a plan for a run with C classes, n examples and a
// stage training peers models together: targets C×C, finite, non-negative, rows
// summing to 1; weights one per example, finite, non-negative; subset
// indices in range and distinct; coefficients finite and non-negative, a
// positive temperature when KD is used, and mutual learning only with peers.
func ValidatePlan(p *Plan, c, n, peers int) error {
	if p == nil {
		return fmt.Errorf("empty plan")
	}
	if t := p.Targets; t != nil {
		if err := checkShape(t, c, "target matrix"); err != nil {
			return err
		}
		if err := eachRow(t, func(i int, row []float32) error {
			// Four partial sums: the additions do not wait on each other
			// (a 21,843-class plan is 477 M values, checked every epoch).
			var s [4]float64
			j := 0
			for ; j+4 <= len(row); j += 4 {
				a, b, c, d := row[j], row[j+1], row[j+2], row[j+3]
				// A finite value ≥ 0 passes; NaN fails every comparison.
				if !(a >= 0 && a <= math.MaxFloat32 && b >= 0 && b <= math.MaxFloat32 &&
					c >= 0 && c <= math.MaxFloat32 && d >= 0 && d <= math.MaxFloat32) {
					break
				}
				s[0] += float64(a)
				s[1] += float64(b)
				s[2] += float64(c)
				s[3] += float64(d)
			}
			for ; j < len(row); j++ {
				if v := row[j]; !(v >= 0 && v <= math.MaxFloat32) {
					return fmt.Errorf("target[%d][%d] = %g, want a finite value ≥ 0", i, j, v)
				}
				s[0] += float64(row[j])
			}
			if sum := s[0] + s[1] + s[2] + s[3]; math.Abs(sum-1) > RowSumTolerance {
				return fmt.Errorf("target row %d sums to %.9g, want 1", i, sum)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if p.Weights != nil {
		if len(p.Weights) != n {
			return fmt.Errorf("%d example weights, want %d (one per training example)", len(p.Weights), n)
		}
		for i, w := range p.Weights {
			if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
				return fmt.Errorf("weight of example %d = %g, want a finite value ≥ 0", i, w)
			}
		}
	}
	if p.Subset != nil {
		seen := make([]bool, n)
		for _, i := range p.Subset {
			if i < 0 || i >= n {
				return fmt.Errorf("subset index %d out of range [0,%d)", i, n)
			}
			if seen[i] {
				return fmt.Errorf("subset lists example %d twice", i)
			}
			seen[i] = true
		}
		if len(p.Subset) == 0 {
			return fmt.Errorf("subset is empty: nothing to train on")
		}
	}
	if p.Groups != nil {
		if err := validateGroups(p.Groups, c); err != nil {
			return fmt.Errorf("class groups: %w", err)
		}
	}
	if v := p.Classifier; v != nil {
		if err := checkClassifier(v, c); err != nil {
			return err
		}
	}
	return validateCoefs(p, peers)
}

// validateCoefs checks a plan's coefficients: finite and non-negative, not
// all 0, and each term with what it needs (its groups, classifier,
// temperature or peers).
func validateCoefs(p *Plan, peers int) error {
	co := p.Coefs
	weights := 0.0 // the sum of the terms' weights (τ is not one)
	for _, t := range co.Terms() {
		if math.IsNaN(t.Value) || math.IsInf(t.Value, 0) || t.Value < 0 {
			return fmt.Errorf("coefficient %s = %g, want a finite value ≥ 0", t.Proto, t.Value)
		}
		if t.Proto != "temperature" {
			weights += t.Value
		}
	}
	if weights == 0 {
		return fmt.Errorf("all loss coefficients are 0")
	}
	if co.Cosine > 0 && p.Classifier == nil {
		return fmt.Errorf("cosine coefficient %g needs a fixed classifier (the plan has none)", co.Cosine)
	}
	if co.Group > 0 && p.Groups == nil {
		return fmt.Errorf("group coefficient %g needs class groups (the plan has none)", co.Group)
	}
	if co.KD > 0 && co.KDTemperature <= 0 {
		return fmt.Errorf("kd coefficient %g needs a temperature > 0", co.KD)
	}
	if co.Mutual > 0 && peers < 2 {
		return fmt.Errorf("mutual coefficient %g needs a stage with 2 or more models, this one has %d", co.Mutual, peers)
	}
	return nil
}

// MaxGroupCells bounds G×C of a plan's class groups: the trainer holds the
// membership (G×C) and the weights (C×G) as dense matrices on the device
// (256 MiB each at this bound; ImageNet-1k's WordNet tree needs ~2 M).
const MaxGroupCells = 1 << 26

// validateGroups checks class groups for c classes: at least one group,
// none empty, classes in range and listed once per group, weights at
// distinct (class, group) cells in range and finite (they may be negative:
// HXE's are differences along a path).
func validateGroups(g *Groups, c int) error {
	n := len(g.Members)
	if n == 0 {
		return fmt.Errorf("no groups")
	}
	if int64(n)*int64(c) > MaxGroupCells {
		return fmt.Errorf("%d groups of %d classes need %d cells, more than the %d the trainer holds", n, c, int64(n)*int64(c), MaxGroupCells)
	}
	seen := make(map[int]int, c)
	for gi, m := range g.Members {
		if len(m) == 0 {
			return fmt.Errorf("group %d is empty", gi)
		}
		for _, k := range m {
			if k < 0 || k >= c {
				return fmt.Errorf("group %d lists class %d, want a class index in [0,%d)", gi, k, c)
			}
			if seen[k] == gi+1 {
				return fmt.Errorf("group %d lists class %d twice", gi, k)
			}
			seen[k] = gi + 1
		}
	}
	cells := make(map[[2]int]bool, len(g.Weights))
	for i, w := range g.Weights {
		if w.Class < 0 || w.Class >= c || w.Group < 0 || w.Group >= n {
			return fmt.Errorf("weight %d is at class %d, group %d, want a class in [0,%d) and a group in [0,%d)", i, w.Class, w.Group, c, n)
		}
		if math.IsNaN(w.W) || math.IsInf(w.W, 0) {
			return fmt.Errorf("weight of class %d, group %d = %g, want a finite value", w.Class, w.Group, w.W)
		}
		if cells[[2]int{w.Class, w.Group}] {
			return fmt.Errorf("weight of class %d, group %d given twice", w.Class, w.Group)
		}
		cells[[2]int{w.Class, w.Group}] = true
	}
	return nil
}

// Limits on what Begin may return: a stage's name becomes a folder name
// (lcl plan writes OUT/STAGE/), and its epochs and peers decide how long
// and how much a run trains.
const (
	MaxStages      = 16
	MaxStageEpochs = 100000
	MaxStagePeers  = 16
	maxStageName   = 64
)

// ValidStageName reports whether name is a plain name: 1 to 64 letters,
// digits, '_', '-' or '.', starting with a letter or digit (so never a
// path, ".", ".." or hidden).
func ValidStageName(name string) bool {
	if name == "" || len(name) > maxStageName {
		return false
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// ValidateStages checks what Begin returned.
func ValidateStages(stages []Stage) error {
	if len(stages) == 0 {
		return fmt.Errorf("no stages")
	}
	if len(stages) > MaxStages {
		return fmt.Errorf("%d stages, at most %d", len(stages), MaxStages)
	}
	seen := map[string]int{}
	for i, s := range stages {
		if !ValidStageName(s.Name) {
			return fmt.Errorf("stage %d: name %q is not a plain name (1 to %d letters, digits, '_', '-', '.', starting with a letter or digit)", i, trunc(s.Name), maxStageName)
		}
		if j, dup := seen[s.Name]; dup {
			return fmt.Errorf("stage %d: name %q repeats stage %d", i, s.Name, j)
		}
		seen[s.Name] = i
		switch {
		case s.Epochs < 0 || s.Epochs > MaxStageEpochs:
			return fmt.Errorf("stage %d (%s): %d epochs, want 0 (the run's) to %d", i, s.Name, s.Epochs, MaxStageEpochs)
		case s.Peers < 1 || s.Peers > MaxStagePeers:
			return fmt.Errorf("stage %d (%s): %d models, want 1 to %d", i, s.Name, s.Peers, MaxStagePeers)
		case s.Teacher >= i || s.Teacher < -1:
			return fmt.Errorf("stage %d (%s): teacher stage %d must be an earlier stage or -1", i, s.Name, s.Teacher)
		case i == 0 && !s.Fresh:
			return fmt.Errorf("stage 0 (%s) must start fresh", s.Name)
		case len(s.Model) > 256:
			return fmt.Errorf("stage %d (%s): model name of %d bytes", i, s.Name, len(s.Model))
		}
	}
	return nil
}

// MaxLevels bounds a stage's levels (Stage.Levels): one head each.
const MaxLevels = 64

// ValidateLevels checks a stage's levels for c classes: at most MaxLevels,
// each a partition of the c classes into 2 to c groups with every group
// used, and each nested in the next (the classes of one group of a level
// share their group in every coarser level), as the engine's consistency
// and geometric terms sum a finer level into a coarser one.
func ValidateLevels(levels []Level, c int) error {
	if len(levels) > MaxLevels {
		return fmt.Errorf("%d levels, at most %d", len(levels), MaxLevels)
	}
	for l, lv := range levels {
		if lv.Groups < 2 || lv.Groups > c {
			return fmt.Errorf("level %d has %d groups, want 2 to %d (the classes)", l, lv.Groups, c)
		}
		if len(lv.Group) != c {
			return fmt.Errorf("level %d gives a group for %d classes, want %d", l, len(lv.Group), c)
		}
		used := make([]bool, lv.Groups)
		for k, g := range lv.Group {
			if g < 0 || g >= lv.Groups {
				return fmt.Errorf("level %d puts class %d in group %d, want one in [0,%d)", l, k, g, lv.Groups)
			}
			used[g] = true
		}
		if i := slices.Index(used, false); i >= 0 {
			return fmt.Errorf("level %d: group %d holds no class", l, i)
		}
		if l == 0 {
			continue
		}
		// parent[h] is the group of level l that group h of level l−1 lies in.
		prev := levels[l-1]
		parent := make([]int, prev.Groups)
		for i := range parent {
			parent[i] = -1
		}
		for k, h := range prev.Group {
			if p := parent[h]; p >= 0 && p != lv.Group[k] {
				return fmt.Errorf("level %d is not nested in level %d: group %d of level %d spans its groups %d and %d", l, l-1, h, l-1, p, lv.Group[k])
			}
			parent[h] = lv.Group[k]
		}
	}
	return nil
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// ValidateSimilarity checks a similarity matrix for c classes: c×c, finite.
func ValidateSimilarity(m *Matrix, c int) error {
	if m == nil {
		return fmt.Errorf("no matrix")
	}
	if err := checkShape(m, c, "matrix"); err != nil {
		return err
	}
	row := make([]float32, c)
	for i := 0; i < c; i++ {
		for j, v := range m.RowInto(i, row) {
			if v-v != 0 { // NaN or ±Inf
				return fmt.Errorf("s[%d][%d] = %g, want a finite value", i, j, v)
			}
		}
	}
	return nil
}

// eachRow runs check on every row of m, the rows of a large matrix split
// over every CPU (a 21,843-class plan is checked every epoch), and returns
// the error of the first failing row.
func eachRow(m *Matrix, check func(i int, row []float32) error) error {
	w := runtime.GOMAXPROCS(0)
	if m.Rows*m.Cols < 1<<22 || w == 1 {
		row := make([]float32, m.Cols)
		for i := 0; i < m.Rows; i++ {
			if err := check(i, m.RowInto(i, row)); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, w)
	var wg sync.WaitGroup
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row := make([]float32, m.Cols)
			for i := m.Rows * k / w; i < m.Rows*(k+1)/w; i++ {
				if err := check(i, m.RowInto(i, row)); err != nil {
					errs[k] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs { // in row order: part k holds lower rows than k+1
		if err != nil {
			return err
		}
	}
	return nil
}

// checkShape checks that m is c×c and holds (or fills) c² values.
func checkShape(m *Matrix, c int, what string) error {
	n := len(m.Data)
	if m.Data == nil && m.Fill != nil {
		n = m.Rows * m.Cols
	}
	if m.Rows != c || m.Cols != c || n != c*c {
		return fmt.Errorf("%s is %d×%d with %d values, want %d×%d", what, m.Rows, m.Cols, n, c, c)
	}
	return nil
}

// checkClassifier checks a fixed classifier for c classes: c rows of k ≥ 1
// finite values, no row all zero (a class vector needs a direction).
func checkClassifier(m *Matrix, c int) error {
	n := len(m.Data)
	if m.Data == nil && m.Fill != nil {
		n = m.Rows * m.Cols
	}
	if m.Rows != c || m.Cols < 1 || n != m.Rows*m.Cols {
		return fmt.Errorf("fixed classifier is %d×%d with %d values, want %d rows (one per class) of at least 1 value",
			m.Rows, m.Cols, n, c)
	}
	return eachRow(m, func(i int, row []float32) error {
		zero := true
		for j, v := range row {
			if !(v >= -math.MaxFloat32 && v <= math.MaxFloat32) {
				return fmt.Errorf("fixed classifier[%d][%d] = %g, want a finite value", i, j, v)
			}
			zero = zero && v == 0
		}
		if zero {
			return fmt.Errorf("fixed classifier row %d is all 0, want a class vector with a direction", i)
		}
		return nil
	})
}
