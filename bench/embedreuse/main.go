// Command embedreuse measures what keeping the doc2vec corpus model costs
// in quality (docs/embed.md, "Quality of article vectors"): the CIFAR-100
// superclass precision at 4 of class vectors that are trained (WordNet
// glosses, in the corpus), inferred against the corpus model (glosses and
// articles as new documents, 15/50/100 inference epochs), and, with
// -together, articles trained together with the corpus (the way lcl embed
// worked before the corpus model was kept; a second training). The articles
// are what lcl wiki fetch --source wordnet stores. -shared-negatives,
// -workers and -seed set the corpus model's training. Usage:
//
//	go run ./bench/embedreuse [-together] [-shared-negatives] [-workers N] [-seed S] [-infer-epochs 15,50,100]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lcl-project/lcl/embed"
	"github.com/lcl-project/lcl/embed/classvec"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/wiki"
	"github.com/lcl-project/lcl/wordnet"
)

// p4 is the share of each class's 4 nearest classes (cosine, itself
// excluded) that are in its superclass, over all classes. The cosines are
// lcl's own (similarity.Cosine), as lcl similarity computes them.
func p4(set *labels.Set, data [][]float32) float64 {
	n := len(data)
	x := make([][]float64, n)
	for i, v := range data {
		x[i] = make([]float64, len(v))
		for k, f := range v {
			x[i][k] = float64(f)
		}
	}
	cos, err := similarity.Cosine(x, func(i int) string { return set.Classes[i].ID })
	if err != nil {
		panic(err)
	}
	hits := 0
	for i := 0; i < n; i++ {
		idx := []int{}
		for j := 0; j < n; j++ {
			if j != i {
				idx = append(idx, j)
			}
		}
		row := cos[i*n : (i+1)*n]
		sort.Slice(idx, func(a, b int) bool { return row[idx[a]] > row[idx[b]] })
		for _, j := range idx[:4] {
			if set.Coarse.Of[i] == set.Coarse.Of[j] {
				hits++
			}
		}
	}
	return float64(hits) / float64(4*n)
}

func main() {
	shared := flag.Bool("shared-negatives", false, "train the corpus model with shared negatives (embed.Options.SharedNegatives)")
	workers := flag.Int("workers", 0, "training goroutines (0: GOMAXPROCS; 1: bit-identical)")
	seed := flag.Uint64("seed", 1, "training seed")
	inferEpochs := flag.String("infer-epochs", "15,50,100", "inference epochs to score, comma-separated")
	together := flag.Bool("together", false, "also train the articles together with the corpus")
	shuffle := flag.Int64("shuffle", 0, "train on the corpus's documents in a random order drawn from this seed (0: WordNet's order)")
	flag.Parse()
	ctx := context.Background()
	wn, err := wordnet.Open("")
	if err != nil {
		panic(err)
	}
	set, err := labels.Load("cifar100")
	if err != nil {
		panic(err)
	}
	st, err := simstore.Open("", simstore.InMemory())
	if err != nil {
		panic(err)
	}
	corpus := classvec.WordNetCorpus(wn)
	if *shuffle != 0 {
		rand.New(rand.NewPCG(uint64(*shuffle), 0)).Shuffle(len(corpus.Docs), func(i, j int) {
			corpus.Docs[i], corpus.Docs[j] = corpus.Docs[j], corpus.Docs[i]
		})
		corpus.Name += fmt.Sprintf("-shuffled%d", *shuffle)
	}
	o := embed.DefaultOptions()
	o.SharedNegatives, o.Workers, o.Seed = *shared, *workers, *seed
	t0 := time.Now()
	cm, err := classvec.LoadOrTrainCorpusModel(ctx, st, corpus, o)
	if err != nil {
		panic(err)
	}
	fmt.Println("corpus model", cm.ID, time.Since(t0))
	wdocs, _ := classvec.WordNetDocs(wn, set)
	v, _ := cm.Vectors(wdocs, embed.InferOptions{Seed: 1})
	fmt.Printf("wordnet glosses, corpus model: P@4 %.4f\n", p4(set, v.Data))
	// articles: the full wiki.WordNetDocument (lcl wiki fetch --source wordnet)
	adocs := make([]classvec.Doc, len(set.Classes))
	for i, c := range set.Classes {
		s, _ := wn.Synset(c.WNID)
		adocs[i] = classvec.Doc{Class: c, Tag: "class:" + c.ID, Title: c.Name, Text: wiki.WordNetDocument(wn, s)}
	}
	// glosses as new documents (inferred), to compare against their trained vectors
	gdocs := make([]classvec.Doc, len(wdocs))
	for i, d := range wdocs {
		gdocs[i] = d
		gdocs[i].Tag = "class:" + d.Class.ID
	}
	for _, f := range strings.Split(*inferEpochs, ",") {
		e, err := strconv.Atoi(f)
		if err != nil {
			panic(err)
		}
		v, _ := cm.Vectors(gdocs, embed.InferOptions{Seed: 1, Epochs: e})
		fmt.Printf("glosses inferred e%d: P@4 %.4f\n", e, p4(set, v.Data))
		v, _ = cm.Vectors(adocs, embed.InferOptions{Seed: 1, Epochs: e})
		fmt.Printf("articles inferred e%d: P@4 %.4f\n", e, p4(set, v.Data))
	}
	if *together {
		t0 = time.Now()
		tv, err := classvec.Train(ctx, corpus, adocs, o, "")
		if err != nil {
			panic(err)
		}
		fmt.Printf("articles trained together: P@4 %.4f (%s)\n", p4(set, tv.Data), time.Since(t0))
	}
}
