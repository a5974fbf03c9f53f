// Package data owns lcl's training data: readers for Fashion-MNIST/MNIST (IDX),
// CIFAR-10/100 (binary release), image folders (ImageNet/AwA2 layout) and the
// CUB-200-2011 and NABirds list files; image decoding, augmentation and
// normalisation to float32 CHW; the paper's class-stratified data reduction
// (Fraction); and a streaming Loader that decodes with several goroutines into
// a bounded prefetch queue while keeping batch order and augmentation
// deterministic for a given seed, whatever the number of workers.
//
// JPEGs decode through libjpeg-turbo (cgo, turbo.go) at a reduced DCT scale
// where the crop allows, with Go's decoder as the fallback (CGO_ENABLED=0 or
// -tags noturbo build the package in pure Go). Batches are normalised
// float32 (Batch.X) or, with LoaderConfig.U8, pixel bytes (Batch.X8) that the
// trainer normalises on the device.
package data
