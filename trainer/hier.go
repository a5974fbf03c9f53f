package trainer

import "math"

// Hierarchy is the cost of confusing two classes that the hierarchy-aware
// metrics count: similarity.Hierarchy, the height of the classes' lowest
// common ancestor in the label graph (0 for a class and itself).
type Hierarchy interface {
	Distance(i, j int) float64
}

// HierMetrics are the hierarchy-aware figures of an evaluation, as
// Bertinetto et al. (CVPR 2020, "Making better mistakes") define them with
// the costs of a Hierarchy: MistakeSeverity is the mean cost of the top-1
// prediction over the examples it gets wrong (0 when there is none, with
// Mistakes 0); HDistK is the mean over every example of the mean cost of
// its K best classes (K capped at the class count), so HDist1 counts the
// correct predictions as 0.
//
// MistakesByHeight is the distribution behind MistakeSeverity (Karthik et
// al., ICLR 2021: a mean severity can fall because a method adds
// low-severity mistakes, so read it with top-1 and this): element h counts
// the top-1 mistakes whose cost (the LCA height, rounded to a whole number)
// is h, the last element counting those of HierHeights−1 and more; it ends
// at the greatest height with a mistake (empty without mistakes).
type HierMetrics struct {
	MistakeSeverity  float64 `json:"mistake_severity"`
	Mistakes         int64   `json:"mistakes"`
	MistakesByHeight []int64 `json:"mistakes_by_height,omitempty"`
	HDist1           float64 `json:"hdist1"`
	HDist5           float64 `json:"hdist5"`
	HDist20          float64 `json:"hdist20"`
}

// HierHeights is how many heights MistakesByHeight tells apart (0 to
// HierHeights−2, and the rest): more than WordNet's deepest LCA needs
// (ImageNet-21k's is below 20), and a fixed size, so that the sums add
// over ranks as one vector.
const HierHeights = 32

// hierKs are the k of the hierarchical distances @k, the last the most
// classes an evaluation asks the engine for.
var hierKs = [3]int{1, 5, 20}

// hierTopK is how many of its best classes per example an evaluation of c
// classes needs.
func hierTopK(c int) int { return min(hierKs[len(hierKs)-1], c) }

// hierSums are the sums behind HierMetrics: the mistakes of the top-1
// prediction, their cost, per k of hierKs the per-example mean costs of
// the k best classes, then the mistakes by height (HierHeights). They add
// over batches and ranks.
type hierSums [2 + len(hierKs) + HierHeights]float64

// sumHeights is where the mistakes by height start in hierSums.
const sumHeights = 2 + len(hierKs)

// add adds the n examples of labels y whose k best classes (best first)
// are top (n×k) to s.
func (s *hierSums) add(h Hierarchy, y []int64, top []int32, k int) {
	for e, label := range y {
		row := top[e*k : (e+1)*k]
		t := int(label)
		if int(row[0]) != t {
			d := h.Distance(t, int(row[0]))
			s[0]++
			s[1] += d
			s[sumHeights+heightBin(d)]++
		}
		var sum float64
		at := 0
		for r, c := range row {
			sum += h.Distance(t, int(c))
			for ; at < len(hierKs) && min(hierKs[at], k) == r+1; at++ {
				s[2+at] += sum / float64(r+1)
			}
		}
	}
}

// heightBin is the MistakesByHeight element of a mistake of cost d.
func heightBin(d float64) int {
	if !(d >= 0) {
		return 0 // a Hierarchy's costs are ≥ 0; NaN counts at 0 rather than nowhere
	}
	return int(min(math.Round(d), HierHeights-1))
}

// metrics are the figures of n examples.
func (s hierSums) metrics(n float64) *HierMetrics {
	m := &HierMetrics{Mistakes: int64(s[0]), HDist1: s[2] / n, HDist5: s[3] / n, HDist20: s[4] / n}
	if s[0] > 0 {
		m.MistakeSeverity = s[1] / s[0]
	}
	bins := s[sumHeights:]
	last := len(bins) - 1
	for last >= 0 && bins[last] == 0 {
		last--
	}
	for _, c := range bins[:last+1] {
		m.MistakesByHeight = append(m.MistakesByHeight, int64(c))
	}
	return m
}
