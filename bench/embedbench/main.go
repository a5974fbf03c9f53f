// Command embedbench measures lcl's doc2vec (package embed) next to gensim
// on the WordNet noun-synset corpus: training throughput, peak memory,
// inference time and quality (Spearman of ImageNet-1k class cosines against
// WordNet Wu-Palmer). bench/embed.sh drives it together with
// bench/embed_gensim.py; see docs/embed.md.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/lcl-project/lcl/embed"
	"github.com/lcl-project/lcl/embed/wncorpus"
	"github.com/lcl-project/lcl/wiki"
	"github.com/lcl-project/lcl/wordnet"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: embedbench corpus|train|quality [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "corpus":
		err = cmdCorpus(os.Args[2:])
	case "train":
		err = cmdTrain(os.Args[2:])
	case "quality":
		err = cmdQuality(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedbench:", err)
		os.Exit(1)
	}
}

func cmdCorpus(args []string) error {
	fs := flag.NewFlagSet("corpus", flag.ExitOnError)
	out := fs.String("o", "corpus.txt", "output: one document per line, wnid TAB tokens")
	relatives := fs.Bool("relatives", false, "documents of wiki.WordNetDocument (with hypernyms and hyponyms)")
	fs.Parse(args)
	// The corpus of `lcl embed` (package wncorpus), or with -relatives the
	// full wiki.WordNetDocument (synset, hypernyms, hyponyms).
	wn, err := wordnet.Open("")
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	ntok := 0
	for _, s := range wn.Nouns() {
		text := wncorpus.SynsetText(wn, s)
		if *relatives {
			text = wiki.WordNetDocument(wn, s)
		}
		toks := embed.Tokenize(text)
		ntok += len(toks)
		fmt.Fprintf(w, "%s\t%s\n", s.ID, strings.Join(toks, " "))
	}
	n := wn.Len()
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d documents, %d tokens\n", n, ntok)
	return f.Close()
}

func readCorpus(path string) ([]embed.Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var docs []embed.Document
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		tag, text, _ := strings.Cut(sc.Text(), "\t")
		docs = append(docs, embed.Document{Tag: tag, Words: strings.Fields(text)})
	}
	return docs, sc.Err()
}

func imagenetWNIDs(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		id, _, _ := strings.Cut(l, " : ")
		ids = append(ids, strings.TrimSpace(id))
	}
	return ids, nil
}

const imagenetFile = "/work/shared/data/imagenet/LOC_synset_mapping.txt"

func peakRSSMB() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.Atoi(strings.Fields(l)[1])
			return float64(kb) / 1024
		}
	}
	return 0
}

func cmdTrain(args []string) error {
	fs := flag.NewFlagSet("train", flag.ExitOnError)
	corpusPath := fs.String("corpus", "corpus.txt", "corpus file")
	mode := fs.String("mode", "dbow", "dbow or dm")
	words := fs.Bool("words", false, "dbow_words")
	shared := fs.Bool("shared-negatives", embed.DefaultOptions().SharedNegatives, "with -words: context words share one draw of noise words per centre word")
	epochs := fs.Int("epochs", 10, "epochs")
	workers := fs.Int("workers", 2, "workers")
	seed := fs.Uint64("seed", 1, "seed")
	out := fs.String("vectors", "", "write ImageNet class vectors here")
	inferN := fs.Int("infer", 1000, "documents to infer for the timing")
	label := fs.String("label", "", "label for the JSON line")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the training here")
	fs.Parse(args)
	docs, err := readCorpus(*corpusPath)
	if err != nil {
		return err
	}
	o := embed.DefaultOptions()
	o.Mode, o.DBOWWords, o.Epochs, o.Workers, o.Seed = embed.Mode(*mode), *words, *epochs, *workers, *seed
	o.SharedNegatives = *shared
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	m, st, err := embed.Train(context.Background(), docs, o)
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	ids, err := imagenetWNIDs(imagenetFile)
	if err != nil {
		return err
	}
	byTag := map[string][]string{}
	for _, d := range docs {
		byTag[d.Tag] = d.Words
	}
	n := min(*inferN, len(ids))
	t0 := time.Now()
	for _, id := range ids[:n] {
		if _, err := m.Infer(byTag[id], embed.InferOptions{Seed: 1}); err != nil {
			return err
		}
	}
	inferUS := float64(time.Since(t0).Microseconds()) / float64(n*o.Epochs)
	if *out != "" {
		if err := writeVectors(*out, m, ids); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"tool": "go", "label": *label, "effective_words": st.EffectiveWords, "seconds": st.Elapsed.Seconds(),
		"words_per_s": st.EffectiveWordsPerSecond(), "peak_rss_mb": peakRSSMB(), "infer_us_per_doc_epoch": inferUS,
	})
}

