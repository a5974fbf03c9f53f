package trainer

import (
	"context"
	"io"
	"math/rand/v2"
)

// memDS is an in-memory dataset of Gaussian class blobs for tests.
type memDS struct {
	x       [][]float32
	y       []int
	c, h, w int
	classes int
}

func (d *memDS) Len() int             { return len(d.y) }
func (d *memDS) NumClasses() int      { return d.classes }
func (d *memDS) Shape() (c, h, w int) { return d.c, d.h, d.w }
func (d *memDS) Label(i int) int      { return d.y[i] }
func (d *memDS) Classes() []string {
	out := make([]string, d.classes)
	for i := range out {
		out[i] = string(rune('a' + i))
	}
	return out
}

// blobs makes n examples of classes classes on a 1×s×s grid: each class has
// a bright patch at its own place, plus noise.
func blobs(n, classes, s int, seed uint64) *memDS {
	r := rand.New(rand.NewPCG(seed, seed))
	d := &memDS{c: 1, h: s, w: s, classes: classes}
	for i := range n {
		y := i % classes
		x := make([]float32, s*s)
		for j := range x {
			x[j] = float32(r.NormFloat64() * 0.5)
		}
		x[(y*s*s/classes+s/2)%(s*s)] += 2
		x[(y*s*s/classes+s/2+1)%(s*s)] += 2
		d.x = append(d.x, x)
		d.y = append(d.y, y)
	}
	return d
}

type memIter struct {
	d     *memDS
	order []int
	batch int
	pos   int
	drop  bool

	shard, shards int
}

func (it *memIter) Next() (*MiniBatch, error) {
	if it.pos >= len(it.order) || (it.drop && it.pos+it.batch > len(it.order)) {
		return nil, io.EOF
	}
	end := min(it.pos+it.batch, len(it.order))
	lo, hi := it.pos, end
	if it.shards > 1 { // contiguous slices, the larger first
		n := hi - lo
		q, rem := n/it.shards, n%it.shards
		lo += it.shard*q + min(it.shard, rem)
		hi = lo + q
		if it.shard < rem {
			hi++
		}
	}
	b := &MiniBatch{N: hi - lo}
	for _, i := range it.order[lo:hi] {
		b.X = append(b.X, it.d.x[i]...)
		b.Y = append(b.Y, int64(it.d.y[i]))
		b.Index = append(b.Index, i)
	}
	it.pos = end
	return b, nil
}

func memLoader(ctx context.Context, ds Examples, cfg Pass) (Batches, error) {
	d := ds.(*memDS)
	order := cfg.Indices
	if order == nil {
		order = make([]int, d.Len())
		for i := range order {
			order[i] = i
		}
	}
	order = append([]int(nil), order...)
	if cfg.Shuffle {
		r := rand.New(rand.NewPCG(uint64(cfg.Seed), 7))
		r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	return &memIter{d: d, order: order, batch: cfg.Batch, drop: cfg.DropLast, shard: cfg.Shard, shards: cfg.Shards}, nil
}
