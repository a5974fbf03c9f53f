package simstore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/lcl-project/lcl/internal/f32"
)

// Records are written and read as streams of the encoding codec.go
// describes, so a 21,843² float32 matrix (1.9 GB) costs the store no second
// copy: its chunks are slices of the caller's values (on little-endian
// machines, where the encoding is the values' own bytes), and a read decodes
// each chunk straight into the one result slice, checking the same CRC-32C
// over the same bytes as a whole-value decode.

// encoding is one record's encoded value: head (header, meta length, meta
// JSON and count) followed by the float32 data, little-endian.
type encoding struct {
	head []byte
	data []float32
}

func newEncoding(kind string, meta any, data []float32) (*encoding, error) {
	mj, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("simstore: encode %s: %w", kind, err)
	}
	head := make([]byte, headerLen+4+len(mj)+8)
	copy(head, magic)
	binary.LittleEndian.PutUint16(head[4:], formatVersion)
	head[6] = kindCode[kind]
	binary.LittleEndian.PutUint32(head[headerLen:], uint32(len(mj)))
	copy(head[headerLen+4:], mj)
	binary.LittleEndian.PutUint64(head[headerLen+4+len(mj):], uint64(len(data)))
	e := &encoding{head: head, data: data}
	crc := crc32.Update(0, castagnoli, head[headerLen:])
	for off := 0; off < e.dataLen(); off += 1 << 22 {
		crc = crc32.Update(crc, castagnoli, e.dataPiece(off, min(1<<22, e.dataLen()-off), nil))
	}
	binary.LittleEndian.PutUint32(head[8:], crc)
	return e, nil
}

func (e *encoding) dataLen() int { return 4 * len(e.data) }

// len is the value's length in bytes.
func (e *encoding) len() int { return len(e.head) + e.dataLen() }

// dataPiece returns n bytes of the data's encoding from off: the values'
// own memory where it is the encoding, else converted into buf (grown as
// needed).
func (e *encoding) dataPiece(off, n int, buf []byte) []byte {
	if f32.LittleEndian {
		return f32.Bytes(e.data)[off : off+n]
	}
	buf = buf[:0]
	for k := off / 4; k < (off+n)/4; k++ {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(e.data[k]))
	}
	return buf
}

// piece returns bytes [off, off+n) of the value. A piece inside the data
// is, on little-endian machines, a slice of the caller's values; others are
// fresh (the store keeps a written piece until its transaction commits).
func (e *encoding) piece(off, n int) []byte {
	h := len(e.head)
	if off >= h && f32.LittleEndian {
		return e.dataPiece(off-h, n, nil)
	}
	out := make([]byte, 0, n)
	if off < h {
		out = append(out, e.head[off:min(h, off+n)]...)
	}
	if rest := n - len(out); rest > 0 {
		out = append(out, e.dataPiece(max(off-h, 0), rest, nil)...)
	}
	return out
}

// bytes is the whole value (small records).
func (e *encoding) bytes() []byte { return e.piece(0, e.len()) }

// errMetaRead stops a decoder once the meta is read (metaOnly).
var errMetaRead = errors.New("meta read")

// decoder decodes a value fed to it piece by piece (write), checking what
// decode checks in the same order: the length, the header, then the
// checksum of everything after it, then the meta and the count. The data is
// decoded straight into its one slice.
type decoder struct {
	key   []byte
	kind  string
	total int // bytes the value has
	got   int // bytes written so far

	head    []byte // the bytes up to the data
	dataOff int    // where the data starts (0 until the meta length is read)
	crc     uint32
	data    []float32
	raw     []byte // data's memory as bytes
	// bad is a structural error that is reported only once the checksum
	// passes, as decode reports it.
	bad error
	// metaOnly stops the decoder (errMetaRead) once the meta is in head;
	// nothing is checked beyond the header then.
	metaOnly bool
}