func writeVectors(path string, m *embed.Model, ids []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "%d %d\n", len(ids), m.Options.Dim)
	for _, id := range ids {
		v, ok := m.DocVector(id)
		if !ok {
			return fmt.Errorf("no vector for %s", id)
		}
		fmt.Fprint(w, id)
		for _, x := range v {
			fmt.Fprintf(w, " %g", x)
		}
		fmt.Fprintln(w)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func readVectors(path string) (map[string][]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	vecs := map[string][]float32{}
	for i, l := range lines[1:] {
		fs := strings.Fields(l)
		v := make([]float32, len(fs)-1)
		for j, s := range fs[1:] {
			x, err := strconv.ParseFloat(s, 32)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, i+2, err)
			}
			v[j] = float32(x)
		}
		vecs[fs[0]] = v
	}
	return vecs, nil
}

// maxDiffFromFile is the largest |x − ref[k]| over the values of path, one
// per line (nltk's wup_similarity for the same pairs).
func maxDiffFromFile(path string, ref []float64) (float64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	lines := strings.Fields(string(raw))
	if len(lines) != len(ref) {
		return 0, fmt.Errorf("%s: %d values, want %d", path, len(lines), len(ref))
	}
	maxDiff := 0.0
	for k, l := range lines {
		x, err := strconv.ParseFloat(l, 64)
		if err != nil {
			return 0, fmt.Errorf("%s:%d: %w", path, k+1, err)
		}
		maxDiff = math.Max(maxDiff, math.Abs(x-ref[k]))
	}
	return maxDiff, nil
}

func cmdQuality(args []string) error {
	fs := flag.NewFlagSet("quality", flag.ExitOnError)
	corpusPath := fs.String("tfidf", "", "corpus file for the TF-IDF baseline")
	nltkPath := fs.String("nltk", "", "optional: file of nltk wup_similarity values for the same pairs, one per line, to check the reference against")
	fs.Parse(args)
	wn, err := readWordNet("")
	if err != nil {
		return err
	}
	ids, err := imagenetWNIDs(imagenetFile)
	if err != nil {
		return err
	}
	w := newWup(wn)
	anc := map[string]map[string]int{}
	for _, id := range ids {
		anc[id] = w.ancestors(id)
	}
	var ref []float64
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			ref = append(ref, w.sim(ids[i], ids[j], anc))
		}
	}
	res := map[string]float64{}
	// Cross-check of the reference with the project's own Wu-Palmer
	// (wiki.WuPalmer): the largest difference over all pairs.
	if pwn, err := wordnet.Open(""); err == nil {
		k, maxDiff := 0, 0.0
		for i := range ids {
			for j := i + 1; j < len(ids); j++ {
				if x, err := pwn.WuPalmer(ids[i], ids[j]); err == nil {
					maxDiff = math.Max(maxDiff, math.Abs(x-ref[k]))
				} else {
					maxDiff = math.Inf(1)
				}
				k++
			}
		}
		res["wup_max_abs_diff_vs_wiki"] = maxDiff
	}
	if *nltkPath != "" {
		if res["wup_max_abs_diff_vs_nltk"], err = maxDiffFromFile(*nltkPath, ref); err != nil {
			return err
		}
	}
	if *corpusPath != "" {
		docs, err := readCorpus(*corpusPath)
		if err != nil {
			return err
		}
		pos := map[string]int{}
		words := make([][]string, len(docs))
		for i, d := range docs {
			pos[d.Tag] = i
			words[i] = d.Words
		}
		picked := make([]int, len(ids))
		for i, id := range ids {
			picked[i] = pos[id]
		}
		res["tfidf"] = spearman(tfidfCosines(words, picked), ref)
	}
	for _, path := range fs.Args() {
		vecs, err := readVectors(path)
		if err != nil {
			return err
		}
		vs := make([][]float32, len(ids))
		for i, id := range ids {
			if vs[i] = vecs[id]; vs[i] == nil {
				return fmt.Errorf("%s: no vector for %s", path, id)
			}
		}
		res[path] = spearman(pairCosines(vs), ref)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}
