//go:build cgo && !noturbo

package data

// libjpeg-turbo through its libjpeg API (Debian's libjpeg62-turbo-dev, the
// library PIL links): JPEGs decode straight to their Y/Cb/Cr planes (raw
// data: no colour conversion or chroma upsampling at full resolution;
// resample.go does both at the output size), with SIMD Huffman decoding
// and IDCT, at a reduced DCT scale (1/2, 1/4, 1/8) when the crop still
// covers the output size at that scale, and only down to the last row the
// crop's filter reads: the rows below are never Huffman-decoded. (The
// TurboJPEG API of libjpeg-turbo 2.1 cannot stop early; that is why this is
// the libjpeg API.) Build with -tags noturbo, or CGO_ENABLED=0, for Go's
// decoder alone.

// #cgo LDFLAGS: -ljpeg
// #include <setjmp.h>
// #include <stdio.h>
// #include <stdlib.h>
// #include <string.h>
// #include <jpeglib.h>
// #include <jpegint.h>
//
// typedef struct {
// 	struct jpeg_decompress_struct d;
// 	struct jpeg_error_mgr em;
// 	struct jpeg_progress_mgr pm;
// 	jmp_buf jb;
// 	int max_scans;
// 	char msg[JMSG_LENGTH_MAX];
// } lt_jpeg;
//
// // What lt_jpeg_start found: the scaled image, and per component its plane
// // (stride and rows to allocate: whole blocks and iMCU rows, which the
// // decoder writes) and how much coarser than luma it is.
// typedef struct {
// 	int w, h, hf, vf, stride[3], rows[3];
// } lt_jpeg_info;
//
// static void lt_jpeg_fail(j_common_ptr c) {
// 	lt_jpeg *j = (lt_jpeg *)c->client_data;
// 	(*c->err->format_message)(c, j->msg);
// 	longjmp(j->jb, 1);
// }
//
// // Warnings are corrupt data libjpeg would paper over (with grey, for a
// // truncated file): errors here, as in Go's decoder.
// static void lt_jpeg_emit(j_common_ptr c, int level) {
// 	if (level < 0) lt_jpeg_fail(c);
// }
//
// // A progressive file of thousands of tiny scans makes libjpeg pass over
// // the whole coefficient buffer for each (a crafted file decoding for
// // minutes): stop past max_scans, as djpeg's -maxscans does.
// static void lt_jpeg_progress(j_common_ptr c) {
// 	lt_jpeg *j = (lt_jpeg *)c->client_data;
// 	if (j->max_scans > 0 && j->d.input_scan_number > j->max_scans) {
// 		snprintf(j->msg, sizeof j->msg, "more than %d scans: not decoded (a progressive JPEG has about 10)", j->max_scans);
// 		longjmp(j->jb, 1);
// 	}
// }
//
// static lt_jpeg *lt_jpeg_new(void) {
// 	lt_jpeg *j = calloc(1, sizeof *j);
// 	if (!j) return NULL;
// 	j->d.err = jpeg_std_error(&j->em);
// 	j->em.error_exit = lt_jpeg_fail;
// 	j->em.emit_message = lt_jpeg_emit;
// 	j->d.client_data = j;
// 	if (setjmp(j->jb)) { free(j); return NULL; }
// 	jpeg_create_decompress(&j->d);
// 	j->pm.progress_monitor = lt_jpeg_progress;
// 	j->d.progress = &j->pm;
// 	return j;
// }
//
// static void lt_jpeg_free(lt_jpeg *j) { jpeg_destroy_decompress(&j->d); free(j); }
//
// // The chroma layouts image.YCbCr has: luma h×v, chroma 1×1.
// static int lt_jpeg_layout(struct jpeg_decompress_struct *d) {
// 	if (d->num_components != 3 || d->jpeg_color_space != JCS_YCbCr || d->data_precision != 8) return 0;
// 	jpeg_component_info *c = d->comp_info;
// 	if (c[1].h_samp_factor != 1 || c[1].v_samp_factor != 1 || c[2].h_samp_factor != 1 || c[2].v_samp_factor != 1) return 0;
// 	int h = c[0].h_samp_factor, v = c[0].v_samp_factor;
// 	return (h == 1 || h == 2 || h == 4) && (v == 1 || v == 2);
// }
//
// // lt_jpeg_header reads b's size; *ok is whether lt_jpeg_start handles it.
// static int lt_jpeg_header(lt_jpeg *j, const unsigned char *b, unsigned long n, int *w, int *h, int *ok) {
// 	if (setjmp(j->jb)) { jpeg_abort_decompress(&j->d); return -1; }
// 	jpeg_mem_src(&j->d, b, n);
// 	jpeg_read_header(&j->d, TRUE);
// 	*w = (int)j->d.image_width, *h = (int)j->d.image_height, *ok = lt_jpeg_layout(&j->d);
// 	jpeg_abort_decompress(&j->d);
// 	return 0;
// }
//
// // lt_jpeg_start reads the header of b, checks that an end-of-image marker
// // follows the first scan (rows below the crop are never decoded, so this is
// // what still refuses a truncated file whatever the crop), and starts a raw
// // decode at scale 1/den. The decoder is left started: lt_jpeg_rows or
// // lt_jpeg_abort follows.
// static int lt_jpeg_start(lt_jpeg *j, const unsigned char *b, unsigned long n, int den, int max_scans, lt_jpeg_info *in) {
// 	struct jpeg_decompress_struct *d = &j->d;
// 	j->max_scans = max_scans;
// 	if (setjmp(j->jb)) { jpeg_abort_decompress(d); return -1; }
// 	jpeg_mem_src(d, b, n);
// 	jpeg_read_header(d, TRUE);
// 	if (!lt_jpeg_layout(d)) {
// 		snprintf(j->msg, sizeof j->msg, "unsupported JPEG layout");
// 		jpeg_abort_decompress(d);
// 		return -1;
// 	}
// 	const unsigned char *p = d->src->next_input_byte, *q = b + n - 2;
// 	while (q >= p && !(q[0] == 0xFF && q[1] == 0xD9)) q--;
// 	if (q < p) {
// 		snprintf(j->msg, sizeof j->msg, "truncated JPEG: no end-of-image marker");
// 		jpeg_abort_decompress(d);
// 		return -1;
// 	}
// 	d->raw_data_out = TRUE;
// 	d->scale_num = 1;
// 	d->scale_denom = den;
// 	d->dct_method = JDCT_ISLOW;
// 	jpeg_start_decompress(d);
// 	// At reduced scales libjpeg may decode chroma at a larger DCT size than
// 	// luma instead of upsampling it later: the planes then differ less.
// 	jpeg_component_info *c = d->comp_info;
// 	// The decoder writes width_in_blocks blocks per row (one more MCU's
// 	// width is slack) and whole iMCU rows.
// 	in->w = d->output_width, in->h = d->output_height;
// 	int hl = c[0].h_samp_factor * c[0].DCT_scaled_size, hc = c[1].h_samp_factor * c[1].DCT_scaled_size;
// 	int vl = c[0].v_samp_factor * c[0].DCT_scaled_size, vc = c[1].v_samp_factor * c[1].DCT_scaled_size;
// 	in->hf = hl % hc == 0 ? hl / hc : 0;
// 	in->vf = vl % vc == 0 ? vl / vc : 0;
// 	for (int k = 0; k < 3; k++) {
// 		in->stride[k] = (int)(c[k].width_in_blocks + c[k].h_samp_factor) * c[k].DCT_scaled_size;
// 		in->rows[k] = (int)d->total_iMCU_rows * c[k].v_samp_factor * c[k].DCT_scaled_size;
// 	}
// 	return 0;
// }
//
// static void lt_jpeg_abort(lt_jpeg *j) { jpeg_abort_decompress(&j->d); }
//
// // lt_jpeg_rows decodes iMCU rows into the planes (allocated as
// // lt_jpeg_info said) until at least want output rows are done, then stops
// // the decode; it returns the rows done, or -1. Only the iMCU columns
// // covering output columns [x0, x1) go through the IDCT (what
// // jpeg_crop_scanline does, which raw output does not offer: the same two
// // fields of libjpeg-turbo's decompression master), each at its place in
// // the planes; the other columns hold whatever they held.
// static int lt_jpeg_rows(lt_jpeg *j, unsigned char *y, unsigned char *cb, unsigned char *cr, const lt_jpeg_info *in,
//                         int want, int x0, int x1) {
// 	struct jpeg_decompress_struct *d = &j->d;
// 	if (setjmp(j->jb)) { jpeg_abort_decompress(d); return -1; }
// 	unsigned char *base[3] = {y, cb, cr};
// 	long off[3] = {0, 0, 0};
// #if LIBJPEG_TURBO_VERSION_NUMBER >= 1005000
// 	int align = d->min_DCT_scaled_size * d->max_h_samp_factor, cols = ((int)d->output_width + align - 1) / align;
// 	int first = x0 / align, last = (x1 + align - 1) / align - 1;
// 	if (first < 0) first = 0;
// 	if (last > cols - 1) last = cols - 1;
// 	if (first <= last) {
// 		d->master->first_iMCU_col = (JDIMENSION)first;
// 		d->master->last_iMCU_col = (JDIMENSION)last;
// 		for (int k = 0; k < 3; k++) {
// 			jpeg_component_info *c = &d->comp_info[k];
// 			d->master->first_MCU_col[k] = (JDIMENSION)(first * c->h_samp_factor);
// 			d->master->last_MCU_col[k] = (JDIMENSION)((last + 1) * c->h_samp_factor - 1);
// 			off[k] = (long)first * c->h_samp_factor * c->DCT_scaled_size;
// 		}
// 	}
// #endif
// 	JSAMPROW ptr[3][64];
// 	JSAMPARRAY planes[3] = {ptr[0], ptr[1], ptr[2]};
// 	int lines = d->max_v_samp_factor * d->min_DCT_scaled_size;
// 	if (want > (int)d->output_height) want = (int)d->output_height;
// 	for (int imcu = 0; (int)d->output_scanline < want && imcu < (int)d->total_iMCU_rows; imcu++) {
// 		for (int k = 0; k < 3; k++) {
// 			int r = d->comp_info[k].v_samp_factor * d->comp_info[k].DCT_scaled_size;
// 			for (int i = 0; i < r && i < 64; i++) ptr[k][i] = base[k] + (long)(imcu * r + i) * in->stride[k] + off[k];
// 		}
// 		if (jpeg_read_raw_data(d, planes, lines) == 0) break; // suspended: cannot happen with a memory source
// 	}
// 	int done = (int)d->output_scanline;
// 	jpeg_abort_decompress(d);
// 	return done < want ? -1 : done;
// }
import "C"

