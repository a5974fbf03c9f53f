package simstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// A stored value is
//
//	magic "LCLS" | format version (u16) | kind (u8) | reserved (u8)
//	| CRC-32C of everything after this field (u32)
//	| meta length (u32) | meta JSON | float32 count (u64) | float32 little-endian data
//
// so a flipped byte anywhere is caught by the checksum, and a value written by
// a newer format is refused instead of misread. Values larger than the chunk
// size are split across chunk keys (see blob.go); the checksum covers the
// reassembled value.
const (
	magic         = "LCLS"
	formatVersion = 1
	headerLen     = 4 + 2 + 1 + 1 + 4
)

var kindCode = map[string]byte{KindArticle: 1, KindVectors: 2, KindMatrix: 3, KindRun: 4}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every CorruptError.
var ErrCorrupt = errors.New("corrupt value")

// CorruptError names the key whose stored value failed to decode.
type CorruptError struct {
	Key    string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("simstore: corrupt value at key %q: %s", e.Key, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corrupt(key []byte, format string, a ...any) error {
	return &CorruptError{Key: string(key), Reason: fmt.Sprintf(format, a...)}
}

func encode(kind string, meta any, data []float32) ([]byte, error) {
	e, err := newEncoding(kind, meta, data)
	if err != nil {
		return nil, err
	}
	return e.bytes(), nil
}

// decode checks the header and checksum and unmarshals the meta JSON into
// meta; it returns the float32 payload.
func decode(key []byte, kind string, raw []byte, meta any) ([]float32, error) {
	d, err := newDecoder(key, kind, len(raw))
	if err != nil {
		return nil, err
	}
	if err := d.write(raw); err != nil {
		return nil, err
	}
	return d.finish(meta)
}

// A chunk manifest stands in for a value split across chunk keys:
//
//	magic "LCLC" | version (u16) | reserved (u16) | CRC-32C of the rest (u32)
//	| total length (u64) | chunk size (u32) | chunk count (u32) | generation (16 bytes)
const (
	manifestMagic = "LCLC"
	manifestLen   = 4 + 2 + 2 + 4 + 8 + 4 + 4 + genLen
	genLen        = 16
)

type manifest struct {
	total     uint64
	chunkSize uint32
	chunks    uint32
	gen       string // genLen hex characters
}

func (m manifest) encode() []byte {
	buf := make([]byte, manifestLen)
	copy(buf, manifestMagic)
	binary.LittleEndian.PutUint16(buf[4:], formatVersion)
	binary.LittleEndian.PutUint64(buf[12:], m.total)
	binary.LittleEndian.PutUint32(buf[20:], m.chunkSize)
	binary.LittleEndian.PutUint32(buf[24:], m.chunks)
	copy(buf[28:], m.gen)
	binary.LittleEndian.PutUint32(buf[8:], crc32.Checksum(buf[12:], castagnoli))
	return buf
}

func decodeManifest(key, raw []byte) (manifest, error) {
	var m manifest
	if len(raw) != manifestLen || string(raw[:4]) != manifestMagic {
		return m, corrupt(key, "bad chunk manifest (%d bytes)", len(raw))
	}
	if v := binary.LittleEndian.Uint16(raw[4:]); v != formatVersion {
		return m, corrupt(key, "chunk manifest version %d, this lcl reads version %d (upgrade lcl)", v, formatVersion)
	}
	if got, want := crc32.Checksum(raw[12:], castagnoli), binary.LittleEndian.Uint32(raw[8:]); got != want {
		return m, corrupt(key, "chunk manifest checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	m.total = binary.LittleEndian.Uint64(raw[12:])
	m.chunkSize = binary.LittleEndian.Uint32(raw[20:])
	m.chunks = binary.LittleEndian.Uint32(raw[24:])
	m.gen = string(raw[28:])
	if m.chunkSize == 0 || (m.total+uint64(m.chunkSize)-1)/uint64(m.chunkSize) != uint64(m.chunks) {
		return m, corrupt(key, "chunk manifest: %d bytes do not make %d chunks of %d", m.total, m.chunks, m.chunkSize)
	}
	return m, nil
}
