// Package f32 views float32 slices as the bytes they occupy, for the
// stores and files that hold matrices little-endian: a 1.9 GB matrix is
// written and read in place, never encoded into a copy.
package f32

import (
	"encoding/binary"
	"unsafe"
)

// LittleEndian reports whether this machine holds float32 values in memory
// as little-endian files hold them (so Bytes is their encoding).
var LittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Bytes is the memory of v as bytes: shared with v, not copied.
func Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
