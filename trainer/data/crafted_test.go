package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/bounded/boundedtest"
)

// pngHeader is a PNG whose IHDR declares w×h RGB pixels, with a tiny IDAT:
// what DecodeConfig reads, and what a careless decoder would allocate for.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		c := append([]byte(typ), data...)
		b.Write(c)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(c))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x63, 0, 0, 0, 1, 0, 1})
	chunk("IEND", nil)
	return b.Bytes()
}

// jpegDeclaring is a small valid JPEG whose frame header declares w×h.
func jpegDeclaring(t *testing.T, w, h uint16) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewYCbCr(image.Rect(0, 0, 16, 16), image.YCbCrSubsampleRatio420), nil); err != nil {
		t.Fatal(err)
	}
	out := b.Bytes()
	i := bytes.Index(out, []byte{0xff, 0xc0}) // SOF0: length, precision, height, width
	if i < 0 {
		t.Fatal("no SOF0 marker")
	}
	binary.BigEndian.PutUint16(out[i+5:], h)
	binary.BigEndian.PutUint16(out[i+7:], w)
	return out
}

// The audit's 254-byte PNG that declares 60000×60000, and a JPEG that does:
// refused from the header, naming the file and the size, without decoding,
// by libjpeg-turbo's path as by Go's decoders.
func TestDecodeCraftedHugeImage(t *testing.T) {
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"big.png", pngHeader(60000, 60000), "png image of 60000×60000 pixels: want 1 to 89478485 pixels"},
		{"big.jpg", jpegDeclaring(t, 60000, 60000), "jpeg image of 60000×60000 pixels: want 1 to 89478485 pixels"},
	} {
		for _, turbo := range []bool{false, true} {
			withDecoder(t, turbo)
			root := t.TempDir()
			for _, split := range []string{"train", "val"} {
				writeFile(t, filepath.Join(root, split, "a", c.name), c.file)
			}
			train, _, err := Open("folder:" + root + "?size=8")
			if err != nil {
				t.Fatal(err)
			}
			dst := make([]float32, 3*8*8)
			boundedtest.MaxAlloc(t, 1<<20, "decoding "+c.name+" that declares 60000×60000", func() {
				err = train.Decode(0, dst, false, rand.New(rand.NewPCG(1, 2)))
			})
			var ee *ExampleError
			if !errors.As(err, &ee) || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%s, turbo %v: err = %v", c.name, turbo, err)
			}
		}
	}
}

// The audit's gzip IDX bombs: headers declaring more data than the ceiling
// (or a product that overflows) are refused at once; a plausible header on
// a stream that decompresses past it is read only up to what it declares.
func TestOpenIDXCrafted(t *testing.T) {
	for _, c := range []struct {
		name string
		dims []int
		body []byte
		want string
	}{
		{"4 GiB declared", []int{1 << 22, 32, 32}, make([]byte, 1<<20), "make 4 GiB of data, more than the 1 GiB limit"},
		{"product overflows", []int{1<<32 - 1, 1<<32 - 1, 1<<32 - 1}, nil, "more than the 1 GiB limit"},
		{"no images of 2^64 pixels", []int{0, 1<<32 - 1, 1<<32 - 1}, nil, "IDX image size 4294967295x4294967295"},
	} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "train-images-idx3-ubyte.gz"), gz(t, idxBytes(c.dims, c.body)))
		writeFile(t, filepath.Join(dir, "train-labels-idx1-ubyte"), idxBytes([]int{4}, []byte{0, 1, 2, 3}))
		var err error
		boundedtest.MaxAlloc(t, 8<<20, c.name, func() { _, _, err = Open("mnist:" + dir) })
		if err == nil || !strings.Contains(err.Error(), "train-images-idx3-ubyte.gz: IDX ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v", c.name, err)
		}
	}
	// 4 examples of 2×2 declared, 64 MiB of zeros behind them (a 64 KB
	// gzip): only the 16 declared bytes are decompressed and kept.
	dir := t.TempDir()
	idxFixture{h: 2, w: 2, train: cyclic(4, 10), test: cyclic(2, 10)}.write(t, dir)
	img := idxBytes([]int{4, 2, 2}, make([]byte, 64<<20))
	os.Remove(filepath.Join(dir, "train-images-idx3-ubyte"))
	writeFile(t, filepath.Join(dir, "train-images-idx3-ubyte.gz"), gz(t, img))
	var train Dataset
	var err error
	boundedtest.MaxAlloc(t, 8<<20, "a declared 16 bytes followed by 64 MiB", func() { train, _, err = Open("mnist:" + dir) })
	if err != nil || train.Len() != 4 {
		t.Fatalf("Open: %v", err)
	}
}

// FuzzReadIDX: no IDX file, raw or gzip, panics; accepted data never
// exceeds what the header declares.
func FuzzReadIDX(f *testing.F) {
	f.Add(idxBytes([]int{2, 2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8}))
	f.Add(idxBytes([]int{1 << 22, 32, 32}, nil))
	f.Add(idxBytes([]int{3}, []byte{1}))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		path := filepath.Join(t.TempDir(), "x")
		if err := os.WriteFile(path, in, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, nd := range []int{1, 3} {
			dims, body, want, err := readIDX(path, nd)
			if err != nil {
				continue
			}
			if len(dims) != nd || len(body) > want || want > MaxIDXBytes {
				t.Fatalf("dims %v, %d bytes of %d declared", dims, len(body), want)
			}
		}
	})
}

// FuzzReadCIFAR: no CIFAR batch file panics or yields a label out of range
// (the reader's scan of one file, in memory).
func FuzzReadCIFAR(f *testing.F) {
	f.Add(append(cifarRecord(0, 3), cifarRecord(1, 9)...), false)
	f.Add(cifarRecord(0, 3, 77)[:100], true)
	f.Add(append(cifarRecord(0, 12), 1, 2), false)
	f.Fuzz(func(t *testing.T, in []byte, skip bool) {
		opt := &Options{SkipBad: skip}
		s := &cifarSet{rec: 1 + cifarPixels, classes: numbered(10), opt: opt}
		index := 0
		if err := s.scan(0, "b.bin", bytes.NewReader(in), int64(len(in)), 0, newWarner(func(string) {}), &index); err != nil {
			return
		}
		for i := range s.Len() {
			if l := s.Label(i); l < 0 || l >= 10 {
				t.Fatalf("label %d of example %d", l, i)
			}
		}
		if s.Len()+s.skipped != index {
			t.Fatalf("%d examples and %d skipped of %d records", s.Len(), s.skipped, index)
		}
	})
}
