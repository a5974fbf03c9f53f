package similarity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/lcl-project/lcl/internal/digest"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/wordnet"
)

// Graph choices of the simrank and lca sources (parameter "graph"); any
// other value is an edge-list file ("child parent" per line).
const (
	GraphWordNet   = "wordnet"   // hypernym DAG of the classes' synsets up to entity
	GraphHierarchy = "hierarchy" // the label set's own tree (NABirds)
)

// WordNetFunc opens WordNet when a source first needs it.
type WordNetFunc func() (*wordnet.DB, error)

// labelGraph is a resolved "graph" parameter.
type labelGraph struct {
	g       *Graph
	kind    string // wordnet, hierarchy, file
	name    string // kind, or the edge-list file
	digest  string
	classes []int // class → node
}

func resolveGraph(set *labels.Set, p *params, openWN WordNetFunc) (*labelGraph, error) {
	def := GraphWordNet
	if len(set.Hierarchy) > 0 {
		def = GraphHierarchy
	}
	choice := p.strOr("graph", def)
	lg := &labelGraph{kind: choice, name: choice}
	var err error
	switch choice {
	case GraphWordNet:
		for _, c := range set.Classes {
			if c.WNID == "" {
				return nil, fmt.Errorf("graph wordnet: class %s of %s has no wnid; give --graph hierarchy or --graph FILE", c.ID, set.Name)
			}
		}
		if openWN == nil {
			return nil, fmt.Errorf("graph wordnet: WordNet is not available")
		}
		wn, err := openWN()
		if err != nil {
			return nil, err
		}
		if lg.g, err = WordNetGraph(wn, set.WNIDs()); err != nil {
			return nil, err
		}
		lg.digest = graphDigest(lg.g)
	case GraphHierarchy:
		if len(set.Hierarchy) == 0 {
			return nil, fmt.Errorf("label set %s has no built-in hierarchy; give --graph wordnet or --graph FILE", set.Name)
		}
		if lg.g, err = HierarchyGraph(set.Hierarchy); err != nil {
			return nil, fmt.Errorf("hierarchy of %s: %w", set.Name, err)
		}
		lg.digest = graphDigest(lg.g)
	default:
		if _, err := os.Stat(choice); err != nil {
			return nil, fmt.Errorf("graph %q: not %s, %s or a readable edge-list file", choice, GraphWordNet, GraphHierarchy)
		}
		if lg.g, err = ReadEdgeListFile(choice); err != nil {
			return nil, err
		}
		if lg.digest, err = digest.File(choice); err != nil {
			return nil, err
		}
		lg.kind, lg.name = "file", choice
		p.effective["graph"] = "file" // the digest identifies the content
	}
	if lg.classes, err = lg.g.ClassNodes(set); err != nil {
		return nil, fmt.Errorf("graph %s: %w", lg.kind, err)
	}
	return lg, nil
}

