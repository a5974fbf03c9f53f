package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lcl-project/lcl/internal/bounded/boundedtest"
)

// segment is a JPEG marker segment: 0xFF, marker, length, payload.
func segment(marker byte, payload ...byte) []byte {
	b := []byte{0xff, marker, 0, 0}
	binary.BigEndian.PutUint16(b[2:], uint16(len(payload)+2))
	return append(b, payload...)
}

// manyScansJPEG is a valid progressive grey w×w JPEG (w a multiple of 8)
// of one DC scan and acScans AC scans, each AC scan a few bytes of
// end-of-band runs over every block (the audit's file: 2,506 scans in
// 48 KB, 5.4 s to decode in Go).
func manyScansJPEG(w, acScans int) []byte {
	var b bytes.Buffer
	b.Write([]byte{0xff, 0xd8})
	q := make([]byte, 65)
	for i := 1; i < 65; i++ {
		q[i] = 1
	}
	b.Write(segment(0xdb, q...))
	b.Write(segment(0xc2, 8, byte(w>>8), byte(w), byte(w>>8), byte(w), 1, 1, 0x11, 0)) // SOF2, 1 component
	blocks := (w / 8) * (w / 8)                                                        // a power of 4
	r := 0
	for 1<<(r+1) <= blocks && r < 14 {
		r++
	}
	runs := blocks >> r // end-of-band runs of 2^r blocks: "0" and r zero bits each
	counts := make([]byte, 16)
	counts[0] = 1                                                                  // one code of length 1: "0"
	b.Write(segment(0xc4, append(append([]byte{0x00}, counts...), 0x00)...))       // DC: category 0
	b.Write(segment(0xc4, append(append([]byte{0x10}, counts...), byte(r<<4))...)) // AC: EOB run of 2^r
	b.Write(segment(0xda, 1, 1, 0x00, 0, 0, 0x00))                                 // DC first scan: "0" per block
	b.Write(bitsPadded(blocks))
	ac := bitsPadded((1 + r) * runs)
	for range acScans {
		b.Write(segment(0xda, 1, 1, 0x00, 1, 63, 0x00)) // AC first scan, bands 1-63
		b.Write(ac)
	}
	b.Write([]byte{0xff, 0xd9})
	return b.Bytes()
}

// bitsPadded is n zero bits padded with 1-bits to a whole byte.
func bitsPadded(n int) []byte {
	b := make([]byte, (n+7)/8)
	if pad := 8*len(b) - n; pad > 0 {
		b[len(b)-1] |= byte(1<<pad - 1)
	}
	return b
}

// headerJPEG is the frame header of a w×h JPEG of comps components (a
// progressive one when progressive), followed by a scan with no data.
func headerJPEG(w, h, comps int, progressive bool) []byte {
	sof := byte(0xc0)
	if progressive {
		sof = 0xc2
	}
	payload := []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(comps)}
	for c := range comps {
		payload = append(payload, byte(c+1), 0x11, 0)
	}
	b := append([]byte{0xff, 0xd8}, segment(0xc0+(sof-0xc0), payload...)...)
	b = append(b, segment(0xda, 1, 1, 0, 0, 0, 0)...)
	return append(b, 0, 0, 0, 0xff, 0xd9)
}

func decodeOne(t *testing.T, name string, file []byte) error {
	t.Helper()
	root := t.TempDir()
	for _, split := range []string{"train", "val"} {
		writeFile(t, filepath.Join(root, split, "a", name), file)
	}
	train, _, err := Open("folder:" + root + "?size=8")
	if err != nil {
		t.Fatal(err)
	}
	return train.Decode(0, make([]float32, 3*8*8), false, rand.New(rand.NewPCG(1, 2)))
}