func newDecoder(key []byte, kind string, total int) (*decoder, error) {
	if total == 0 {
		// Badger logs, and hides, a value-log entry that fails its checksum.
		return nil, corrupt(key, "the value cannot be read (its value-log entry is damaged)")
	}
	if total < headerLen+12 {
		return nil, corrupt(key, "%d bytes, shorter than a header", total)
	}
	return &decoder{key: key, kind: kind, total: total}, nil
}

func (d *decoder) write(p []byte) error {
	if d.got+len(p) > d.total {
		return corrupt(d.key, "more bytes than the %d the value holds", d.total)
	}
	// The checksum covers everything after the header.
	if d.got+len(p) > headerLen {
		from := max(headerLen-d.got, 0)
		d.crc = crc32.Update(d.crc, castagnoli, p[from:])
	}
	for len(p) > 0 {
		if d.bad != nil || d.dataOff > 0 && d.got >= d.dataOff {
			// Data (or, after a structural error, bytes only checksummed).
			if d.raw != nil {
				copy(d.raw[d.got-d.dataOff:], p)
			}
			d.got += len(p)
			return nil
		}
		want := headerLen + 4
		if d.dataOff > 0 {
			want = d.dataOff
		}
		take := min(len(p), want-d.got)
		d.head = append(d.head, p[:take]...)
		d.got += take
		p = p[take:]
		if d.got < want {
			continue
		}
		if d.dataOff == 0 { // header and meta length complete
			if err := d.checkHeader(); err != nil {
				return err
			}
			ml := int(binary.LittleEndian.Uint32(d.head[headerLen:]))
			if 4+ml+8 > d.total-headerLen {
				d.bad = corrupt(d.key, "meta length %d exceeds value", ml)
				continue
			}
			d.dataOff = headerLen + 4 + ml + 8
			continue
		}
		// Meta and count complete.
		if d.metaOnly {
			return errMetaRead
		}
		n := binary.LittleEndian.Uint64(d.head[d.dataOff-8:])
		if n > math.MaxInt/4 || uint64(d.total-d.dataOff) != 4*n {
			d.bad = corrupt(d.key, "%d float32 declared, %d bytes present", n, d.total-d.dataOff)
			continue
		}
		d.data = make([]float32, n)
		d.raw = f32.Bytes(d.data)
	}
	return nil
}

func (d *decoder) checkHeader() error {
	h := d.head
	if string(h[:4]) != magic {
		return corrupt(d.key, "bad magic %q", h[:4])
	}
	if v := binary.LittleEndian.Uint16(h[4:]); v != formatVersion {
		return corrupt(d.key, "format version %d, this lcl reads version %d (upgrade lcl)", v, formatVersion)
	}
	if h[6] != kindCode[d.kind] {
		return corrupt(d.key, "holds record kind %d, expected %s", h[6], d.kind)
	}
	return nil
}

// finish checks the checksum and the structure, unmarshals the meta into
// meta and returns the data.
func (d *decoder) finish(meta any) ([]float32, error) {
	if d.got != d.total {
		return nil, corrupt(d.key, "%d of its %d bytes present", d.got, d.total)
	}
	if want := binary.LittleEndian.Uint32(d.head[8:]); d.crc != want {
		return nil, corrupt(d.key, "checksum mismatch (stored %08x, computed %08x)", want, d.crc)
	}
	if d.bad != nil {
		return nil, d.bad
	}
	if err := d.unmarshalMeta(meta); err != nil {
		return nil, err
	}
	if !f32.LittleEndian {
		for i := range d.data {
			d.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(d.raw[4*i:]))
		}
	}
	return d.data, nil
}

func (d *decoder) unmarshalMeta(meta any) error {
	ml := int(binary.LittleEndian.Uint32(d.head[headerLen:]))
	if err := json.Unmarshal(d.head[headerLen+4:headerLen+4+ml], meta); err != nil {
		return corrupt(d.key, "meta: %v", err)
	}
	return nil
}
