// Package tbpb is the Go code protoc-gen-go generates from tensorboard.proto:
// the TensorBoard Event, Summary and SessionLog messages lcl writes (package
// internal/tensorboard frames them into event files).
package tbpb
