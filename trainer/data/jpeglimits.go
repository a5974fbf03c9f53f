package data

import (
	"bytes"
	"fmt"
)

// Limits on a JPEG, the same for libjpeg-turbo's path and Go's decoder
// (grey, CMYK and other layouts, or LCL_JPEG=go), checked before either
// decodes: MaxImagePixels, and
const (
	// MaxJPEGScans bounds the scans of a JPEG (a progressive one has about
	// 10; libjpeg-turbo's own fuzzers stop at 500, as djpeg -maxscans
	// does): each scan passes over the whole coefficient buffer, so a
	// 48 KB file of thousands of tiny scans decodes for seconds.
	MaxJPEGScans = 500
	// MaxProgressiveSamples bounds the samples (all components, whole
	// blocks) of a progressive JPEG, whose decoders keep every DCT
	// coefficient until the last scan (Go's: 4 bytes each): a 4:2:0 colour
	// image at MaxImagePixels. A progressive CMYK image of 9400² pixels, 4.4
	// times as many, needed 1.4 GB in Go's decoder.
	MaxProgressiveSamples = 3 * MaxImagePixels / 2
)

// jpegFrame is what a JPEG's frame header says.
type jpegFrame struct {
	w, h        int
	progressive bool
	comps       [][2]int // sampling factors h, v per component
}

// samples is how many DCT coefficients the decoder keeps for the frame:
// per component its blocks of 8×8 over whole MCUs (how Go's decoder
// allocates them).
func (f jpegFrame) samples() int64 {
	hmax, vmax := 1, 1
	for _, c := range f.comps {
		hmax, vmax = max(hmax, c[0]), max(vmax, c[1])
	}
	mx := (int64(f.w) + 8*int64(hmax) - 1) / (8 * int64(hmax))
	my := (int64(f.h) + 8*int64(vmax) - 1) / (8 * int64(vmax))
	var n int64
	for _, c := range f.comps {
		n += mx * my * int64(c[0]*c[1]) * 64
	}
	return n
}

// checkJPEGHeader reads b's frame header (the segments before the first
// scan) and refuses a frame beyond MaxImagePixels or, progressive, beyond
// MaxProgressiveSamples. A header it cannot read is left to the decoders
// to report, in their words.
func checkJPEGHeader(b []byte) error {
	f, ok := readJPEGFrame(b)
	if !ok {
		return nil
	}
	if err := sizeError("jpeg", f.w, f.h); err != nil {
		return err
	}
	if n := f.samples(); f.progressive && n > MaxProgressiveSamples {
		return fmt.Errorf("progressive jpeg of %d×%d pixels in %d components holds %d DCT coefficients while it decodes: want at most %d (a colour image of %d pixels)",
			f.w, f.h, len(f.comps), n, MaxProgressiveSamples, MaxImagePixels)
	}
	return nil
}

// readJPEGFrame walks b's segments up to the first scan.
func readJPEGFrame(b []byte) (f jpegFrame, ok bool) {
	if len(b) < 4 || b[0] != 0xff || b[1] != 0xd8 {
		return f, false
	}
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xff {
			return f, false
		}
		m := b[i+1]
		if m == 0xff { // fill byte
			i++
			continue
		}
		if m == 0x01 || (m >= 0xd0 && m <= 0xd7) {
			i += 2
			continue
		}
		if m == 0xda || m == 0xd9 {
			return f, f.w > 0
		}
		n := int(b[i+2])<<8 | int(b[i+3])
		if n < 2 || i+2+n > len(b) {
			return f, false
		}
		seg := b[i+4 : i+2+n]
		if isSOF(m) {
			if len(seg) < 6 {
				return f, false
			}
			f.h, f.w = int(seg[1])<<8|int(seg[2]), int(seg[3])<<8|int(seg[4])
			nc := int(seg[5])
			if len(seg) < 6+3*nc || nc == 0 {
				return f, false
			}
			f.progressive = m == 0xc2 || m == 0xc6 || m == 0xca || m == 0xce
			f.comps = f.comps[:0]
			for c := range nc {
				s := seg[6+3*c+1]
				f.comps = append(f.comps, [2]int{max(int(s>>4), 1), max(int(s&15), 1)})
			}
		}
		i += 2 + n
	}
	return f, false
}

// isSOF reports whether marker m starts a frame (SOF0-15 but DHT, JPG, DAC).
func isSOF(m byte) bool { return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc }

// jpegScans counts the scans of b, stopping past limit: it walks the
// segments (skipping their contents, where an embedded thumbnail has
// markers of its own) and, after each start of scan, the entropy-coded
// data to the next marker. One pass over the bytes, far cheaper than one
// decoding pass over the coefficients.
func jpegScans(b []byte, limit int) int {
	n := 0
	for i := 2; i+1 < len(b) && n <= limit; {
		if b[i] != 0xff {
			return n // not a marker: the decoders report it
		}
		m := b[i+1]
		switch {
		case m == 0xff: // fill byte
			i++
			continue
		case m == 0xd9:
			return n
		case m == 0x01 || (m >= 0xd0 && m <= 0xd7):
			i += 2
			continue
		}
		if i+4 > len(b) {
			return n
		}
		i += 2 + (int(b[i+2])<<8 | int(b[i+3]))
		if m != 0xda {
			continue
		}
		n++
		// Entropy-coded data: to the next 0xFF not followed by a stuffed
		// 0x00 or a restart marker.
		for i < len(b) {
			j := bytes.IndexByte(b[i:], 0xff)
			if j < 0 || i+j+1 >= len(b) {
				return n
			}
			i += j
			if c := b[i+1]; c != 0x00 && (c < 0xd0 || c > 0xd7) {
				break
			}
			i += 2
		}
	}
	return n
}

// checkJPEGScans refuses b when it has more than MaxJPEGScans scans.
func checkJPEGScans(b []byte) error {
	if n := jpegScans(b, MaxJPEGScans); n > MaxJPEGScans {
		return fmt.Errorf("jpeg: more than %d scans: not decoded (a progressive JPEG has about 10)", MaxJPEGScans)
	}
	return nil
}
