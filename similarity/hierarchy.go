package similarity

import (
	"fmt"

	"github.com/lcl-project/lcl/labels"
)

// Hierarchy is the cost of confusing two classes of a label set in its label
// graph, as the hierarchy-aware metrics of Bertinetto et al. (CVPR 2020,
// "Making better mistakes") count it: the height of the classes' lowest
// common ancestor, on the graph and by the rule of the lca source's height
// form (FormHeight). A node's height is its longest path down to a leaf
// of the graph, the LCA is the common ancestor of least height (ties to
// the smallest node index), and a class and itself cost 0 (as MBM's
// DistanceDict). Two classes with no common ancestor cost the graph's
// greatest height, so that Distance(i, j) = H·(1 − s(i, j)) for the height
// form's similarity s. MBM measures on trees (every leaf at the same depth,
// or WordNet cut to a tree with single-child nodes removed), where every
// path down has the same length; here the graph is taken as it is (a
// WordNet DAG keeps its several parents and its chains), and the longest
// path down is the ILSVRC hierarchical cost's rule.
type Hierarchy struct {
	e     *lcaEngine
	graph string
}

// NewHierarchy builds the hierarchy of set on graph ("": the set's
// built-in hierarchy when it has one, else WordNet; "wordnet",
// "hierarchy" or an edge-list file, as the lca source's graph parameter).
func NewHierarchy(set *labels.Set, graph string, wn WordNetFunc) (*Hierarchy, error) {
	in := map[string]string{}
	if graph != "" {
		in["graph"] = graph
	}
	p, err := newParams(in, "lca")
	if err != nil {
		return nil, err
	}
	lg, err := resolveGraph(set, p, wn)
	if err != nil {
		return nil, err
	}
	e, err := newLCAEngine(lg.g, lg.classes, lcaHeight, nil)
	if err != nil {
		return nil, err
	}
	return &Hierarchy{e: e, graph: lg.name}, nil
}

// Graph names the graph the heights are of: wordnet, hierarchy or the
// edge-list file.
func (h *Hierarchy) Graph() string { return h.graph }

// Len is the number of classes.
func (h *Hierarchy) Len() int { return len(h.e.classes) }

// MaxHeight is the greatest height of a node of the graph.
func (h *Hierarchy) MaxHeight() int { return h.e.top }

// Distance is the height of the lowest common ancestor of classes i and
// j (0 when i == j, MaxHeight when they have none).
func (h *Hierarchy) Distance(i, j int) float64 {
	if i == j {
		return 0
	}
	e := h.e
	a0, a1, b0, b1 := e.off[i], e.off[i+1], e.off[j], e.off[j+1]
	for p, q := a0, b0; p < a1 && q < b1; {
		switch ra, rb := e.rank[p], e.rank[q]; {
		case ra == rb:
			return float64(e.height[e.node[p]])
		case ra < rb:
			p++
		default:
			q++
		}
	}
	return float64(e.top)
}

// Matrix is the C×C matrix of Distance (the cost matrix of conditional
// risk minimisation), refused when it would take more than maxMemory
// bytes (0: DefaultMaxMemory).
func (h *Hierarchy) Matrix(maxMemory int64) ([]float32, error) {
	c := h.Len()
	if err := checkMemory(fmt.Sprintf("hierarchical cost of %d classes (a %d×%d float32 matrix)", c, c, c), MatrixBytes(c), maxMemory); err != nil {
		return nil, err
	}
	out := make([]float32, c*c)
	parallelDynamic(c, func(i int) {
		for j := range c {
			out[i*c+j] = float32(h.Distance(i, j))
		}
	})
	return out, nil
}
