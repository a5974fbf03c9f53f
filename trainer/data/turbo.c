//go:build !noturbo

// libjpeg-turbo glue for turbo.go, which describes what it does and why.
#include "turbo.h"

static void lt_jpeg_fail(j_common_ptr c) {
	lt_jpeg *j = (lt_jpeg *)c->client_data;
	(*c->err->format_message)(c, j->msg);
	longjmp(j->jb, 1);
}

// Warnings are corrupt data libjpeg would paper over (with grey, for a
// truncated file): errors here, as in Go's decoder.
static void lt_jpeg_emit(j_common_ptr c, int level) {
	if (level < 0) lt_jpeg_fail(c);
}

// A progressive file of thousands of tiny scans makes libjpeg pass over
// the whole coefficient buffer for each (a crafted file decoding for
// minutes): stop past max_scans, as djpeg's -maxscans does.
static void lt_jpeg_progress(j_common_ptr c) {
	lt_jpeg *j = (lt_jpeg *)c->client_data;
	if (j->max_scans > 0 && j->d.input_scan_number > j->max_scans) {
		snprintf(j->msg, sizeof j->msg, "more than %d scans: not decoded (a progressive JPEG has about 10)", j->max_scans);
		longjmp(j->jb, 1);
	}
}

lt_jpeg *lt_jpeg_new(void) {
	lt_jpeg *j = calloc(1, sizeof *j);
	if (!j) return NULL;
	j->d.err = jpeg_std_error(&j->em);
	j->em.error_exit = lt_jpeg_fail;
	j->em.emit_message = lt_jpeg_emit;
	j->d.client_data = j;
	if (setjmp(j->jb)) { free(j); return NULL; }
	jpeg_create_decompress(&j->d);
	j->pm.progress_monitor = lt_jpeg_progress;
	j->d.progress = &j->pm;
	return j;
}

void lt_jpeg_free(lt_jpeg *j) { jpeg_destroy_decompress(&j->d); free(j); }

// The chroma layouts image.YCbCr has: luma h×v, chroma 1×1.
static int lt_jpeg_layout(struct jpeg_decompress_struct *d) {
	if (d->num_components != 3 || d->jpeg_color_space != JCS_YCbCr || d->data_precision != 8) return 0;
	jpeg_component_info *c = d->comp_info;
	if (c[1].h_samp_factor != 1 || c[1].v_samp_factor != 1 || c[2].h_samp_factor != 1 || c[2].v_samp_factor != 1) return 0;
	int h = c[0].h_samp_factor, v = c[0].v_samp_factor;
	return (h == 1 || h == 2 || h == 4) && (v == 1 || v == 2);
}

// lt_jpeg_header reads b's size; *ok is whether lt_jpeg_start handles it.
int lt_jpeg_header(lt_jpeg *j, const unsigned char *b, unsigned long n, int *w, int *h, int *ok) {
	if (setjmp(j->jb)) { jpeg_abort_decompress(&j->d); return -1; }
	jpeg_mem_src(&j->d, b, n);
	jpeg_read_header(&j->d, TRUE);
	*w = (int)j->d.image_width, *h = (int)j->d.image_height, *ok = lt_jpeg_layout(&j->d);
	jpeg_abort_decompress(&j->d);
	return 0;
}

