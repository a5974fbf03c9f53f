package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idxBytes encodes an unsigned-byte IDX file.
func idxBytes(dims []int, body []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 8, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(body)
	return b.Bytes()
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// idxFixture describes a small MNIST-like data set: example i of a split has
// label labels[i] and every pixel equal to byte(i*7+label).
type idxFixture struct {
	h, w        int
	train, test []uint8 // labels
	gzip        bool
	dotNames    bool // train-images.idx3-ubyte instead of train-images-idx3-ubyte
	cutImages   int  // bytes to drop from the end of the training image file
	cutLabels   int  // bytes to drop from the end of the training label file
}

func idxPixel(i int, label uint8) byte { return byte(i*7 + int(label)) }

func (f idxFixture) write(t testing.TB, dir string) {
	t.Helper()
	for _, split := range []struct {
		prefix string
		labels []uint8
		cut    [2]int
	}{{"train", f.train, [2]int{f.cutImages, f.cutLabels}}, {"t10k", f.test, [2]int{}}} {
		n := len(split.labels)
		pix := make([]byte, n*f.h*f.w)
		for i, l := range split.labels {
			for p := range f.h * f.w {
				pix[i*f.h*f.w+p] = idxPixel(i, l)
			}
		}
		img := idxBytes([]int{n, f.h, f.w}, pix)
		lab := idxBytes([]int{n}, split.labels)
		img, lab = img[:len(img)-split.cut[0]], lab[:len(lab)-split.cut[1]]
		sep := "-"
		if f.dotNames {
			sep = "."
		}
		imgName, labName := split.prefix+"-images"+sep+"idx3-ubyte", split.prefix+"-labels"+sep+"idx1-ubyte"
		if f.gzip {
			img, lab = gz(t, img), gz(t, lab)
			imgName, labName = imgName+".gz", labName+".gz"
		}
		writeFile(t, filepath.Join(dir, imgName), img)
		writeFile(t, filepath.Join(dir, labName), lab)
	}
}

// cyclic returns n labels 0,1,...,k-1,0,1,...
func cyclic(n, k int) []uint8 {
	out := make([]uint8, n)
	for i := range out {
		out[i] = uint8(i % k)
	}
	return out
}

// cifarRecord builds a record: label bytes, then pixels where channel ch of
// example i is byte(i + 50*ch + x) at column x.
func cifarRecord(i int, labels ...uint8) []byte {
	b := append([]byte{}, labels...)
	for ch := range 3 {
		for y := range 32 {
			for x := range 32 {
				_ = y
				b = append(b, byte(i+50*ch+x))
			}
		}
	}
	return b
}

// writeCIFAR10 writes five training batches of per examples each and a test
// batch of test examples; labels cycle through 0..9.
func writeCIFAR10(t testing.TB, dir string, per, test int) {
	t.Helper()
	i := 0
	for b := 1; b <= 5; b++ {
		var buf []byte
		for range per {
			buf = append(buf, cifarRecord(i, uint8(i%10))...)
			i++
		}
		writeFile(t, filepath.Join(dir, fmt.Sprintf("data_batch_%d.bin", b)), buf)
	}
	var buf []byte
	for j := range test {
		buf = append(buf, cifarRecord(j, uint8(j%10))...)
	}
	writeFile(t, filepath.Join(dir, "test_batch.bin"), buf)
}

// writeCIFAR100 writes train.bin and test.bin: fine label i%100, coarse i%20.
func writeCIFAR100(t testing.TB, dir string, train, test int) {
	t.Helper()
	for name, n := range map[string]int{"train.bin": train, "test.bin": test} {
		var buf []byte
		for i := range n {
			buf = append(buf, cifarRecord(i, uint8(i%20), uint8(i%100))...)
		}
		writeFile(t, filepath.Join(dir, name), buf)
	}
}

// testImage is a w×h image whose colour identifies the class and varies
// across columns, so crops and flips change the decoded values.
func testImage(w, h, class int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(40 * class), uint8(255 * x / w), uint8(255 * y / h), 255})
		}
	}
	return img
}

func encodeImage(t testing.TB, img image.Image, ext string) []byte {
	t.Helper()
	var b bytes.Buffer
	var err error
	if ext == ".png" {
		err = png.Encode(&b, img)
	} else {
		err = jpeg.Encode(&b, img, &jpeg.Options{Quality: 90})
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeFolder writes root/<split>/<class>/img<j>.jpg (every third a .png)
// for each class, per images per class and split, sizes varying.
func writeFolder(t testing.TB, root string, classes []string, per int) {
	t.Helper()
	for _, split := range []string{"train", "val"} {
		for k, c := range classes {
			for j := range per {
				ext := ".jpg"
				if j%3 == 2 {
					ext = ".png"
				}
				img := testImage(40+7*j, 30+5*k, k)
				writeFile(t, filepath.Join(root, split, c, fmt.Sprintf("img%d%s", j, ext)), encodeImage(t, img, ext))
			}
		}
	}
}

// writeBirds writes a CUB/NABirds-style tree: ids are "id<n>" strings, class
// ids are given, every second image is a training image.
func writeBirds(t testing.TB, root string, classIDs []int, names map[int]string, per int) {
	t.Helper()
	var images, labels, split, classes strings.Builder
	n := 0
	for k, id := range classIDs {
		for j := range per {
			rel := fmt.Sprintf("%03d.class/img_%d.jpg", id, j)
			writeFile(t, filepath.Join(root, "images", rel), encodeImage(t, testImage(24, 20, k), ".jpg"))
			fmt.Fprintf(&images, "id%d %s\n", n, rel)
			fmt.Fprintf(&labels, "id%d %d\n", n, id)
			fmt.Fprintf(&split, "id%d %d\n", n, (j+1)%2)
			n++
		}
	}
	for id, name := range names {
		fmt.Fprintf(&classes, "%d %s\n", id, name)
	}
	writeFile(t, filepath.Join(root, "images.txt"), []byte(images.String()))
	writeFile(t, filepath.Join(root, "image_class_labels.txt"), []byte(labels.String()))
	writeFile(t, filepath.Join(root, "train_test_split.txt"), []byte(split.String()))
	writeFile(t, filepath.Join(root, "classes.txt"), []byte(classes.String()))
}
