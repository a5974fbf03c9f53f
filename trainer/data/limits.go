package data

import (
	"bytes"
	"fmt"
	"image"
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
	if px := int64(cfg.Width) * int64(cfg.Height); cfg.Width <= 0 || cfg.Height <= 0 || px > MaxImagePixels {
		return fmt.Errorf("%s image of %d×%d pixels: want 1 to %d pixels", format, cfg.Width, cfg.Height, MaxImagePixels)
	}
	return nil
}
