package data

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
)

// MaxImagePixels bounds width × height of an image before it is decoded
// (Pillow's MAX_IMAGE_PIXELS, 89,478,485: about 358 MB as RGBA), so a few
// hundred bytes of PNG declaring 60000×60000 are refused instead of
// allocating gigabytes.
const MaxImagePixels = 89478485

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

// readFileInto is os.ReadFile into buf's memory (grown when short), so a
// decoding goroutine reads file after file without allocating.
func readFileInto(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && int64(cap(buf)) < st.Size()+1 {
		buf = make([]byte, 0, st.Size()+512) // +1: the read that sees EOF needs room
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
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
