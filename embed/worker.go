package embed

// trainer holds one goroutine's scratch buffers and random state.
type trainer struct {
	m        *Model
	dim      int
	alpha    float32
	rng      rng
	buf      []int32     // the document after down-sampling
	inputs   []int32     // per training pair: input word row, -1 for the document
	targets  []int32     // per training pair: the word to predict
	negs     []int32     // per training pair: Negative noise words
	work     []float32   // accumulated gradient for the input vector
	neu1     []float32   // PV-DM input: mean of document and context vectors
	rows     [][]float32 // shared negatives: the batch's input rows
	works    []float32   // shared negatives: one gradient per input row
	g        []float32   // shared negatives: one output row's step per input
	learnOut bool        // update output weights (false during inference)
	learnIn  bool        // update word vectors (false during inference)
}

func (m *Model) newTrainer() *trainer {
	return &trainer{m: m, dim: m.Options.Dim, work: make([]float32, m.Options.Dim),
		neu1: make([]float32, m.Options.Dim), learnOut: true, learnIn: true}
}

// document trains on one document (vocabulary ids) with document vector
// dv and returns the number of words kept by down-sampling. trainDoc false
// leaves dv unchanged (not used in training; kept for symmetry).
func (t *trainer) document(ids []int32, dv []float32, trainDoc bool) int {
	keep := t.m.Vocab.keep
	t.buf = t.buf[:0]
	if t.m.Options.Sample > 0 {
		for _, w := range ids {
			if keep[w] >= uint32(t.rng.next()) {
				t.buf = append(t.buf, w)
			}
		}
	} else {
		t.buf = append(t.buf, ids...)
	}
	if t.m.Options.Mode == DM {
		t.dm(dv)
	} else if words := t.m.Options.DBOWWords && t.learnIn; words && t.m.Options.SharedNegatives {
		t.dbowShared(dv)
	} else {
		t.dbow(dv, words)
	}
	return len(t.buf)
}

// ahead is how many training pairs ahead rows are prefetched.
const ahead = 2

// dbow trains the document vector (and with words, skip-gram word vectors)
// on t.buf. All pairs of the document and their negative samples are drawn
// first so that the rows of pair p+ahead can be prefetched while pair p is
// computed: random output rows missing the cache are what bounds speed.
func (t *trainer) dbow(dv []float32, words bool) {
	d, win, neg := t.dim, t.m.Options.Window, t.m.Options.Negative
	wv, out := t.m.WordVecs, t.m.OutVecs
	t.inputs, t.targets = t.inputs[:0], t.targets[:0]
	for i, w := range t.buf {
		if words {
			b := t.rng.intn(win)
			lo, hi := max(i-win+b, 0), min(i+win+1-b, len(t.buf))
			for j := lo; j < hi; j++ {
				if j != i {
					t.inputs = append(t.inputs, t.buf[j])
					t.targets = append(t.targets, w)
				}
			}
		}
		t.inputs = append(t.inputs, -1) // the document vector
		t.targets = append(t.targets, w)
	}
	t.drawNegatives(len(t.targets) * neg)
	for p, w := range t.targets {
		if q := p + ahead; q < len(t.targets) {
			if in := t.inputs[q]; in >= 0 {
				prefetch(&wv[int(in)*d], d)
			}
			t.prefetchOut(t.targets[q], t.negs[q*neg:(q+1)*neg])
		}
		l1 := dv
		if in := t.inputs[p]; in >= 0 {
			l1 = wv[int(in)*d:][:d]
		}
		t.pair(l1, w, t.negs[p*neg:(p+1)*neg], out)
	}
}

// dbowShared is dbow with words where each centre word is one batch: its
// context words' vectors and the document vector predict it against one
// shared draw of noise words. Every score of the batch is computed before
// the output row moves, each output row is read once per centre word (it
// stays in cache for the whole batch), and the input rows move at the end
// of the batch. A reduced window is drawn per centre word, as in dbow.
func (t *trainer) dbowShared(dv []float32) {
	d, neg := t.dim, t.m.Options.Negative
	wv := t.m.WordVecs
	t.drawWindows()
	for i, w := range t.buf {
		if q := i + ahead; q < len(t.buf) {
			t.prefetchOut(t.buf[q], t.negs[q*neg:(q+1)*neg])
		}
		lo, hi := t.window(i)
		t.rows = t.rows[:0]
		for j := lo; j < hi; j++ {
			if j != i {
				t.rows = append(t.rows, wv[int(t.buf[j])*d:][:d])
			}
		}
		t.rows = append(t.rows, dv)
		t.batch(w, t.negs[i*neg:(i+1)*neg])
	}
}

