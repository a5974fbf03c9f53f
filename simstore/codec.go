package simstore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
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
	mj, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("simstore: encode %s: %w", kind, err)
	}
	buf := make([]byte, headerLen+4+len(mj)+8+4*len(data))
	copy(buf, magic)
	binary.LittleEndian.PutUint16(buf[4:], formatVersion)
	buf[6] = kindCode[kind]
	p := buf[headerLen:]
	binary.LittleEndian.PutUint32(p, uint32(len(mj)))
	copy(p[4:], mj)
	q := p[4+len(mj):]
	binary.LittleEndian.PutUint64(q, uint64(len(data)))
	q = q[8:]
	for i, f := range data {
		binary.LittleEndian.PutUint32(q[4*i:], math.Float32bits(f))
	}
	binary.LittleEndian.PutUint32(buf[8:], crc32.Checksum(buf[headerLen:], castagnoli))
	return buf, nil
}

// decode checks the header and checksum and unmarshals the meta JSON into
// meta; it returns the float32 payload.
func decode(key []byte, kind string, raw []byte, meta any) ([]float32, error) {
	if len(raw) == 0 {
		// Badger logs, and hides, a value-log entry that fails its checksum.
		return nil, corrupt(key, "the value cannot be read (its value-log entry is damaged)")
	}
	if len(raw) < headerLen+12 {
		return nil, corrupt(key, "%d bytes, shorter than a header", len(raw))
	}
	if string(raw[:4]) != magic {
		return nil, corrupt(key, "bad magic %q", raw[:4])
	}
	if v := binary.LittleEndian.Uint16(raw[4:]); v != formatVersion {
		return nil, corrupt(key, "format version %d, this lcl reads version %d (upgrade lcl)", v, formatVersion)
	}
	if raw[6] != kindCode[kind] {
		return nil, corrupt(key, "holds record kind %d, expected %s", raw[6], kind)
	}
	if got, want := crc32.Checksum(raw[headerLen:], castagnoli), binary.LittleEndian.Uint32(raw[8:]); got != want {
		return nil, corrupt(key, "checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	p := raw[headerLen:]
	ml := int(binary.LittleEndian.Uint32(p))
	if 4+ml+8 > len(p) {
		return nil, corrupt(key, "meta length %d exceeds value", ml)
	}
	if err := json.Unmarshal(p[4:4+ml], meta); err != nil {
		return nil, corrupt(key, "meta: %v", err)
	}
	q := p[4+ml:]
	n := binary.LittleEndian.Uint64(q)
	q = q[8:]
	if uint64(len(q)) != 4*n {
		return nil, corrupt(key, "%d float32 declared, %d bytes present", n, len(q))
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = math.Float32frombits(binary.LittleEndian.Uint32(q[4*i:]))
	}
	return data, nil
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
