// Package plugins owns the go-plugin gRPC protocols for training strategies
// and similarity sources, the host loader and the built-in implementations.
package plugins
