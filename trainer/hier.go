package trainer

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
type HierMetrics struct {
	MistakeSeverity float64 `json:"mistake_severity"`
	Mistakes        int64   `json:"mistakes"`
	HDist1          float64 `json:"hdist1"`
	HDist5          float64 `json:"hdist5"`
	HDist20         float64 `json:"hdist20"`
}

// hierKs are the k of the hierarchical distances @k, the last the most
// classes an evaluation asks the engine for.
var hierKs = [3]int{1, 5, 20}

// hierTopK is how many of its best classes per example an evaluation of c
// classes needs.
func hierTopK(c int) int { return min(hierKs[len(hierKs)-1], c) }

// hierSums are the sums behind HierMetrics: the mistakes of the top-1
// prediction, their cost, and per k of hierKs the per-example mean costs
// of the k best classes. They add over batches and ranks.
type hierSums [2 + len(hierKs)]float64

// add adds the n examples of labels y whose k best classes (best first)
// are top (n×k) to s.
func (s *hierSums) add(h Hierarchy, y []int64, top []int32, k int) {
	for e, label := range y {
		row := top[e*k : (e+1)*k]
		t := int(label)
		if int(row[0]) != t {
			s[0]++
			s[1] += h.Distance(t, int(row[0]))
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

// metrics are the figures of n examples.
func (s hierSums) metrics(n float64) *HierMetrics {
	m := &HierMetrics{Mistakes: int64(s[0]), HDist1: s[2] / n, HDist5: s[3] / n, HDist20: s[4] / n}
	if s[0] > 0 {
		m.MistakeSeverity = s[1] / s[0]
	}
	return m
}