import (
	"errors"
	"image"
	"runtime"
	"sync"
	"unsafe"
)

const turboBuilt = true

type jpegHandle struct {
	j       *C.lt_jpeg
	cleanup runtime.Cleanup
}

var jpegPool = sync.Pool{New: func() any {
	j := C.lt_jpeg_new()
	if j == nil {
		return (*jpegHandle)(nil)
	}
	t := &jpegHandle{j: j}
	t.cleanup = runtime.AddCleanup(t, func(j *C.lt_jpeg) { C.lt_jpeg_free(j) }, j)
	return t
}}

func (t *jpegHandle) err() error {
	return errors.New("libjpeg-turbo: " + C.GoString(&t.j.msg[0]))
}

// turboHeader reads a JPEG's size. ok is false for what decodeTurbo does
// not handle (grey, CMYK, RGB-coded, 12-bit, unusual subsampling): the
// caller then uses Go's decoder.
func turboHeader(b []byte) (w, h int, ok bool, err error) {
	t := jpegPool.Get().(*jpegHandle)
	if t == nil {
		return 0, 0, false, nil
	}
	defer jpegPool.Put(t)
	var cw, ch, cok C.int
	rc := C.lt_jpeg_header(t.j, (*C.uchar)(unsafe.Pointer(&b[0])), C.ulong(len(b)), &cw, &ch, &cok)
	runtime.KeepAlive(b)
	if rc != 0 {
		return 0, 0, false, t.err()
	}
	return int(cw), int(ch), cok != 0, nil
}

