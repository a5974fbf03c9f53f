package trainer

import "context"

// Dataset is the part of a dataset the loop needs.
type Dataset interface {
	Len() int
	NumClasses() int
	Shape() (c, h, w int)
	Label(i int) int
}

// Batch is one mini-batch: N normalised images (N×C×H×W), their labels and
// their example indices in the dataset.
type Batch struct {
	N     int
	X     []float32
	Y     []int64
	Index []int
}

// Batches yields the batches of one pass; Next returns io.EOF at the end.
type Batches interface {
	Next() (*Batch, error)
}

// LoaderConfig selects and orders the examples of one pass.
type LoaderConfig struct {
	Indices  []int // examples to visit; nil = all
	Batch    int
	Shuffle  bool
	Seed     int64 // order and augmentation; the same seed gives the same pass
	Train    bool  // training-time augmentation
	DropLast bool
	// Shards > 1 cuts every batch of Batch examples into Shards contiguous
	// slices, sizes differing by at most one, the larger first, and yields
	// slice Shard of each (possibly empty, never skipped): data-parallel
	// ranks together see the batches of one process, in the same order,
	// each example augmented as in the unsharded pass.
	Shard, Shards int
}

// Loader opens one pass over ds. Cancelling ctx stops its workers.
type Loader func(ctx context.Context, ds Dataset, cfg LoaderConfig) (Batches, error)
