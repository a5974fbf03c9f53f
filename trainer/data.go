package trainer

import "context"

// The loop's view of data. Package trainer/data implements it: a
// data.Dataset is an Examples (and decodes them), data.BatchSource returns
// a BatchSource opening a data.Loader per pass, a data.Batch is a MiniBatch
// with the pool of its Loader, and a data.LoaderConfig is a Pass with the
// loader's own settings.

// Examples is the part of a data set the loop needs: how many examples,
// their classes, shape and labels.
type Examples interface {
	Len() int
	NumClasses() int
	Shape() (c, h, w int)
	Label(i int) int
}

// MiniBatch is one mini-batch: N normalised images (N×C×H×W), their labels and
// their example indices in the dataset. With Pass.U8 the images are
// pixel bytes in X8 (X nil), normalised on the device with the data set's
// Normalization.
type MiniBatch struct {
	N     int
	X     []float32
	X8    []uint8
	Y     []int64
	Index []int
}

// Batches yields the batches of one pass; Next returns io.EOF at the end.
type Batches interface {
	Next() (*MiniBatch, error)
}

// Pass selects and orders the examples of one pass over Examples, in
// batches of Batch examples.
type Pass struct {
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
	// U8 asks for pixel bytes (MiniBatch.X8); only for data sets with a
	// Normalization (PixelExamples).
	U8 bool
}

// PixelExamples are Examples of 8-bit images: the trainer loads their batches
// as bytes (Pass.U8) and normalises them on the device with mean and
// std (per channel, for pixels scaled to [0,1]), moving a quarter of the
// bytes of float32 batches.
type PixelExamples interface {
	Examples
	Normalization() (mean, std []float32)
}

// BatchSource opens one pass over ds. Cancelling ctx stops its workers.
type BatchSource func(ctx context.Context, ds Examples, cfg Pass) (Batches, error)
