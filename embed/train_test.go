package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestPairGradient checks one PV-DBOW negative-sampling step against the
// gradient of the loss −log σ(d·o_w) − Σ_n log σ(−d·o_n), computed by hand.
func TestPairGradient(t *testing.T) {
	m := &Model{Options: Options{Dim: 3, Negative: 2, Mode: DBOW}, sig: newSigmoidTable()}
	m.OutVecs = []float32{
		0.1, -0.2, 0.3, // word 0 (target)
		-0.4, 0.5, 0.6, // word 1 (noise)
		0.7, 0.8, -0.9, // word 2 (noise)
	}
	doc := []float32{0.5, -1, 2}
	const alpha = 0.1
	sigma := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	// Hand computation in float64.
	wantOut := make([]float64, 9)
	wantDoc := make([]float64, 3)
	for i := range 3 {
		wantDoc[i] = float64(doc[i])
	}
	for i := range wantOut {
		wantOut[i] = float64(m.OutVecs[i])
	}
	for _, tc := range []struct {
		word  int
		label float64
	}{{0, 1}, {1, 0}, {2, 0}} {
		var f float64
		for i := range 3 {
			f += float64(doc[i]) * float64(m.OutVecs[tc.word*3+i])
		}
		g := (tc.label - sigma(f)) * alpha
		for i := range 3 {
			wantDoc[i] += g * float64(m.OutVecs[tc.word*3+i]) // uses the row before its update
			wantOut[tc.word*3+i] += g * float64(doc[i])
		}
	}
	tr := m.newTrainer()
	tr.alpha = alpha
	tr.pair(doc, 0, []int32{1, 2}, m.OutVecs)
	// The sigmoid table has step 12/2048; |σ'| ≤ 1/4.
	const tol = alpha * 0.25 * 12 / 2048 * 3
	for i := range 3 {
		if math.Abs(float64(doc[i])-wantDoc[i]) > tol {
			t.Errorf("doc[%d] = %g, want %g", i, doc[i], wantDoc[i])
		}
	}
	for i := range 9 {
		if math.Abs(float64(m.OutVecs[i])-wantOut[i]) > tol {
			t.Errorf("out[%d] = %g, want %g", i, m.OutVecs[i], wantOut[i])
		}
	}
	// A noise word equal to the target is skipped.
	before := append([]float32(nil), m.OutVecs...)
	d2 := []float32{0.5, -1, 2}
	tr.pair(d2, 0, []int32{0, 0}, m.OutVecs)
	tr2 := m.newTrainer()
	tr2.alpha = alpha
	m2 := *m
	m2.OutVecs = before
	d3 := []float32{0.5, -1, 2}
	tr2.m = &m2
	tr2.pair(d3, 0, nil, m2.OutVecs)
	if !slices.Equal(d2, d3) {
		t.Errorf("noise equal to target not skipped: %v vs %v", d2, d3)
	}
}

