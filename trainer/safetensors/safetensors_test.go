package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/bounded/boundedtest"
	"github.com/lcl-project/lcl/internal/testdep"
)

func sample() []Tensor {
	f := make([]byte, 2*3*4)
	for i := range f {
		f[i] = byte(i)
	}
	return []Tensor{
		{Name: "w", DType: "F32", Shape: []int64{2, 3}, Data: f},
		{Name: "n", DType: "I64", Shape: []int64{}, Data: []byte{7, 0, 0, 0, 0, 0, 0, 0}},
	}
}

func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, sample(), map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if hl := binary.LittleEndian.Uint64(b.Bytes()); (8+hl)%8 != 0 {
		t.Errorf("data not aligned: header %d", hl)
	}
	ts, meta, err := Read(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if meta["k"] != "v" || len(ts) != 2 || ts[0].Name != "n" || ts[1].Name != "w" ||
		!bytes.Equal(ts[1].Data, sample()[0].Data) || len(ts[0].Shape) != 0 {
		t.Fatalf("round trip: %+v %v", ts, meta)
	}
}

// TestWriteFrom: sources that write their data in pieces give the bytes
// Write gives; a source that writes more or fewer bytes than it declared, or
// fails, makes WriteFrom fail (the header would lie).
func TestWriteFrom(t *testing.T) {
	var want bytes.Buffer
	if err := Write(&want, sample(), map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	srcs := func(extra int, fail error) []Source {
		var out []Source
		for _, ts := range sample() {
			out = append(out, Source{Name: ts.Name, DType: ts.DType, Shape: ts.Shape, Bytes: int64(len(ts.Data)),
				WriteData: func(w io.Writer) error {
					for i := range ts.Data { // byte by byte
						if _, err := w.Write(ts.Data[i : i+1]); err != nil {
							return err
						}
					}
					if extra < 0 {
						return fail
					}
					_, err := w.Write(make([]byte, extra))
					return err
				}})
		}
		return out
	}
	var got bytes.Buffer
	if err := WriteFrom(&got, srcs(0, nil), map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatal("WriteFrom and Write differ")
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		extra int
		fail  error
		want  string
	}{{1, nil, "9 bytes written, 8 declared"}, {-1, boom, "boom"}} {
		err := WriteFrom(io.Discard, srcs(tc.extra, tc.fail), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("extra %d: %v, want %q", tc.extra, err, tc.want)
		}
	}
	short := srcs(0, nil)
	short[1].Bytes = 16 // "n" declares more than it writes (and a shape that says 16)
	short[1].Shape = []int64{2}
	if err := WriteFrom(io.Discard, short, nil); err == nil || !strings.Contains(err.Error(), "8 bytes written, 16 declared") {
		t.Errorf("short source: %v", err)
	}
}

func TestCorrupt(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, sample(), nil); err != nil {
		t.Fatal(err)
	}
	good := b.Bytes()
	hl := int(binary.LittleEndian.Uint64(good))
	cases := map[string][]byte{
		"empty":     {},
		"truncated": good[:len(good)-3],
		"trailing":  append(append([]byte{}, good...), 0),
		"huge header": func() []byte {
			c := append([]byte{}, good...)
			binary.LittleEndian.PutUint64(c, 1<<40)
			return c
		}(),
		"bad json": func() []byte {
			c := append([]byte{}, good...)
			c[8] = '['
			return c
		}(),
		"bad dtype": []byte(strings.Replace(string(good[:8+hl]), `"F32"`, `"Q32"`, 1) + string(good[8+hl:])),
	}
	for name, c := range cases {
		if _, _, err := Read(c); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
	if err := Write(&b, []Tensor{{Name: "x", DType: "F32", Shape: []int64{3}, Data: make([]byte, 4)}}, nil); err == nil {
		t.Error("wrong size written")
	}
}

// TestPythonParses checks the file with an independent parser: the format's
// definition written in Python (no safetensors package is needed).
func TestPythonParses(t *testing.T) {
	py := testdep.PythonModules(t)
	path := filepath.Join(t.TempDir(), "x.safetensors")
	var b bytes.Buffer
	if err := Write(&b, sample(), map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := py.Command("-c", `
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n, = struct.unpack("<Q", b[:8])
h = json.loads(b[8:8+n])
data = b[8+n:]
w = h["w"]
s, e = w["data_offsets"]
vals = struct.unpack("<6f", data[s:e])
n_ = struct.unpack("<q", data[h["n"]["data_offsets"][0]:h["n"]["data_offsets"][1]])[0]
print(h["__metadata__"]["format"], w["dtype"], w["shape"], n_, len(vals))
`, path).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "pt F32 [2, 3] 7 6" {
		t.Errorf("python read %q", got)
	}
}

// header builds a file from a JSON header and data.
func header(h string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(b, h...), data...)
}

// The audit's safetensors: a shape whose element count overflows (2³²×2³²
// wraps to 0) parsed as an empty tensor. It is refused, naming the tensor.
func TestElementCountOverflow(t *testing.T) {
	for _, shape := range []string{"[4294967296, 4294967296]", "[2305843009213693952, 2]", "[3037000500, 3037000500, 1]"} {
		in := header(`{"w":{"dtype":"F32","shape":`+shape+`,"data_offsets":[0,0]}}`, nil)
		_, _, err := Read(in)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `tensor "w": shape `) || !strings.Contains(err.Error(), "more elements than any file can hold") {
			t.Errorf("shape %s: %v", shape, err)
		}
	}
	if _, _, err := Read(header(`{"w":{"dtype":"F32","shape":[0, 4294967296],"data_offsets":[0,0]}}`, nil)); err != nil {
		t.Errorf("an empty tensor with a large dimension: %v", err)
	}
}

