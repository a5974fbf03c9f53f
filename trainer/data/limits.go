package data

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"io"

	"github.com/lcl-project/lcl/internal/bounded"
)

// MaxImagePixels bounds width × height of an image before it is decoded
// (Pillow's MAX_IMAGE_PIXELS, 89,478,485: about 358 MB as RGBA), so a few
// hundred bytes of PNG declaring 60000×60000 are refused instead of
// allocating gigabytes.
const MaxImagePixels = 89478485

// MaxExamples bounds the examples of a split (ImageNet-21k has 14.2
// million), and MaxClasses its classes (21,841): the trainer allocates per
// example and per class pair before it reads a batch.
const (
	MaxExamples = 1 << 25
	MaxClasses  = 1 << 16
)

// checkImageSize reads only the image's header (image.DecodeConfig) and
// refuses sizes beyond MaxImagePixels.
func checkImageSize(b []byte) error {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("decoding image: %w", err)
	}
	return sizeError(format, cfg.Width, cfg.Height)
}

// sizeError is the error for an image of w×h pixels outside the limit, or
// nil.
func sizeError(format string, w, h int) error {
	if px := int64(w) * int64(h); w <= 0 || h <= 0 || px > MaxImagePixels {
		return fmt.Errorf("%s image of %d×%d pixels: want 1 to %d pixels", format, w, h, MaxImagePixels)
	}
	return nil
}

// MaxImageFileBytes bounds an image file: more than any image within
// MaxImagePixels takes as a JPEG or a compressed PNG.
const MaxImageFileBytes = 256 << 20

// readFileInto is os.ReadFile into buf's memory (grown when short), so a
// decoding goroutine reads file after file without allocating. Only a
// regular file of at most MaxImageFileBytes is read: a named pipe would
// block open(2) for ever, a link to /dev/zero never end.
func readFileInto(path string, buf []byte) ([]byte, error) {
	f, err := bounded.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxImageFileBytes {
		return nil, fmt.Errorf("image file of %s: want at most %s", bounded.Bytes(st.Size()), bounded.Bytes(MaxImageFileBytes))
	}
	if int64(cap(buf)) < st.Size()+1 {
		buf = make([]byte, 0, st.Size()+512) // +1: the read that sees EOF needs room
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= MaxImageFileBytes {
				return nil, fmt.Errorf("image file grew past %s while read", bounded.Bytes(MaxImageFileBytes))
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