// batch does one shared-negatives step: the input rows t.rows predict
// target against the noise words negs. For each output row, the scores of
// all inputs are taken before the row moves; then the inputs' steps move
// the row one after another (each input's gradient takes the row as the
// steps before left it: the fused kernel reads and writes it in one pass).
// Each input's gradient is accumulated apart and added once every output
// row is done. The skips
// are gradient's: a noise word equal to the target, a score saturated on
// the wrong side. The kernels are the fused ones (fastDot, fastUpdate):
// this mode has no earlier vectors to keep bit for bit.
func (t *trainer) batch(target int32, negs []int32) {
	d, sig, out := t.dim, t.m.sig, t.m.OutVecs
	n := len(t.rows)
	if cap(t.works) < n*d {
		t.works = make([]float32, n*d)
	}
	works := t.works[:n*d]
	clear(works)
	if cap(t.g) < n {
		t.g = make([]float32, n)
	}
	g := t.g[:n]
	for k := -1; k < len(negs); k++ {
		word, label := target, float32(1)
		if k >= 0 {
			if word, label = negs[k], 0; word == target {
				continue
			}
		}
		row := out[int(word)*d:][:d]
		for a, l1 := range t.rows {
			f := fastDot(l1, row)
			switch {
			case label == 1 && f <= -maxExp, label == 0 && f >= maxExp:
				g[a] = 0
			default:
				g[a] = (label - sig.at(f)) * t.alpha
			}
		}
		for a, l1 := range t.rows {
			switch {
			case g[a] == 0:
			case t.learnOut:
				fastUpdate(g[a], l1, row, works[a*d:][:d])
			default:
				axpy(g[a], row, works[a*d:][:d])
			}
		}
	}
	for a, l1 := range t.rows {
		axpy(1, works[a*d:][:d], l1)
	}
}

// drawWindows draws a reduced window for every position of t.buf (into
// t.inputs), then the noise words of every position (into t.negs), so that
// rows can be prefetched ahead of their use.
func (t *trainer) drawWindows() {
	t.inputs = t.inputs[:0]
	for range t.buf {
		t.inputs = append(t.inputs, int32(t.rng.intn(t.m.Options.Window)))
	}
	t.drawNegatives(len(t.buf) * t.m.Options.Negative)
}

// window is position i's context, t.buf[lo:hi] without i itself: the
// window shrunk by the reduction drawWindows drew for it (word2vec's b).
func (t *trainer) window(i int) (lo, hi int) {
	win, b := t.m.Options.Window, int(t.inputs[i])
	return max(i-win+b, 0), min(i+win+1-b, len(t.buf))
}

func (t *trainer) drawNegatives(n int) {
	t.negs = t.negs[:0]
	for range n {
		t.negs = append(t.negs, t.m.neg.draw(t.rng.next()))
	}
}

func (t *trainer) prefetchOut(target int32, negs []int32) {
	d, out := t.dim, t.m.OutVecs
	prefetch(&out[int(target)*d], d)
	for _, w := range negs {
		prefetch(&out[int(w)*d], d)
	}
}

// pair does one negative-sampling step: input vector l1 predicts word
// target against the noise words negs (a noise word equal to the target is
// skipped, as in word2vec); l1 and (when learnOut) the output weights move
// along their gradients scaled by alpha.
func (t *trainer) pair(l1 []float32, target int32, negs []int32, out []float32) {
	t.gradient(l1, target, negs, out)
	axpy(1, t.work, l1)
}

// gradient accumulates in t.work the gradient step for input l1 and
// updates the output rows when learnOut. A pair whose score is beyond
// ±maxExp on the wrong side is skipped, as in gensim; on the right side its
// gradient is 0 anyway.
func (t *trainer) gradient(l1 []float32, target int32, negs []int32, out []float32) {
	d, sig := t.dim, t.m.sig
	work := t.work
	clear(work)
	row := out[int(target)*d:][:d]
	if f := dot(l1, row); f > -maxExp {
		g := (1 - sig.at(f)) * t.alpha
		t.step(g, l1, row, work)
	}
	for _, word := range negs {
		if word == target {
			continue
		}
		row := out[int(word)*d:][:d]
		f := dot(l1, row)
		if f >= maxExp {
			continue
		}
		g := -sig.at(f) * t.alpha
		t.step(g, l1, row, work)
	}
}

// step adds g·row to the gradient work and, when learning output weights,
// g·l1 to row (row's old value goes into work).
func (t *trainer) step(g float32, l1, row, work []float32) {
	if t.learnOut {
		update(g, l1, row, work)
		return
	}
	axpy(g, row, work)
}

func (t *trainer) dm(dv []float32) {
	d, neg := t.dim, t.m.Options.Negative
	wv, out := t.m.WordVecs, t.m.OutVecs
	neu1, work := t.neu1, t.work
	t.drawWindows()
	for i, w := range t.buf {
		if q := i + ahead; q < len(t.buf) {
			t.prefetchOut(t.buf[q], t.negs[q*neg:(q+1)*neg])
		}
		lo, hi := t.window(i)
		copy(neu1, dv)
		n := 1
		for j := lo; j < hi; j++ {
			if j != i {
				axpy(1, wv[int(t.buf[j])*d:][:d], neu1)
				n++
			}
		}
		scal(1/float32(n), neu1)
		t.gradient(neu1, w, t.negs[i*neg:(i+1)*neg], out)
		// As word2vec's CBOW and gensim's dm_mean: the whole error goes to
		// each input vector, not divided by n.
		axpy(1, work, dv)
		if t.learnIn {
			for j := lo; j < hi; j++ {
				if j != i {
					axpy(1, work, wv[int(t.buf[j])*d:][:d])
				}
			}
		}
	}
}
