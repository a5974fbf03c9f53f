package similarity

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/wordnet"
)

// Graph is a directed label graph with edges parent → child. Node i's
// in-neighbours (its parents) are Parents[i]. A Graph built by this package
// has no cycles.
type Graph struct {
	Nodes   []string // node ids, in a fixed order
	Parents [][]int  // Parents[i] = indices of i's parents, ascending
	index   map[string]int
}

// Index returns the node index of id.
func (g *Graph) Index(id string) (int, bool) {
	i, ok := g.index[id]
	return i, ok
}

// Edges is the number of parent → child edges.
func (g *Graph) Edges() int {
	n := 0
	for _, p := range g.Parents {
		n += len(p)
	}
	return n
}

// Children returns, for every node, the indices of its children.
func (g *Graph) Children() [][]int {
	ch := make([][]int, len(g.Nodes))
	for c, ps := range g.Parents {
		for _, p := range ps {
			ch[p] = append(ch[p], c)
		}
	}
	return ch
}

// graphBuilder collects nodes and edges by id.
type graphBuilder struct {
	g     *Graph
	edges map[[2]int]bool
}

func newGraphBuilder() *graphBuilder {
	return &graphBuilder{g: &Graph{index: map[string]int{}}, edges: map[[2]int]bool{}}
}

func (b *graphBuilder) node(id string) int {
	if i, ok := b.g.index[id]; ok {
		return i
	}
	i := len(b.g.Nodes)
	b.g.index[id] = i
	b.g.Nodes = append(b.g.Nodes, id)
	b.g.Parents = append(b.g.Parents, nil)
	return i
}

func (b *graphBuilder) edge(parent, child string) {
	p, c := b.node(parent), b.node(child)
	if b.edges[[2]int{p, c}] {
		return
	}
	b.edges[[2]int{p, c}] = true
	b.g.Parents[c] = append(b.g.Parents[c], p)
}

// finish sorts parent lists and rejects cycles and self-loops.
func (b *graphBuilder) finish() (*Graph, error) {
	for _, ps := range b.g.Parents {
		sort.Ints(ps)
	}
	if cyc := findCycle(b.g); cyc != nil {
		names := make([]string, len(cyc))
		for i, n := range cyc {
			names[i] = b.g.Nodes[n]
		}
		return nil, fmt.Errorf("graph has a cycle: %s (a hierarchy must be acyclic)", strings.Join(names, " → "))
	}
	return b.g, nil
}

// findCycle returns the nodes of one cycle (first node repeated at the end,
// written parent → child), or nil when the graph is acyclic.
func findCycle(g *Graph) []int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(g.Nodes))
	// Walk parent pointers iteratively; on reaching a grey node the stack
	// between its two visits is a cycle.
	for start := range g.Nodes {
		if color[start] != white {
			continue
		}
		type frame struct{ node, next int }
		stack := []frame{{start, 0}}
		color[start] = grey
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			ps := g.Parents[top.node]
			if top.next == len(ps) {
				color[top.node] = black
				stack = stack[:len(stack)-1]
				continue
			}
			p := ps[top.next]
			top.next++
			switch color[p] {
			case grey:
				// The stack runs child → parent from start; p is on it. Report
				// the cycle parent → child: p, top, ..., p.
				out := []int{p}
				for k := len(stack) - 1; k >= 0; k-- {
					out = append(out, stack[k].node)
					if stack[k].node == p {
						break
					}
				}
				return out
			case white:
				color[p] = grey
				stack = append(stack, frame{p, 0})
			}
		}
	}
	return nil
}

// WordNetGraph is the hypernym DAG of the given synsets: every ancestor up to
// entity (hypernyms and instance hypernyms), edges parent → child. Nodes are
// ordered as first met: the synsets themselves in the given order, then their
// ancestors breadth first.
func WordNetGraph(wn *wordnet.DB, wnids []string) (*Graph, error) {
	b := newGraphBuilder()
	queue := make([]string, 0, len(wnids))
	seen := map[string]bool{}
	for _, id := range wnids {
		if id == "" {
			return nil, fmt.Errorf("wordnet graph: a class has no wnid")
		}
		b.node(id)
		if !seen[id] {
			seen[id] = true
			queue = append(queue, id)
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		s, err := wn.Synset(id)
		if err != nil {
			return nil, fmt.Errorf("wordnet graph: %w", err)
		}
		for _, p := range s.Parents() {
			b.edge(p, id)
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return b.finish()
}

// HierarchyGraph builds the graph of a label hierarchy (e.g. NABirds):
// each node with a parent gives the edge parent → node.
func HierarchyGraph(nodes []labels.Node) (*Graph, error) {
	b := newGraphBuilder()
	for _, n := range nodes {
		b.node(n.ID)
	}
	for _, n := range nodes {
		if n.Parent != "" {
			b.edge(n.Parent, n.ID)
		}
	}
	return b.finish()
}

// ReadEdgeList reads a graph from lines "child parent" (whitespace- or
// comma-separated); blank lines and lines starting with '#' are ignored.
// name is used in errors.
func ReadEdgeList(r io.Reader, name string) (*Graph, error) {
	b := newGraphBuilder()
	sc := bounded.NewScanner(r, 1<<20)
	for sc.Scan() {
		line := sc.Line()
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := splitFields(text)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"child parent\", got %d fields", name, line, len(f))
		}
		if f[0] == f[1] {
			return nil, fmt.Errorf("%s:%d: %s is its own parent (a hierarchy must be acyclic)", name, line, f[0])
		}
		b.edge(f[1], f[0])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b.g.Nodes) == 0 {
		return nil, fmt.Errorf("%s: no edges", name)
	}
	g, err := b.finish()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return g, nil
}

// ReadEdgeListFile is ReadEdgeList on a file.
func ReadEdgeListFile(path string) (*Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadEdgeList(f, path)
}

// splitFields splits on commas, tabs and spaces.
func splitFields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == ';' })
}

// ClassNodes maps each class to its node: by class id, else by wnid, else by
// name. A class with no node is an error naming it.
func (g *Graph) ClassNodes(set *labels.Set) ([]int, error) {
	out := make([]int, len(set.Classes))
	for i, c := range set.Classes {
		found := false
		for _, key := range []string{c.ID, c.WNID, c.Name} {
			if key == "" {
				continue
			}
			if n, ok := g.index[key]; ok {
				out[i], found = n, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("class %d (%s) is not a node of the graph", i, c.ID)
		}
	}
	return out, nil
}
