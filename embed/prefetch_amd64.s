#include "textflag.h"

// func prefetch(p *float32, n int)
// Issues PREFETCHT0 for every 64-byte line of the n float32 at p.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	SHLQ $2, CX
	ADDQ AX, CX
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JB   loop
	RET