// One shared-negatives batch against a float64 hand computation: two input
// rows (a context word and the document) predict word 0 against noise
// words 1 and 2. Per output row all scores come first, from the row as it
// stands; then the inputs' steps move it in order, each input's gradient
// taking the row as the steps before left it; the inputs move at the end.
func TestSharedBatchGradient(t *testing.T) {
	m := &Model{Options: Options{Dim: 3, Negative: 2, Mode: DBOW}, sig: newSigmoidTable()}
	m.OutVecs = []float32{
		0.1, -0.2, 0.3, // word 0 (target)
		-0.4, 0.5, 0.6, // word 1 (noise)
		0.7, 0.8, -0.9, // word 2 (noise)
	}
	in := [][]float32{{0.3, 0.2, -0.1}, {0.5, -1, 2}}
	const alpha = 0.1
	sigma := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	out := make([]float64, 9)
	for i := range out {
		out[i] = float64(m.OutVecs[i])
	}
	work := [2][3]float64{}
	for _, tc := range []struct {
		word  int
		label float64
	}{{0, 1}, {1, 0}, {2, 0}} {
		row := out[tc.word*3:][:3]
		var g [2]float64
		for a := range in {
			var f float64
			for i := range 3 {
				f += float64(in[a][i]) * row[i]
			}
			g[a] = (tc.label - sigma(f)) * alpha
		}
		for a := range in {
			for i := range 3 {
				work[a][i] += g[a] * row[i]
				row[i] += g[a] * float64(in[a][i])
			}
		}
	}
	want := [2][3]float64{}
	for a := range in {
		for i := range 3 {
			want[a][i] = float64(in[a][i]) + work[a][i]
		}
	}
	tr := m.newTrainer()
	tr.alpha = alpha
	tr.rows = in
	tr.batch(0, []int32{1, 2})
	// The sigmoid table has step 12/2048; |σ'| ≤ 1/4.
	const tol = alpha * 0.25 * 12 / 2048 * 3 * 2
	for a := range in {
		for i := range 3 {
			if math.Abs(float64(in[a][i])-want[a][i]) > tol {
				t.Errorf("input %d [%d] = %g, want %g", a, i, in[a][i], want[a][i])
			}
		}
	}
	for i := range 9 {
		if math.Abs(float64(m.OutVecs[i])-out[i]) > tol {
			t.Errorf("out[%d] = %g, want %g", i, m.OutVecs[i], out[i])
		}
	}
}

// topicCorpus has two topics with disjoint vocabularies mixed with words
// shared by both (so that in PV-DM the context alone does not give the
// topic away and the document vector has to carry it): documents of the
// same topic should end up closer than documents of different topics.
func topicCorpus() []Document {
	topics := [][]string{
		{"cat", "dog", "horse", "cow", "sheep", "goat", "pig", "mouse", "rabbit", "fox"},
		{"car", "bus", "train", "plane", "ship", "truck", "bike", "tram", "boat", "van"},
	}
	shared := []string{"the", "a", "of", "and", "big", "small", "red", "old", "new", "fast"}
	r := newRNG(42)
	var docs []Document
	for i := range 200 {
		tp := topics[i%2]
		var w []string
		for range 12 {
			if r.intn(3) == 0 {
				w = append(w, tp[r.intn(len(tp))])
			} else {
				w = append(w, shared[r.intn(len(shared))])
			}
		}
		docs = append(docs, Document{Tag: fmt.Sprintf("d%d", i), Words: w})
	}
	return docs
}

