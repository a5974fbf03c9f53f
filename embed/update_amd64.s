#include "textflag.h"

// func updateAVX(alpha float32, l1, row, work *float32, n int)
// For i < n: work[i] += alpha·row[i] (the old row), then row[i] += alpha·l1[i];
// each product rounded before its sum (VMULPS, VADDPS: no FMA), as gonum's
// SSE axpy rounds, so the results are the two axpy calls' bit for bit.
TEXT ·updateAVX(SB), NOSPLIT, $0-40
	LEAQ alpha+0(FP), R8
	VBROADCASTSS (R8), Y0 // AVX's broadcast takes memory only
	MOVQ l1+8(FP), SI
	MOVQ row+16(FP), DI
	MOVQ work+24(FP), DX
	MOVQ n+32(FP), CX
	XORQ AX, AX
	MOVQ CX, BX
	SHRQ $4, BX   // BX = n / 16
	JZ   tail8

loop16:
	VMOVUPS (DI)(AX*4), Y1    // row[i:i+8]
	VMOVUPS 32(DI)(AX*4), Y2  // row[i+8:i+16]
	VMULPS  Y1, Y0, Y3
	VMULPS  Y2, Y0, Y4
	VADDPS  (DX)(AX*4), Y3, Y3
	VADDPS  32(DX)(AX*4), Y4, Y4
	VMOVUPS Y3, (DX)(AX*4)
	VMOVUPS Y4, 32(DX)(AX*4)
	VMULPS  (SI)(AX*4), Y0, Y5
	VMULPS  32(SI)(AX*4), Y0, Y6
	VADDPS  Y5, Y1, Y1
	VADDPS  Y6, Y2, Y2
	VMOVUPS Y1, (DI)(AX*4)
	VMOVUPS Y2, 32(DI)(AX*4)
	ADDQ    $16, AX
	DECQ    BX
	JNZ     loop16

tail8:
	MOVQ CX, BX
	SUBQ AX, BX
	CMPQ BX, $8
	JL   tail4
	VMOVUPS (DI)(AX*4), Y1
	VMULPS  Y1, Y0, Y3
	VADDPS  (DX)(AX*4), Y3, Y3
	VMOVUPS Y3, (DX)(AX*4)
	VMULPS  (SI)(AX*4), Y0, Y5
	VADDPS  Y5, Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	SUBQ    $8, BX

tail4:
	CMPQ BX, $4
	JL   tail1
	VMOVUPS (DI)(AX*4), X1
	VMULPS  X1, X0, X3
	VADDPS  (DX)(AX*4), X3, X3
	VMOVUPS X3, (DX)(AX*4)
	VMULPS  (SI)(AX*4), X0, X5
	VADDPS  X5, X1, X1
	VMOVUPS X1, (DI)(AX*4)
	ADDQ    $4, AX
	SUBQ    $4, BX

tail1:
	TESTQ BX, BX
	JZ    done
	VMOVSS (DI)(AX*4), X1
	VMULSS X1, X0, X3
	VADDSS (DX)(AX*4), X3, X3
	VMOVSS X3, (DX)(AX*4)
	VMULSS (SI)(AX*4), X0, X5
	VADDSS X5, X1, X1
	VMOVSS X1, (DI)(AX*4)
	INCQ   AX
	DECQ   BX
	JMP    tail1

done:
	VZEROUPPER
	RET
