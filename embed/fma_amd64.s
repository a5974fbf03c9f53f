#include "textflag.h"

// The shared-negatives step's kernels (worker.go, batch): 8-wide fused
// multiply-adds, four partial sums in the dot. They round differently from
// dot and update (FMA rounds once; the partial sums add in another order),
// so they serve only the shared-negatives mode, whose vectors were never
// gonum's: plain PV-DBOW, PV-DM and PV-DBOW + words keep their roundings.

// func dotFMA(a, b *float32, n int) float32
TEXT ·dotFMA(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   CX, BX
	SHRQ   $5, BX        // BX = n / 32
	JZ     tail8

loop32:
	VMOVUPS     (SI)(AX*4), Y4
	VMOVUPS     32(SI)(AX*4), Y5
	VMOVUPS     64(SI)(AX*4), Y6
	VMOVUPS     96(SI)(AX*4), Y7
	VFMADD231PS (DI)(AX*4), Y4, Y0
	VFMADD231PS 32(DI)(AX*4), Y5, Y1
	VFMADD231PS 64(DI)(AX*4), Y6, Y2
	VFMADD231PS 96(DI)(AX*4), Y7, Y3
	ADDQ        $32, AX
	DECQ        BX
	JNZ         loop32

tail8:
	MOVQ CX, BX
	SUBQ AX, BX
	SHRQ $3, BX          // BX = what is left / 8
	JZ   reduce

loop8:
	VMOVUPS     (SI)(AX*4), Y4
	VFMADD231PS (DI)(AX*4), Y4, Y0
	ADDQ        $8, AX
	DECQ        BX
	JNZ         loop8

reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0

tail1:
	CMPQ        AX, CX
	JGE         done
	VMOVSS      (SI)(AX*4), X4
	VFMADD231SS (DI)(AX*4), X4, X0
	INCQ        AX
	JMP         tail1

done:
	VMOVSS     X0, ret+24(FP)
	VZEROUPPER
	RET

// func updateFMA(alpha float32, l1, row, work *float32, n int)
// For i < n: work[i] += alpha·row[i] (the old row), then row[i] += alpha·l1[i].
TEXT ·updateFMA(SB), NOSPLIT, $0-40
	LEAQ alpha+0(FP), R8
	VBROADCASTSS (R8), Y0
	MOVQ l1+8(FP), SI
	MOVQ row+16(FP), DI
	MOVQ work+24(FP), DX
	MOVQ n+32(FP), CX
	XORQ AX, AX
	MOVQ CX, BX
	SHRQ $4, BX          // BX = n / 16
	JZ   tail8u

loop16u:
	VMOVUPS     (DI)(AX*4), Y1
	VMOVUPS     32(DI)(AX*4), Y2
	VMOVUPS     (DX)(AX*4), Y3
	VMOVUPS     32(DX)(AX*4), Y4
	VFMADD231PS Y1, Y0, Y3
	VFMADD231PS Y2, Y0, Y4
	VMOVUPS     Y3, (DX)(AX*4)
	VMOVUPS     Y4, 32(DX)(AX*4)
	VFMADD231PS (SI)(AX*4), Y0, Y1
	VFMADD231PS 32(SI)(AX*4), Y0, Y2
	VMOVUPS     Y1, (DI)(AX*4)
	VMOVUPS     Y2, 32(DI)(AX*4)
	ADDQ        $16, AX
	DECQ        BX
	JNZ         loop16u

tail8u:
	MOVQ CX, BX
	SUBQ AX, BX
	CMPQ BX, $8
	JL   tail1u
	VMOVUPS     (DI)(AX*4), Y1
	VMOVUPS     (DX)(AX*4), Y3
	VFMADD231PS Y1, Y0, Y3
	VMOVUPS     Y3, (DX)(AX*4)
	VFMADD231PS (SI)(AX*4), Y0, Y1
	VMOVUPS     Y1, (DI)(AX*4)
	ADDQ        $8, AX

tail1u:
	CMPQ        AX, CX
	JGE         doneu
	VMOVSS      (DI)(AX*4), X1
	VMOVSS      (DX)(AX*4), X3
	VFMADD231SS X1, X0, X3
	VMOVSS      X3, (DX)(AX*4)
	VFMADD231SS (SI)(AX*4), X0, X1
	VMOVSS      X1, (DI)(AX*4)
	INCQ        AX
	JMP         tail1u

doneu:
	VZEROUPPER
	RET