func cos(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

func TestTrainSeparatesTopics(t *testing.T) {
	for _, tc := range []struct {
		mode          Mode
		words, shared bool
	}{{DBOW, false, false}, {DBOW, true, false}, {DBOW, true, true}, {DM, false, false}} {
		t.Run(fmt.Sprintf("%s-words=%v-shared=%v", tc.mode, tc.words, tc.shared), func(t *testing.T) {
			o := DefaultOptions()
			o.Mode, o.DBOWWords, o.Dim, o.Epochs, o.MinCount, o.Workers, o.Sample = tc.mode, tc.words, 16, 100, 1, 1, 0
			o.SharedNegatives = tc.shared
			m, st, err := Train(context.Background(), topicCorpus(), o)
			if err != nil {
				t.Fatal(err)
			}
			if st.Words != 200*12*100 {
				t.Errorf("words = %d, want %d", st.Words, 200*12*100)
			}
			// Cosines after removing the mean vector, which the
			// words shared by all documents make large.
			mean := make([]float32, o.Dim)
			for i := range 200 {
				dv, _ := m.DocVector(fmt.Sprintf("d%d", i))
				axpy(1.0/200, dv, mean)
			}
			centred := func(tag string) []float32 {
				dv, _ := m.DocVector(tag)
				v := append([]float32(nil), dv...)
				axpy(-1, mean, v)
				return v
			}
			var same, diff float64
			var ns, nd int
			for i := range 60 {
				for j := i + 1; j < 60; j++ {
					c := cos(centred(fmt.Sprintf("d%d", i)), centred(fmt.Sprintf("d%d", j)))
					if i%2 == j%2 {
						same += c
						ns++
					} else {
						diff += c
						nd++
					}
				}
			}
			same, diff = same/float64(ns), diff/float64(nd)
			t.Logf("centred cosine same %.3f diff %.3f", same, diff)
			if same < diff+0.1 {
				t.Errorf("mean centred cosine same topic %.3f, different topics %.3f: topics not separated", same, diff)
			}
			// An inferred vector for a new document of topic 0 is
			// closer to topic-0 documents.
			v, err := m.Infer([]string{"cat", "dog", "cow", "cat", "goat", "fox"}, InferOptions{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			axpy(-1, mean, v)
			var c0, c1 float64
			for i := range 60 {
				if i%2 == 0 {
					c0 += cos(v, centred(fmt.Sprintf("d%d", i)))
				} else {
					c1 += cos(v, centred(fmt.Sprintf("d%d", i)))
				}
			}
			if c0 <= c1 {
				t.Errorf("inferred topic-0 document: cosine to topic 0 %.3f ≤ to topic 1 %.3f", c0/30, c1/30)
			}
		})
	}
}

func TestDeterministicSingleWorker(t *testing.T) {
	for _, shared := range []bool{false, true} {
		testDeterministicSingleWorker(t, shared)
	}
}

func testDeterministicSingleWorker(t *testing.T, shared bool) {
	for _, mode := range []Mode{DBOW, DM} {
		o := DefaultOptions()
		o.Mode, o.Dim, o.Epochs, o.MinCount, o.Workers = mode, 8, 3, 1, 1
		o.SharedNegatives = shared
		train := func(seed uint64) *Model {
			o.Seed = seed
			m, _, err := Train(context.Background(), topicCorpus(), o)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		a, b, c := train(5), train(5), train(6)
		if !slices.Equal(a.DocVecs, b.DocVecs) || !slices.Equal(a.WordVecs, b.WordVecs) || !slices.Equal(a.OutVecs, b.OutVecs) {
			t.Errorf("%s: same seed, one worker: vectors differ", mode)
		}
		if slices.Equal(a.DocVecs, c.DocVecs) {
			t.Errorf("%s: different seeds gave identical vectors", mode)
		}
		words := []string{"car", "bus", "zebra"}
		v1, _ := a.Infer(words, InferOptions{Seed: 1})
		v2, _ := a.Infer(words, InferOptions{Seed: 1})
		v3, _ := a.Infer(words, InferOptions{Seed: 2})
		if !slices.Equal(v1, v2) || slices.Equal(v1, v3) {
			t.Errorf("%s: inference not repeatable per seed", mode)
		}
	}
}

func TestTrainCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := DefaultOptions()
	o.MinCount = 1
	_, _, err := Train(ctx, topicCorpus(), o)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestTrainBadOptions(t *testing.T) {
	docs := topicCorpus()
	for _, mod := range []func(*Options){
		func(o *Options) { o.Mode = "skipgram" },
		func(o *Options) { o.Dim = 0 },
		func(o *Options) { o.Negative = 0 },
		func(o *Options) { o.Epochs = 0 },
		func(o *Options) { o.MinAlpha = 1 },
		func(o *Options) { o.MinCount = 1000 },
	} {
		o := DefaultOptions()
		mod(&o)
		if _, _, err := Train(context.Background(), docs, o); err == nil {
			t.Errorf("options %+v: no error", o)
		}
	}
}

// BenchmarkInfer reports the time to infer one 12-word document for one
// epoch (bench/embed.sh measures it on the real corpus next to gensim).
func BenchmarkInfer(b *testing.B) {
	o := DefaultOptions()
	o.Epochs, o.MinCount, o.Workers = 5, 1, 1
	m, _, err := Train(context.Background(), topicCorpus(), o)
	if err != nil {
		b.Fatal(err)
	}
	words := topicCorpus()[0].Words
	for b.Loop() {
		if _, err := m.Infer(words, InferOptions{Epochs: 1, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