// ratioOf is the image.YCbCr layout of chroma hf× and vf× coarser than
// luma (chromaFactors' inverse), or -1.
func ratioOf(hf, vf int) image.YCbCrSubsampleRatio {
	for r := image.YCbCrSubsampleRatio444; r <= image.YCbCrSubsampleRatio410; r++ {
		if h, v, ok := chromaFactors(r); ok && h == hf && v == vf {
			return r
		}
	}
	return -1
}

// decodeTurbo decodes b at 1/den of its size (den 1, 2, 4 or 8) into img's
// planes (reused when large enough), as an *image.YCbCr of the scaled size.
// Only the region need(w, h, hf, vf) names (x0 ≤ x < x1, y < rows, in
// pixels of the scaled w×h image whose chroma is hf× and vf× coarser) is
// sure to be decoded; the rest of the planes holds whatever it held.
func decodeTurbo(b []byte, den int, img *image.YCbCr, need func(w, h, hf, vf int) (x0, x1, rows int)) (*image.YCbCr, error) {
	return decodeTurboScans(b, den, img, need, jpegMaxScans)
}

// jpegMaxScans is MaxJPEGScans, checked by libjpeg's progress monitor.
const jpegMaxScans = MaxJPEGScans

// decodeTurboScans is decodeTurbo refusing files of more than maxScans
// scans.
func decodeTurboScans(b []byte, den int, img *image.YCbCr, need func(w, h, hf, vf int) (x0, x1, rows int), maxScans int) (*image.YCbCr, error) {
	t := jpegPool.Get().(*jpegHandle)
	if t == nil {
		return nil, errors.New("libjpeg-turbo: cannot create a decompressor")
	}
	defer jpegPool.Put(t)
	var in C.lt_jpeg_info
	rc := C.lt_jpeg_start(t.j, (*C.uchar)(unsafe.Pointer(&b[0])), C.ulong(len(b)), C.int(den), C.int(maxScans), &in)
	if rc != 0 {
		runtime.KeepAlive(b)
		return nil, t.err()
	}
	w, h := int(in.w), int(in.h)
	ratio := ratioOf(int(in.hf), int(in.vf))
	ys, cs := int(in.stride[0]), int(in.stride[1])
	if ratio < 0 || ys < w || cs != int(in.stride[2]) || in.rows[1] != in.rows[2] {
		C.lt_jpeg_abort(t.j)
		runtime.KeepAlive(b)
		return nil, errors.New("libjpeg-turbo: unsupported plane layout")
	}
	if img == nil {
		img = &image.YCbCr{}
	}
	img.Y = growBytes(img.Y, ys*int(in.rows[0]))
	img.Cb = growBytes(img.Cb, cs*int(in.rows[1]))
	img.Cr = growBytes(img.Cr, cs*int(in.rows[2]))
	img.YStride, img.CStride, img.SubsampleRatio, img.Rect = ys, cs, ratio, image.Rect(0, 0, w, h)
	x0, x1, rows := need(w, h, int(in.hf), int(in.vf))
	rc = C.lt_jpeg_rows(t.j, (*C.uchar)(unsafe.Pointer(&img.Y[0])), (*C.uchar)(unsafe.Pointer(&img.Cb[0])),
		(*C.uchar)(unsafe.Pointer(&img.Cr[0])), &in, C.int(rows), C.int(x0), C.int(x1))
	runtime.KeepAlive(b)
	if rc < 0 {
		return nil, t.err()
	}
	return img, nil
}

func growBytes(s []byte, n int) []byte {
	if cap(s) < n {
		return make([]byte, n)
	}
	return s[:n]
}
