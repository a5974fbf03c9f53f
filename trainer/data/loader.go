package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/lcl-project/lcl/internal/crash"
	"github.com/lcl-project/lcl/trainer"
)

// Pass is the part of a LoaderConfig the trainer chooses: which examples a
// pass visits, in which order, in which batches.
type Pass = trainer.Pass

// LoaderConfig configures one pass (epoch) of a Loader over a split.
type LoaderConfig struct {
	// The pass as the trainer asks for it: Indices (nil = all), Batch
	// (required, > 0), Shuffle, Seed, Train (the split's training
	// augmentation; otherwise the deterministic evaluation transform),
	// DropLast, Shard and Shards, U8 (batches of pixel bytes, Batch.X8, for
	// a U8Decoder; see trainer.Pass). Shuffle draws
	// the order from (Seed, Epoch); Seed and Epoch also determine every
	// random augmentation: example i is augmented from a generator seeded by
	// (Seed, Epoch, i), so the output is the same for any number of workers.
	Pass
	Epoch int
	// Workers is the number of decoding goroutines (default GOMAXPROCS); each
	// fills whole batches.
	Workers int
	// Prefetch bounds the batches queued ahead of the consumer (default 2).
	// At most Prefetch+Workers+1 batches are held besides the caller's.
	Prefetch int
	// SkipBad skips examples that fail to decode, with a warning, instead
	// of ending the pass with an error; Loader.Skipped counts them. A batch
	// that lost examples is smaller than Batch.
	SkipBad bool
	// Warn receives warnings; nil writes them to stderr.
	Warn func(msg string)
	// Augment is the policy applied on top of the data set's crop and
	// flip in training passes (Train), drawn from each example's generator
	// after them; it needs a U8Decoder (the policies work on the bytes
	// before normalisation). Random erasing comes last, on the normalised
	// image (or, for U8 batches, with the byte nearest each channel's
	// mean): see docs/data.md.
	Augment Augment
}

// Batch is a decoded batch: the trainer's batch (X holds N examples of shape
// C×H×W, normalised, back to back, or with U8 X8 their pixel bytes; Y their
// labels; Index their indices in the split) and the pool of its Loader.
type Batch struct {
	trainer.MiniBatch

	free chan *Batch
}

// Release hands the batch back for reuse by later batches of its Loader. The
// batch must not be used afterwards. Calling it is optional: an unreleased
// batch is garbage collected.
func (b *Batch) Release() {
	if b == nil || b.free == nil {
		return
	}
	select {
	case b.free <- b:
	default:
	}
}

// Loader streams the batches of one pass over a split in a fixed order,
// decoding them with several goroutines ahead of the consumer. It is not
// safe for concurrent use by several consumers.
type Loader struct {
	ds      Dataset
	cfg     LoaderConfig
	order   []int
	batches int
	size    int // values per example
	base    uint64

	ctx    context.Context
	cancel context.CancelFunc
	queue  chan chan result
	free   chan *Batch
	wg     sync.WaitGroup
	warn   *warner
	err    error // sticky: io.EOF, a decode error or the context's error
}

type result struct {
	b   *Batch
	err error
}