// FuzzRead: no file panics Read; every tensor it returns holds exactly the
// bytes its dtype and shape need.
func FuzzRead(f *testing.F) {
	var b bytes.Buffer
	Write(&b, sample(), map[string]string{"k": "v"})
	f.Add(b.Bytes())
	f.Add(header(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil))
	f.Add(header(`{"__metadata__":{"a":"b"},"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, []byte{1, 2}))
	f.Fuzz(func(t *testing.T, in []byte) {
		ts, _, err := Read(in)
		if err != nil {
			return
		}
		for _, tn := range ts {
			n := sizes[tn.DType]
			for _, d := range tn.Shape {
				n *= d
			}
			if n != int64(len(tn.Data)) {
				t.Fatalf("tensor %q: %d bytes for %s%v", tn.Name, len(tn.Data), tn.DType, tn.Shape)
			}
		}
	})
}

// ReadFile checks the header against the file before reading data: a
// file padded with 2.5 GB (sparse here) is refused at the cost of its
// header, a truncated one too, a link to /dev/zero is not read (issue 23,
// item 7: such an --init file was read whole, then Go ran out of memory).
func TestReadFileHeaderFirst(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := Write(&buf, []Tensor{{Name: "w", DType: "F32", Shape: []int64{2}, Data: make([]byte, 8)}}, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.safetensors")
	os.WriteFile(good, buf.Bytes(), 0o644)
	if b, err := ReadFile(good); err != nil || !bytes.Equal(b, buf.Bytes()) {
		t.Fatalf("ReadFile of a good file: %v", err)
	}
	if m, err := ReadMeta(good); err != nil || m["k"] != "v" {
		t.Fatalf("ReadMeta: %v, %v", m, err)
	}
	padded := filepath.Join(dir, "padded.safetensors")
	os.WriteFile(padded, buf.Bytes(), 0o644)
	if err := os.Truncate(padded, 2500<<20); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.safetensors")
	os.WriteFile(short, buf.Bytes()[:buf.Len()-3], 0o644)
	zero := filepath.Join(dir, "zero.safetensors")
	os.Symlink("/dev/zero", zero)
	for _, c := range []struct{ path, want string }{
		{padded, "its header declares 8 bytes of tensor data, the file holds 2621439912 after the header (truncated, or followed by other data)"},
		{short, "its header declares 8 bytes of tensor data, the file holds 5 after the header"},
		{zero, "not a regular file (a character device)"},
	} {
		var err error
		boundedtest.MaxAlloc(t, 1<<20, c.path, func() { _, err = ReadFile(c.path) })
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
		if _, err := ReadMeta(c.path); err == nil {
			t.Errorf("ReadMeta %s: no error", c.path)
		}
	}
}

func TestFirstNonFinite(t *testing.T) {
	f32 := func(v ...float32) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		return b
	}
	for _, c := range []struct {
		t    Tensor
		want int
	}{
		{Tensor{DType: "F32", Data: f32(1, 2, 3)}, -1},
		{Tensor{DType: "F32", Data: f32(1, float32(math.NaN()), 3)}, 1},
		{Tensor{DType: "F32", Data: f32(1, 2, float32(math.Inf(-1)))}, 2},
		{Tensor{DType: "F64", Data: binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN()))}, 0},
		{Tensor{DType: "F16", Data: []byte{0x00, 0x3c, 0x00, 0xfc}}, 1},  // 1.0, -inf
		{Tensor{DType: "F16", Data: []byte{0xff, 0x7b}}, -1},             // 65504, the largest half
		{Tensor{DType: "BF16", Data: []byte{0x80, 0x3f, 0xc0, 0x7f}}, 1}, // 1.0, NaN
		{Tensor{DType: "I64", Data: make([]byte, 16)}, -1},
	} {
		if got, _ := c.t.FirstNonFinite(); got != c.want {
			t.Errorf("%s % x: %d, want %d", c.t.DType, c.t.Data, got, c.want)
		}
	}
}