func graphDigest(g *Graph) string {
	h := sha256.New()
	for c, ps := range g.Parents {
		for _, p := range ps {
			fmt.Fprintf(h, "%s %s\n", g.Nodes[c], g.Nodes[p])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (lg *labelGraph) inputs(set *labels.Set) map[string]string {
	return map[string]string{"classes": ClassesDigest(set), "graph": lg.digest}
}

func (lg *labelGraph) note() string {
	return fmt.Sprintf("graph: %s, %d nodes, %d edges", lg.kind, len(lg.g.Nodes), lg.g.Edges())
}

// SimRankSource is SimRank on a label graph.
//
// Parameters: "graph" (wordnet, hierarchy or an edge-list file; default
// hierarchy where the set has one, else wordnet), "decay" (C, default 0.8),
// "iterations" (maximum, default 1000), "tolerance" (default 1e-6: stop when
// no score changes by more), "variant" (jeh-widom, star, undirected).
//
// Graphs of up to MaxSimRankNodes nodes are iterated densely in float64
// (SimRank). Beyond, plain SimRank computes only the classes' block from
// the internal nodes (simrankClasses: ImageNet-21k's 23,547-node WordNet
// closure in 2.2 GB), and the star and undirected variants, which need the
// dense form, run while their three n×n float64 matrices fit MaxMemory.
type SimRankSource struct {
	WordNet  WordNetFunc
	Progress ProgressFunc // optional, one unit per iteration
	// MaxMemory bounds what a computation may plan to hold, in bytes
	// (0: DefaultMaxMemory); a larger one is refused up front.
	MaxMemory int64
}

// Name implements Source.
func (SimRankSource) Name() string { return "simrank" }

func (s SimRankSource) resolve(set *labels.Set, in map[string]string) (*params, *labelGraph, SimRankOptions, error) {
	p, err := newParams(in, "simrank")
	if err != nil {
		return nil, nil, SimRankOptions{}, err
	}
	var opt SimRankOptions
	if opt.Decay, err = p.float("decay"); err != nil {
		return nil, nil, opt, err
	}
	if opt.Iterations, err = p.int("iterations"); err != nil {
		return nil, nil, opt, err
	}
	if opt.Tolerance, err = p.float("tolerance"); err != nil {
		return nil, nil, opt, err
	}
	if opt.Variant, err = p.choice("variant", VariantJehWidom, VariantStar, VariantUndirected); err != nil {
		return nil, nil, opt, err
	}
	if !(opt.Decay > 0 && opt.Decay < 1) {
		return nil, nil, opt, fmt.Errorf("decay %v must lie strictly between 0 and 1", opt.Decay)
	}
	if opt.Iterations < 1 || !(opt.Tolerance > 0) {
		return nil, nil, opt, fmt.Errorf("iterations (%d) and tolerance (%v) must be positive", opt.Iterations, opt.Tolerance)
	}
	lg, err := resolveGraph(set, p, s.WordNet)
	if err != nil {
		return nil, nil, opt, err
	}
	if err := s.checkSize(lg, set.Len(), opt.Variant); err != nil {
		return nil, nil, opt, fmt.Errorf("graph %s: %w", lg.name, err)
	}
	return p, lg, opt, nil
}

// dense reports whether SimRank runs in the dense float64 form on a graph
// of n nodes: always up to MaxSimRankNodes, and beyond for the variants
// that have no other form.
func dense(n int, variant string) bool {
	return n <= MaxSimRankNodes || variant != VariantJehWidom
}

// checkSize refuses a graph whose SimRank would not fit MaxMemory, with the
// estimate and what would make it fit.
func (s SimRankSource) checkSize(lg *labelGraph, c int, variant string) error {
	n := int64(len(lg.g.Nodes))
	if !dense(int(n), variant) {
		m := int64(internalNodes(lg.g))
		what := fmt.Sprintf("SimRank of %d classes (%d nodes, %d of them internal: a %d×%d float64 block and the %d×%d float32 class matrix)", c, n, m, m, m, c, c)
		return checkMemory(what, 8*m*m+MatrixBytes(c), s.MaxMemory)
	}
	if n <= MaxSimRankNodes {
		return nil
	}
	what := fmt.Sprintf("SimRank variant %s on %d nodes (3 dense %d×%d float64 matrices; --variant %s computes only the classes' block)", variant, n, n, n, VariantJehWidom)
	return checkMemory(what, 24*n*n, s.MaxMemory)
}

// internalNodes counts the nodes that are some node's parent.
func internalNodes(g *Graph) int {
	seen := make([]bool, len(g.Nodes))
	m := 0
	for _, ps := range g.Parents {
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				m++
			}
		}
	}
	return m
}

// Prepare implements Preparer.
func (s SimRankSource) Prepare(_ context.Context, set *labels.Set, in map[string]string) (Provenance, error) {
	p, lg, _, err := s.resolve(set, in)
	if err != nil {
		return Provenance{}, err
	}
	return Provenance{Params: p.effective, Inputs: lg.inputs(set)}, nil
}

// Compute implements Source.
func (s SimRankSource) Compute(ctx context.Context, set *labels.Set, in map[string]string) (*Result, error) {
	p, lg, opt, err := s.resolve(set, in)
	if err != nil {
		return nil, err
	}
	bar := s.Progress.start(-1, "simrank "+opt.Variant)
	defer bar.Finish()
	opt.Progress = bar
	var data []float32
	var st SimRankStats
	n := len(lg.g.Nodes)
	if dense(n, opt.Variant) {
		var full []float64
		var err error
		if n <= MaxSimRankNodes {
			full, st, err = SimRank(ctx, lg.g, opt)
		} else {
			full, st, err = simrankDense(ctx, lg.g, opt)
		}
		if err != nil {
			return nil, err
		}
		data = submatrix32(full, n, lg.classes)
	} else {
		var err error
		if data, st, err = simrankClasses(ctx, lg.g, lg.classes, opt); err != nil {
			return nil, err
		}
	}
	c := set.Len()
	return &Result{
		Classes:    ClassIDs(set),
		Data:       data,
		Provenance: Provenance{Params: p.effective, Inputs: lg.inputs(set)},
		Notes: []string{
			lg.note(),
			fmt.Sprintf("iterations: %d (last change %.3g)", st.Iterations, st.Delta),
			fmt.Sprintf("zero pairs: %.1f%% of %d class pairs", 100*ZeroShare(data, c), c*(c-1)/2),
		},
	}, nil
}