// NewLoader starts decoding batches of ds. Cancel ctx or call Close to stop
// the workers; Next then reports the context's error.
func NewLoader(ctx context.Context, ds Dataset, cfg LoaderConfig) (*Loader, error) {
	if cfg.Batch <= 0 {
		return nil, fmt.Errorf("data: loader: batch size %d: want > 0", cfg.Batch)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Prefetch <= 0 {
		cfg.Prefetch = 2
	}
	if cfg.Shards < 0 || (cfg.Shards > 1 && (cfg.Shard < 0 || cfg.Shard >= cfg.Shards)) {
		return nil, fmt.Errorf("data: loader: shard %d of %d", cfg.Shard, cfg.Shards)
	}
	n := ds.Len()
	order := make([]int, 0, n)
	if cfg.Indices == nil {
		for i := range n {
			order = append(order, i)
		}
	} else {
		for _, i := range cfg.Indices {
			if i < 0 || i >= n {
				return nil, fmt.Errorf("data: loader: index %d out of range 0..%d", i, n-1)
			}
		}
		order = append(order, cfg.Indices...)
	}
	base := mix(uint64(cfg.Seed), uint64(cfg.Epoch)+1)
	if cfg.Shuffle {
		rng := rand.New(rand.NewPCG(base, 0x53485546464c45)) // "SHUFFLE"
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	}
	batches := (len(order) + cfg.Batch - 1) / cfg.Batch
	if cfg.DropLast {
		batches = len(order) / cfg.Batch
	}
	c, h, w := ds.Shape()
	if _, ok := ds.(U8Decoder); cfg.U8 && !ok {
		return nil, fmt.Errorf("data: loader: %T has no 8-bit pixels (U8)", ds)
	}
	if err := cfg.Augment.Check(); err != nil {
		return nil, fmt.Errorf("data: loader: %w", err)
	}
	if !cfg.Train {
		cfg.Augment = Augment{} // evaluation is never augmented
	}
	if _, ok := ds.(U8Decoder); cfg.Augment.Enabled() && !ok {
		return nil, fmt.Errorf("data: loader: %T has no 8-bit pixels to augment (%s)", ds, cfg.Augment)
	}
	l := &Loader{ds: ds, cfg: cfg, order: order, batches: batches, size: c * h * w, base: base,
		queue: make(chan chan result, cfg.Prefetch),
		free:  make(chan *Batch, cfg.Prefetch+cfg.Workers+2),
		warn:  newWarner(cfg.Warn)}
	l.ctx, l.cancel = context.WithCancel(ctx)
	jobs := make(chan job)
	for range cfg.Workers {
		l.wg.Add(1)
		go func() {
			defer crash.Handle() // a panic here is a bug: one line, a report, exit 70
			defer l.wg.Done()
			var aug augmenter // this worker's scratch
			for j := range jobs {
				b, err := l.fill(j.k, &aug)
				j.out <- result{b, err} // buffered: never blocks
			}
		}()
	}
	l.wg.Add(1)
	go func() {
		defer crash.Handle() // a panic here is a bug: one line, a report, exit 70
		defer l.wg.Done()
		defer close(l.queue)
		defer close(jobs)
		for k := range batches {
			out := make(chan result, 1)
			select {
			case jobs <- job{k, out}:
			case <-l.ctx.Done():
				return
			}
			select {
			case l.queue <- out:
			case <-l.ctx.Done():
				return
			}
		}
	}()
	return l, nil
}

type job struct {
	k   int
	out chan result
}

// Len is the number of batches in the pass (before any skipping).
func (l *Loader) Len() int { return l.batches }

// Skipped counts the examples skipped so far (SkipBad).
func (l *Loader) Skipped() int { return l.warn.count() }

// Next returns the next batch, io.EOF after the last one, or the first error
// met (a decode error naming the file and example, or the context's error).
// Errors are sticky.
func (l *Loader) Next() (*Batch, error) {
	for l.err == nil {
		var out chan result
		var ok bool
		select {
		case out, ok = <-l.queue:
		case <-l.ctx.Done():
		}
		if !ok {
			if l.err = l.ctx.Err(); l.err == nil {
				l.err = io.EOF
			}
			break
		}
		var r result
		select {
		case r = <-out:
		case <-l.ctx.Done():
			l.err = l.ctx.Err()
			continue
		}
		if r.err != nil {
			l.err = r.err
			l.cancel()
			break
		}
		if r.b.N == 0 && l.cfg.Shards <= 1 { // every example of the batch was skipped
			r.b.Release()
			continue
		}
		return r.b, nil
	}
	return nil, l.err
}

// Close stops the workers and waits for them. It is safe to call twice.
func (l *Loader) Close() error {
	l.cancel()
	l.wg.Wait()
	return nil
}

// fill decodes batch k (aug: the worker's scratch for Augment).
func (l *Loader) fill(k int, aug *augmenter) (*Batch, error) {
	var b *Batch
	select {
	case b = <-l.free:
	default:
		b = &Batch{MiniBatch: trainer.MiniBatch{Y: make([]int64, l.cfg.Batch), Index: make([]int, l.cfg.Batch)}, free: l.free}
		if l.cfg.U8 {
			b.X8 = make([]uint8, l.cfg.Batch*l.size)
		} else {
			b.X = make([]float32, l.cfg.Batch*l.size)
		}
	}
	b.X, b.X8, b.Y, b.Index = b.X[:cap(b.X)], b.X8[:cap(b.X8)], b.Y[:cap(b.Y)], b.Index[:cap(b.Index)]
	u8, _ := l.ds.(U8Decoder)
	lo := k * l.cfg.Batch
	hi := min(lo+l.cfg.Batch, len(l.order))
	if s := l.cfg.Shards; s > 1 {
		lo, hi = shard(lo, hi, l.cfg.Shard, s)
	}
	pcg := rand.NewPCG(0, 0)
	rng := rand.New(pcg)
	n := 0
	for _, idx := range l.order[lo:hi] {
		if err := l.ctx.Err(); err != nil {
			return nil, err
		}
		// A generator per example, seeded by (seed, epoch, index) only.
		pcg.Seed(l.base, mix(uint64(idx), 0x4155474d454e54)) // "AUGMENT"
		var r *rand.Rand
		if l.cfg.Train {
			r = rng
		}
		var err error
		switch {
		case l.cfg.Augment.Enabled():
			err = l.augmented(u8, aug, idx, b, n, r)
		case l.cfg.U8:
			err = u8.DecodeU8(idx, b.X8[n*l.size:(n+1)*l.size], l.cfg.Train, r)
		default:
			err = l.ds.Decode(idx, b.X[n*l.size:(n+1)*l.size], l.cfg.Train, r)
		}
		if err != nil {
			var ee *ExampleError
			if !errors.As(err, &ee) {
				err = &ExampleError{File: "(decode)", Index: idx, Err: err}
			}
			if !l.cfg.SkipBad {
				return nil, fmt.Errorf("data: %w", err)
			}
			l.warn.warn(err)
			continue
		}
		b.Y[n] = int64(l.ds.Label(idx))
		b.Index[n] = idx
		n++
	}
	b.N = n
	b.Y, b.Index = b.Y[:n], b.Index[:n]
	if l.cfg.U8 {
		b.X8 = b.X8[:n*l.size]
	} else {
		b.X = b.X[:n*l.size]
	}
	return b, nil
}

// augmented decodes example idx as slot n of b with the training
// augmentation and Augment: the data set's crop and flip into bytes, the
// policy on them, normalisation (unless the batch is of bytes), then random
// erasing, all drawn from rng in that order.
func (l *Loader) augmented(u8 U8Decoder, aug *augmenter, idx int, b *Batch, n int, rng *rand.Rand) error {
	c, h, w := l.ds.Shape()
	img := aug.img
	if l.cfg.U8 {
		img = b.X8[n*l.size : (n+1)*l.size]
	} else if len(img) != l.size {
		aug.img = make([]uint8, l.size)
		img = aug.img
	}
	if err := u8.DecodeU8(idx, img, true, rng); err != nil {
		return err
	}
	a := &l.cfg.Augment
	aug.policy(img, c, h, w, a, rng)
	mean, std := u8.Normalization()
	if !l.cfg.U8 {
		normalize(img, b.X[n*l.size:(n+1)*l.size], mean, std)
	}
	if a.Erasing == 0 {
		return nil
	}
	y, x, bh, bw, ok := eraseBox(h, w, a.Erasing, rng)
	if !ok {
		return nil
	}
	// torchvision erases the normalised tensor with 0, the channel mean;
	// bytes take the byte nearest it, which the device normalises to
	// within half a level of 0.
	if l.cfg.U8 {
		var fill [3]uint8
		for ch := range c {
			fill[ch] = uint8(math.Round(min(max(float64(mean[ch]), 0), 1) * 255))
		}
		erase(img, c, h, w, y, x, bh, bw, fill[:c])
	} else {
		var zero [3]float32
		erase(b.X[n*l.size:(n+1)*l.size], c, h, w, y, x, bh, bw, zero[:c])
	}
	return nil
}

// normalize writes the c planes of bytes src to dst as (v/255 − mean)/std,
// with the arithmetic of the data sets' Decode (v·scale + bias).
func normalize(src []uint8, dst []float32, mean, std []float32) {
	n := len(src) / len(mean)
	for ch := range mean {
		scale := 1 / (255 * std[ch])
		bias := -mean[ch] / std[ch]
		out := dst[ch*n : (ch+1)*n]
		for i, p := range src[ch*n : (ch+1)*n] {
			out[i] = float32(p)*scale + bias
		}
	}
}

// shard is slice r of s contiguous slices of [lo, hi), sizes differing by at
// most one, the larger first.
func shard(lo, hi, r, s int) (int, int) {
	n := hi - lo
	q, rem := n/s, n%s
	start := lo + r*q + min(r, rem)
	size := q
	if r < rem {
		size++
	}
	return start, start + size
}
