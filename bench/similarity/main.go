// Command similarity is lcl's side-by-side benchmark of the similarity
// sources (run by bench/similarity.sh):
//
//  1. speed: SimRank on ImageNet-1k's WordNet hypernym DAG (1,860 nodes,
//     1,937 edges), ours against networkx's simrank_similarity and a sparse
//     NumPy/SciPy iteration run in the same invocation (Debian's
//     /usr/bin/python3), with the maximum difference to networkx;
//  2. quality: for CIFAR-100 and ImageNet-1k, the share of zero class pairs
//     and the Spearman correlation with WordNet Wu-Palmer similarity of
//     plain SimRank, its remedies (SimRank*, undirected with self-loops) and
//     the LCA-height form.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/wordnet"
)

func main() {
	runs := flag.Int("runs", 5, "timed runs of our SimRank (the median is reported)")
	python := flag.String("python", "/usr/bin/python3", "Python with networkx, numpy and scipy")
	script := flag.String("reference", "testdata/similarity/simrank_reference.py", "reference script")
	quality := flag.Bool("quality", true, "also measure the remedies against Wu-Palmer")
	flag.Parse()
	if err := run(*runs, *python, *script, *quality); err != nil {
		fmt.Fprintln(os.Stderr, "bench similarity:", err)
		os.Exit(1)
	}
}

func run(runs int, python, script string, quality bool) error {
	ctx := context.Background()
	wn, err := wordnet.Open("")
	if err != nil {
		return err
	}
	set, err := labels.Builtin("imagenet")
	if err != nil {
		return err
	}
	g, err := similarity.WordNetGraph(wn, set.WNIDs())
	if err != nil {
		return err
	}
	classes, err := g.ClassNodes(set)
	if err != nil {
		return err
	}
	fmt.Printf("SimRank on ImageNet-1k's WordNet DAG: %d nodes, %d edges; C = 0.8, tolerance 1e-4\n", len(g.Nodes), g.Edges())

	opt := similarity.SimRankOptions{Decay: 0.8, Iterations: 1000, Tolerance: 1e-4}
	var times []float64
	var full []float64
	var st similarity.SimRankStats
	for i := 0; i < runs; i++ {
		t0 := time.Now()
		full, st, err = similarity.SimRank(ctx, g, opt)
		if err != nil {
			return err
		}
		times = append(times, time.Since(t0).Seconds())
	}
	sort.Float64s(times)
	ours := times[len(times)/2]
	sub := similarity.Submatrix(full, len(g.Nodes), classes)

	dir, err := os.MkdirTemp("", "lcl-bench-similarity")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeGraph(dir, g, classes); err != nil {
		return err
	}
	out := filepath.Join(dir, "ref.npy")
	cmd := exec.Command(python, script, filepath.Join(dir, "edges"), filepath.Join(dir, "nodes"), filepath.Join(dir, "classes"), "0.8", "1e-4", out, "both")
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s %s (make bench-deps installs networkx and scipy): %w", python, script, err)
	}
	secs := map[string]float64{}
	for _, m := range regexp.MustCompile(`(\w+) seconds=([0-9.]+)`).FindAllStringSubmatch(string(raw), -1) {
		secs[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	_, _, ref, err := npy.ReadFile(out) // float64: the reference unrounded
	if err != nil {
		return err
	}
	maxDiff := 0.0
	for i := range ref {
		maxDiff = math.Max(maxDiff, math.Abs(ref[i]-sub[i]))
	}
	fmt.Printf("  %-28s %8.3f s  (median of %d, %d iterations)\n", "lcl (Go)", ours, runs, st.Iterations)
	fmt.Printf("  %-28s %8.3f s  ours is %.1f× faster\n", "scipy sparse iteration", secs["scipy"], secs["scipy"]/ours)
	fmt.Printf("  %-28s %8.3f s  ours is %.1f× faster\n", "networkx simrank_similarity", secs["networkx"], secs["networkx"]/ours)
	fmt.Printf("  max |lcl − networkx| over class pairs: %.2g\n", maxDiff)
	verdict := "PASS"
	if secs["scipy"]/ours < 2 || maxDiff > 1e-6 {
		verdict = "FAIL"
	}
	fmt.Printf("  %s: want ≥ 2× faster than scipy and equal to networkx to 1e-6\n", verdict)

	if quality {
		fmt.Println()
		fmt.Println("Label similarity from the WordNet graph against Wu-Palmer (nltk wup_similarity):")
		fmt.Printf("  %-10s %-28s %10s %16s %8s\n", "set", "measure", "zero pairs", "spearman vs wup", "seconds")
		for _, name := range []string{"cifar100", "imagenet"} {
			if err := qualityTable(ctx, wn, name); err != nil {
				return err
			}
		}
	}
	if verdict == "FAIL" {
		return fmt.Errorf("speed or agreement target missed")
	}
	return nil
}

func qualityTable(ctx context.Context, wn *wordnet.DB, name string) error {
	set, err := labels.Builtin(name)
	if err != nil {
		return err
	}
	open := func() (*wordnet.DB, error) { return wn, nil }
	t0 := time.Now()
	wup, err := similarity.Compute(ctx, similarity.LCA{WordNet: open}, set, nil)
	if err != nil {
		return err
	}
	c := set.Len()
	wupTri := similarity.UpperTriangle(wup.Data, c)
	fmt.Printf("  %-10s %-28s %9.1f%% %16s %8.2f\n", name, "lca wup (the reference)", 100*similarity.ZeroShare(wup.Data, c), "1", time.Since(t0).Seconds())
	for _, m := range []struct {
		label string
		src   similarity.Source
		p     map[string]string
	}{
		{"simrank jeh-widom", similarity.SimRankSource{WordNet: open}, nil},
		{"simrank star (SimRank*)", similarity.SimRankSource{WordNet: open}, map[string]string{"variant": "star"}},
		{"simrank undirected+loops", similarity.SimRankSource{WordNet: open}, map[string]string{"variant": "undirected"}},
		{"lca height", similarity.LCA{WordNet: open}, map[string]string{"form": "height"}},
	} {
		t0 := time.Now()
		res, err := similarity.Compute(ctx, m.src, set, m.p)
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, m.label, err)
		}
		rho, err := similarity.Spearman(similarity.UpperTriangle(res.Data, c), wupTri)
		if err != nil {
			return err
		}
		fmt.Printf("  %-10s %-28s %9.1f%% %16.3f %8.2f\n", name, m.label, 100*similarity.ZeroShare(res.Data, c), rho, time.Since(t0).Seconds())
	}
	return nil
}

func writeGraph(dir string, g *similarity.Graph, classes []int) error {
	var e, n, c strings.Builder
	for child, ps := range g.Parents {
		for _, p := range ps {
			e.WriteString(g.Nodes[child] + " " + g.Nodes[p] + "\n")
		}
	}
	for _, id := range g.Nodes {
		n.WriteString(id + "\n")
	}
	for _, i := range classes {
		c.WriteString(g.Nodes[i] + "\n")
	}
	for name, text := range map[string]string{"edges": e.String(), "nodes": n.String(), "classes": c.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
