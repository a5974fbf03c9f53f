// Package data owns lcl's training data: readers for Fashion-MNIST/MNIST (IDX),
// CIFAR-10/100 (binary release), image folders (ImageNet/AwA2 layout) and the
// CUB-200-2011 and NABirds list files; image decoding, augmentation and
// normalisation to float32 CHW; the paper's class-stratified data reduction
// (Fraction); and a streaming Loader that decodes with several goroutines into
// a bounded prefetch queue while keeping batch order and augmentation
// deterministic for a given seed, whatever the number of workers.
//
// The package is pure Go (no cgo); the trainer copies Batch.X into tensors.
package data
