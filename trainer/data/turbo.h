// libjpeg-turbo glue, called from turbo.go (cgo, without the noturbo tag).
#ifndef LCL_TURBO_H
#define LCL_TURBO_H
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jpegint.h>

typedef struct {
	struct jpeg_decompress_struct d;
	struct jpeg_error_mgr em;
	struct jpeg_progress_mgr pm;
	jmp_buf jb;
	int max_scans;
	char msg[JMSG_LENGTH_MAX];
} lt_jpeg;

// What lt_jpeg_start found: the scaled image, and per component its plane
// (stride and rows to allocate: whole blocks and iMCU rows, which the
// decoder writes) and how much coarser than luma it is.
typedef struct {
	int w, h, hf, vf, stride[3], rows[3];
} lt_jpeg_info;

lt_jpeg *lt_jpeg_new(void);
void lt_jpeg_free(lt_jpeg *j);
int lt_jpeg_header(lt_jpeg *j, const unsigned char *b, unsigned long n, int *w, int *h, int *ok);
int lt_jpeg_start(lt_jpeg *j, const unsigned char *b, unsigned long n, int den, int max_scans, lt_jpeg_info *in);
void lt_jpeg_abort(lt_jpeg *j);
int lt_jpeg_rows(lt_jpeg *j, unsigned char *y, unsigned char *cb, unsigned char *cr, const lt_jpeg_info *in,
	int want, int x0, int x1);

#endif