// lt_jpeg_start reads the header of b, checks that an end-of-image marker
// follows the first scan (rows below the crop are never decoded, so this is
// what still refuses a truncated file whatever the crop), and starts a raw
// decode at scale 1/den. The decoder is left started: lt_jpeg_rows or
// lt_jpeg_abort follows.
int lt_jpeg_start(lt_jpeg *j, const unsigned char *b, unsigned long n, int den, int max_scans, lt_jpeg_info *in) {
	struct jpeg_decompress_struct *d = &j->d;
	j->max_scans = max_scans;
	if (setjmp(j->jb)) { jpeg_abort_decompress(d); return -1; }
	jpeg_mem_src(d, b, n);
	jpeg_read_header(d, TRUE);
	if (!lt_jpeg_layout(d)) {
		snprintf(j->msg, sizeof j->msg, "unsupported JPEG layout");
		jpeg_abort_decompress(d);
		return -1;
	}
	const unsigned char *p = d->src->next_input_byte, *q = b + n - 2;
	while (q >= p && !(q[0] == 0xFF && q[1] == 0xD9)) q--;
	if (q < p) {
		snprintf(j->msg, sizeof j->msg, "truncated JPEG: no end-of-image marker");
		jpeg_abort_decompress(d);
		return -1;
	}
	d->raw_data_out = TRUE;
	d->scale_num = 1;
	d->scale_denom = den;
	d->dct_method = JDCT_ISLOW;
	jpeg_start_decompress(d);
	// At reduced scales libjpeg may decode chroma at a larger DCT size than
	// luma instead of upsampling it later: the planes then differ less.
	jpeg_component_info *c = d->comp_info;
	// The decoder writes width_in_blocks blocks per row (one more MCU's
	// width is slack) and whole iMCU rows.
	in->w = d->output_width, in->h = d->output_height;
	int hl = c[0].h_samp_factor * c[0].DCT_scaled_size, hc = c[1].h_samp_factor * c[1].DCT_scaled_size;
	int vl = c[0].v_samp_factor * c[0].DCT_scaled_size, vc = c[1].v_samp_factor * c[1].DCT_scaled_size;
	in->hf = hl % hc == 0 ? hl / hc : 0;
	in->vf = vl % vc == 0 ? vl / vc : 0;
	for (int k = 0; k < 3; k++) {
		in->stride[k] = (int)(c[k].width_in_blocks + c[k].h_samp_factor) * c[k].DCT_scaled_size;
		in->rows[k] = (int)d->total_iMCU_rows * c[k].v_samp_factor * c[k].DCT_scaled_size;
	}
	return 0;
}

void lt_jpeg_abort(lt_jpeg *j) { jpeg_abort_decompress(&j->d); }

// lt_jpeg_rows decodes iMCU rows into the planes (allocated as
// lt_jpeg_info said) until at least want output rows are done, then stops
// the decode; it returns the rows done, or -1. Only the iMCU columns
// covering output columns [x0, x1) go through the IDCT (what
// jpeg_crop_scanline does, which raw output does not offer: the same two
// fields of libjpeg-turbo's decompression master), each at its place in
// the planes; the other columns hold whatever they held.
int lt_jpeg_rows(lt_jpeg *j, unsigned char *y, unsigned char *cb, unsigned char *cr, const lt_jpeg_info *in,
                        int want, int x0, int x1) {
	struct jpeg_decompress_struct *d = &j->d;
	if (setjmp(j->jb)) { jpeg_abort_decompress(d); return -1; }
	unsigned char *base[3] = {y, cb, cr};
	long off[3] = {0, 0, 0};
#if LIBJPEG_TURBO_VERSION_NUMBER >= 1005000
	int align = d->min_DCT_scaled_size * d->max_h_samp_factor, cols = ((int)d->output_width + align - 1) / align;
	int first = x0 / align, last = (x1 + align - 1) / align - 1;
	if (first < 0) first = 0;
	if (last > cols - 1) last = cols - 1;
	if (first <= last) {
		d->master->first_iMCU_col = (JDIMENSION)first;
		d->master->last_iMCU_col = (JDIMENSION)last;
		for (int k = 0; k < 3; k++) {
			jpeg_component_info *c = &d->comp_info[k];
			d->master->first_MCU_col[k] = (JDIMENSION)(first * c->h_samp_factor);
			d->master->last_MCU_col[k] = (JDIMENSION)((last + 1) * c->h_samp_factor - 1);
			off[k] = (long)first * c->h_samp_factor * c->DCT_scaled_size;
		}
	}
#endif
	JSAMPROW ptr[3][64];
	JSAMPARRAY planes[3] = {ptr[0], ptr[1], ptr[2]};
	int lines = d->max_v_samp_factor * d->min_DCT_scaled_size;
	if (want > (int)d->output_height) want = (int)d->output_height;
	for (int imcu = 0; (int)d->output_scanline < want && imcu < (int)d->total_iMCU_rows; imcu++) {
		for (int k = 0; k < 3; k++) {
			int r = d->comp_info[k].v_samp_factor * d->comp_info[k].DCT_scaled_size;
			for (int i = 0; i < r && i < 64; i++) ptr[k][i] = base[k] + (long)(imcu * r + i) * in->stride[k] + off[k];
		}
		if (jpeg_read_raw_data(d, planes, lines) == 0) break; // suspended: cannot happen with a memory source
	}
	int done = (int)d->output_scanline;
	jpeg_abort_decompress(d);
	return done < want ? -1 : done;
}