// One set of limits for every decoder (issue 23, item 9): a grey
// progressive JPEG of 2,506 scans, which only Go's decoder takes, is
// refused as libjpeg-turbo's path refuses one, before it is decoded; a
// progressive CMYK 9400² JPEG, whose coefficients alone take 1.4 GB in
// Go's decoder, is refused from its header by both paths.
func TestJPEGLimitsOnEveryDecoder(t *testing.T) {
	many := manyScansJPEG(2048, 2505)
	if n := jpegScans(many, 1<<20); n != 2506 {
		t.Fatalf("the crafted file has %d scans, want 2506", n)
	}
	start := time.Now()
	err := decodeOne(t, "scans.jpg", many)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("refusing it took %v", took)
	}
	var ee *ExampleError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "scans.jpg: example 0: jpeg: more than 500 scans") {
		t.Errorf("2,506 scans: %v", err)
	}
	// The same file with 20 scans decodes (the limit is on scans, not on
	// the layout) in Go's decoder.
	if err := decodeOne(t, "few.jpg", manyScansJPEG(64, 19)); err != nil {
		t.Errorf("a progressive grey JPEG of 20 scans: %v", err)
	}
	for _, turbo := range []bool{false, true} {
		withDecoder(t, turbo)
		boundedtest.MaxAlloc(t, 4<<20, "a progressive CMYK 9400² JPEG", func() {
			err = decodeOne(t, "cmyk.jpg", headerJPEG(9400, 9400, 4, true))
		})
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), "progressive jpeg of 9400×9400 pixels in 4 components holds 353440000 DCT coefficients while it decodes: want at most 134217727") {
			t.Errorf("turbo %v: progressive CMYK 9400²: %v", turbo, err)
		}
	}
	// Baseline, the same size passes the header checks (its decoder keeps
	// no coefficients).
	if err := checkJPEGHeader(headerJPEG(9400, 9400, 4, false)); err != nil {
		t.Errorf("baseline CMYK 9400²: %v", err)
	}
}

// An image folder's named pipe (open(2) would wait for a writer for ever)
// and link to /dev/zero (reading would never end) are refused in one line
// naming them (items 7, 11); a class folder that is a symbolic link is
// read like any other (item 13: it was silently dropped).
func TestFolderReadsOnlyRegularFilesFollowsLinkedClasses(t *testing.T) {
	root := t.TempDir()
	writeFolder(t, root, []string{"cat", "dog"}, 2)
	elsewhere := t.TempDir()
	writeFolder(t, elsewhere, []string{"fox"}, 2)
	for _, split := range []string{"train", "val"} {
		if err := os.Symlink(filepath.Join(elsewhere, split, "fox"), filepath.Join(root, split, "fox")); err != nil {
			t.Fatal(err)
		}
	}
	train, test, err := Open("folder:" + root + "?size=8")
	if err != nil {
		t.Fatal(err)
	}
	if train.NumClasses() != 3 || train.Len() != 6 || test.Len() != 6 || train.(*imageSet).classes[2] != "fox" {
		t.Fatalf("with a linked class folder: %d classes, %d and %d images, want 3, 6, 6", train.NumClasses(), train.Len(), test.Len())
	}
	dst := make([]float32, 3*8*8)
	if err := train.Decode(5, dst, false, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Errorf("an image of the linked class: %v", err)
	}

	fifo := filepath.Join(root, "train", "cat", "fifo.jpg")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(root, "train", "dog", "zero.png")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := Open("folder:" + root + "?size=8"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+": example 0: not a regular file") || strings.Contains(err.Error(), "\n") {
			t.Errorf("a named pipe among the images: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open still blocked after 10 s on a named pipe")
	}
	var warnings []string
	sp, err := ParseSpec("folder:" + root + "?size=8&skip-bad=1")
	if err != nil {
		t.Fatal(err)
	}
	sp.Options.Warn = func(s string) { warnings = append(warnings, s) }
	train, _, err = sp.Open()
	if err != nil {
		t.Fatalf("skip_bad: %v", err)
	}
	if train.Len() != 6 || train.Skipped() != 2 || len(warnings) != 2 || !strings.Contains(warnings[1], "zero.png") {
		t.Errorf("skip_bad: %d images, %d skipped, warnings %q", train.Len(), train.Skipped(), warnings)
	}
	// A file replaced by a pipe after the listing is refused when read.
	os.Remove(fifo)
	img := filepath.Join(root, "train", "cat", "img0.jpg")
	os.Remove(img)
	syscall.Mkfifo(img, 0o644)
	go func() { done <- train.Decode(0, dst, false, rand.New(rand.NewPCG(1, 2))) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
			t.Errorf("decoding a pipe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Decode still blocked after 10 s on a named pipe")
	}
}
