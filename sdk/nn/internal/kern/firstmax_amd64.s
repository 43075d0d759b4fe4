//go:build amd64 && !purego

#include "textflag.h"

// func firstMaxAVX2(dst, a, b *float32, n int)
// dst[i] = b[i] where b[i] is not <= a[i] (greater, or either NaN) and a[i]
// is not NaN, else a[i]; n a multiple of 8.
TEXT ·firstMaxAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   fmdone

fmloop:
	VMOVUPS   (SI), Y0
	VMOVUPS   (DX), Y1
	VCMPPS    $6, Y0, Y1, Y2 // NLE_UQ: !(b <= a)
	VCMPPS    $7, Y0, Y0, Y3 // ORD_Q: a is not NaN
	VANDPS    Y3, Y2, Y2
	VBLENDVPS Y2, Y1, Y0, Y4 // Y2 ? b : a
	VMOVUPS   Y4, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DX
	ADDQ      $32, DI
	DECQ      CX
	JNZ       fmloop

fmdone:
	VZEROUPPER
	RET
