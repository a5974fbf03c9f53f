// Package trainer is lcl's training engine on libtorch: datasets, models,
// soft-target losses, the training loop, evaluation and checkpoints.
package trainer
