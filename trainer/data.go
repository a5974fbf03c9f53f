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
// their example indices in the dataset. With LoaderConfig.U8 the images are
// pixel bytes in X8 (X nil), normalised on the device with the data set's
// Normalization.
type Batch struct {
	N     int
	X     []float32
	X8    []uint8
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
	// U8 asks for pixel bytes (Batch.X8); only for data sets with a
	// Normalization (PixelDataset).
	U8 bool
}

// PixelDataset is a Dataset of 8-bit images: the trainer loads its batches
// as bytes (LoaderConfig.U8) and normalises them on the device with mean and
// std (per channel, for pixels scaled to [0,1]), moving a quarter of the
// bytes of float32 batches.
type PixelDataset interface {
	Dataset
	Normalization() (mean, std []float32)
}

// Loader opens one pass over ds. Cancelling ctx stops its workers.
type Loader func(ctx context.Context, ds Dataset, cfg LoaderConfig) (Batches, error)
