//go:build amd64 && !purego

#include "textflag.h"

// AVX2+FMA kernels. Conventions:
//  - lengths are >= 8 (checked by the Go wrappers);
//  - the main loops work on 32- or 16-float blocks, then 8-float chunks;
//  - the n%8 leftover elements are done as one more 8-float chunk that ends
//    at the last element, overlapping the previous chunk: its loads stay in
//    bounds, and the lanes already done are masked off (masked store for
//    outputs, AND with the mask for reductions). tailmask<>+4*r holds a
//    mask of the last r lanes.

DATA tailmask<>+0(SB)/8, $0
DATA tailmask<>+8(SB)/8, $0
DATA tailmask<>+16(SB)/8, $0
DATA tailmask<>+24(SB)/8, $0
DATA tailmask<>+32(SB)/8, $-1
DATA tailmask<>+40(SB)/8, $-1
DATA tailmask<>+48(SB)/8, $-1
DATA tailmask<>+56(SB)/8, $-1
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// func corr3AVX2(dst, x []float32, w0, w1, w2 float32)
TEXT ·corr3AVX2(SB), NOSPLIT, $0-60
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	VBROADCASTSS w0+48(FP), Y13
	VBROADCASTSS w1+52(FP), Y14
	VBROADCASTSS w2+56(FP), Y15
	MOVQ         CX, DX
	ANDQ         $7, DX
	SHRQ         $3, CX
	CMPQ         CX, $4
	JLT          c3loop8

c3loop32:
	VMOVUPS     (DI), Y0
	VMOVUPS     32(DI), Y1
	VMOVUPS     64(DI), Y2
	VMOVUPS     96(DI), Y3
	VFMADD231PS (SI), Y13, Y0
	VFMADD231PS 32(SI), Y13, Y1
	VFMADD231PS 64(SI), Y13, Y2
	VFMADD231PS 96(SI), Y13, Y3
	VFMADD231PS 4(SI), Y14, Y0
	VFMADD231PS 36(SI), Y14, Y1
	VFMADD231PS 68(SI), Y14, Y2
	VFMADD231PS 100(SI), Y14, Y3
	VFMADD231PS 8(SI), Y15, Y0
	VFMADD231PS 40(SI), Y15, Y1
	VFMADD231PS 72(SI), Y15, Y2
	VFMADD231PS 104(SI), Y15, Y3
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)
	VMOVUPS     Y2, 64(DI)
	VMOVUPS     Y3, 96(DI)
	ADDQ        $128, DI
	ADDQ        $128, SI
	SUBQ        $4, CX
	CMPQ        CX, $4
	JGE         c3loop32

c3loop8:
	TESTQ CX, CX
	JZ    c3tail

c3loop8b:
	VMOVUPS     (DI), Y0
	VFMADD231PS (SI), Y13, Y0
	VFMADD231PS 4(SI), Y14, Y0
	VFMADD231PS 8(SI), Y15, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, DI
	ADDQ        $32, SI
	DECQ        CX
	JNZ         c3loop8b

c3tail:
	TESTQ       DX, DX
	JZ          c3done
	LEAQ        -32(DI)(DX*4), DI
	LEAQ        -32(SI)(DX*4), SI
	LEAQ        tailmask<>(SB), AX
	VMOVUPS     (AX)(DX*4), Y12
	VMOVUPS     (DI), Y0
	VFMADD231PS (SI), Y13, Y0
	VFMADD231PS 4(SI), Y14, Y0
	VFMADD231PS 8(SI), Y15, Y0
	VMASKMOVPS  Y0, Y12, (DI)

c3done:
	VZEROUPPER
	RET

// func corrKAVX2(dst, x, w []float32)
TEXT ·corrKAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ w_base+48(FP), BX
	MOVQ w_len+56(FP), R8
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	CMPQ CX, $4
	JLT  ckloop8

ckloop32:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ    SI, R9
	MOVQ    BX, R10
	MOVQ    R8, R11

ckk32:
	VBROADCASTSS (R10), Y15
	VFMADD231PS  (R9), Y15, Y0
	VFMADD231PS  32(R9), Y15, Y1
	VFMADD231PS  64(R9), Y15, Y2
	VFMADD231PS  96(R9), Y15, Y3
	ADDQ         $4, R9
	ADDQ         $4, R10
	DECQ         R11
	JNZ          ckk32
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	ADDQ         $128, DI
	ADDQ         $128, SI
	SUBQ         $4, CX
	CMPQ         CX, $4
	JGE          ckloop32

ckloop8:
	TESTQ CX, CX
	JZ    cktail

ckloop8b:
	VMOVUPS (DI), Y0
	MOVQ    SI, R9
	MOVQ    BX, R10
	MOVQ    R8, R11

ckk8:
	VBROADCASTSS (R10), Y15
	VFMADD231PS  (R9), Y15, Y0
	ADDQ         $4, R9
	ADDQ         $4, R10
	DECQ         R11
	JNZ          ckk8
	VMOVUPS      Y0, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	DECQ         CX
	JNZ          ckloop8b

cktail:
	TESTQ   DX, DX
	JZ      ckdone
	LEAQ    -32(DI)(DX*4), DI
	LEAQ    -32(SI)(DX*4), SI
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(DX*4), Y12
	VMOVUPS (DI), Y0
	MOVQ    SI, R9
	MOVQ    BX, R10
	MOVQ    R8, R11

ckkt:
	VBROADCASTSS (R10), Y15
	VFMADD231PS  (R9), Y15, Y0
	ADDQ         $4, R9
	ADDQ         $4, R10
	DECQ         R11
	JNZ          ckkt
	VMASKMOVPS   Y0, Y12, (DI)

ckdone:
	VZEROUPPER
	RET

// func dot3AVX2(dy, x []float32) (s0, s1, s2 float32)
TEXT ·dot3AVX2(SB), NOSPLIT, $0-60
	MOVQ   dy_base+0(FP), SI
	MOVQ   dy_len+8(FP), CX
	MOVQ   x_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	MOVQ   CX, DX
	ANDQ   $7, DX
	SHRQ   $3, CX
	CMPQ   CX, $2
	JLT    d3loop8

d3loop16:
	VMOVUPS     (SI), Y8
	VMOVUPS     32(SI), Y9
	VFMADD231PS (DI), Y8, Y0
	VFMADD231PS 4(DI), Y8, Y1
	VFMADD231PS 8(DI), Y8, Y2
	VFMADD231PS 32(DI), Y9, Y3
	VFMADD231PS 36(DI), Y9, Y4
	VFMADD231PS 40(DI), Y9, Y5
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $2, CX
	CMPQ        CX, $2
	JGE         d3loop16

d3loop8:
	TESTQ       CX, CX
	JZ          d3tail
	VMOVUPS     (SI), Y8
	VFMADD231PS (DI), Y8, Y0
	VFMADD231PS 4(DI), Y8, Y1
	VFMADD231PS 8(DI), Y8, Y2
	ADDQ        $32, SI
	ADDQ        $32, DI

d3tail:
	TESTQ       DX, DX
	JZ          d3reduce
	LEAQ        -32(SI)(DX*4), SI
	LEAQ        -32(DI)(DX*4), DI
	LEAQ        tailmask<>(SB), AX
	VMOVUPS     (AX)(DX*4), Y12
	VANDPS      (SI), Y12, Y8
	VANDPS      (DI), Y12, Y9
	VANDPS      4(DI), Y12, Y10
	VANDPS      8(DI), Y12, Y11
	VFMADD231PS Y9, Y8, Y3
	VFMADD231PS Y10, Y8, Y4
	VFMADD231PS Y11, Y8, Y5

d3reduce:
	VADDPS       Y3, Y0, Y0
	VADDPS       Y4, Y1, Y1
	VADDPS       Y5, Y2, Y2
	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y2, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVSS       X0, s0+48(FP)
	VEXTRACTPS   $1, X0, s1+52(FP)
	VEXTRACTPS   $2, X0, s2+56(FP)
	VZEROUPPER
	RET

// func dotAVX2(x, y []float32) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-52
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	MOVQ   y_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   CX, DX
	ANDQ   $7, DX
	SHRQ   $3, CX
	CMPQ   CX, $4
	JLT    dtloop8

dtloop32:
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $4, CX
	CMPQ        CX, $4
	JGE         dtloop32

dtloop8:
	TESTQ CX, CX
	JZ    dttail

dtloop8b:
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         dtloop8b

dttail:
	TESTQ       DX, DX
	JZ          dtreduce
	LEAQ        -32(SI)(DX*4), SI
	LEAQ        -32(DI)(DX*4), DI
	LEAQ        tailmask<>(SB), AX
	VMOVUPS     (AX)(DX*4), Y12
	VANDPS      (SI), Y12, Y4
	VANDPS      (DI), Y12, Y5
	VFMADD231PS Y5, Y4, Y1

dtreduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+48(FP)
	VZEROUPPER
	RET

// func sumAVX2(x []float32) float32
TEXT ·sumAVX2(SB), NOSPLIT, $0-28
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   CX, DX
	ANDQ   $7, DX
	SHRQ   $3, CX
	CMPQ   CX, $4
	JLT    smloop8

smloop32:
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	SUBQ   $4, CX
	CMPQ   CX, $4
	JGE    smloop32

smloop8:
	TESTQ CX, CX
	JZ    smtail

smloop8b:
	VADDPS (SI), Y0, Y0
	ADDQ   $32, SI
	DECQ   CX
	JNZ    smloop8b

smtail:
	TESTQ   DX, DX
	JZ      smreduce
	LEAQ    -32(SI)(DX*4), SI
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(DX*4), Y12
	VANDPS  (SI), Y12, Y4
	VADDPS  Y4, Y1, Y1

smreduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func axpyAVX2(dst, x []float32, a float32)
TEXT ·axpyAVX2(SB), NOSPLIT, $0-52
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	VBROADCASTSS a+48(FP), Y15
	MOVQ         CX, DX
	ANDQ         $7, DX
	SHRQ         $3, CX
	CMPQ         CX, $4
	JLT          axloop8

axloop32:
	VMOVUPS     (DI), Y0
	VMOVUPS     32(DI), Y1
	VMOVUPS     64(DI), Y2
	VMOVUPS     96(DI), Y3
	VFMADD231PS (SI), Y15, Y0
	VFMADD231PS 32(SI), Y15, Y1
	VFMADD231PS 64(SI), Y15, Y2
	VFMADD231PS 96(SI), Y15, Y3
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)
	VMOVUPS     Y2, 64(DI)
	VMOVUPS     Y3, 96(DI)
	ADDQ        $128, DI
	ADDQ        $128, SI
	SUBQ        $4, CX
	CMPQ        CX, $4
	JGE         axloop32

axloop8:
	TESTQ CX, CX
	JZ    axtail

axloop8b:
	VMOVUPS     (DI), Y0
	VFMADD231PS (SI), Y15, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, DI
	ADDQ        $32, SI
	DECQ        CX
	JNZ         axloop8b

axtail:
	TESTQ       DX, DX
	JZ          axdone
	LEAQ        -32(DI)(DX*4), DI
	LEAQ        -32(SI)(DX*4), SI
	LEAQ        tailmask<>(SB), AX
	VMOVUPS     (AX)(DX*4), Y12
	VMOVUPS     (DI), Y0
	VFMADD231PS (SI), Y15, Y0
	VMASKMOVPS  Y0, Y12, (DI)

axdone:
	VZEROUPPER
	RET

// func scaleAVX2(x []float32, a float32)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), DI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS a+24(FP), Y15
	MOVQ         CX, DX
	ANDQ         $7, DX
	SHRQ         $3, CX

scloop8:
	VMULPS  (DI), Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     scloop8
	TESTQ   DX, DX
	JZ      scdone
	LEAQ    -32(DI)(DX*4), DI
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(DX*4), Y12
	VMULPS  (DI), Y15, Y0
	VMASKMOVPS Y0, Y12, (DI)

scdone:
	VZEROUPPER
	RET

// func addConstAVX2(x []float32, c float32)
TEXT ·addConstAVX2(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), DI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS c+24(FP), Y15
	MOVQ         CX, DX
	ANDQ         $7, DX
	SHRQ         $3, CX

acloop8:
	VADDPS  (DI), Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     acloop8
	TESTQ   DX, DX
	JZ      acdone
	LEAQ    -32(DI)(DX*4), DI
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(DX*4), Y12
	VADDPS  (DI), Y15, Y0
	VMASKMOVPS Y0, Y12, (DI)

acdone:
	VZEROUPPER
	RET

// func reluAVX2(x []float32)
// VMAXPS returns its second (Intel) source when an operand is NaN or both
// are zero, so NaN and -0 pass through like in the Go code.
TEXT ·reluAVX2(SB), NOSPLIT, $0-24
	MOVQ   x_base+0(FP), DI
	MOVQ   x_len+8(FP), CX
	VXORPS Y15, Y15, Y15
	MOVQ   CX, DX
	ANDQ   $7, DX
	SHRQ   $3, CX

reloop8:
	VMAXPS  (DI), Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     reloop8
	TESTQ   DX, DX
	JZ      redone
	LEAQ    -32(DI)(DX*4), DI
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(DX*4), Y12
	VMAXPS  (DI), Y15, Y0
	VMASKMOVPS Y0, Y12, (DI)

redone:
	VZEROUPPER
	RET

// func convx4AVX2(dst *float32, dstStride int, x *float32, xStride int, wp *float32, C, K, T int)
//
// Register block: 4 output rows (stride R8 bytes) x 16 time steps in Y0..Y7
// (Y0,Y1 row 0; Y2,Y3 row 1; ...). For every input row c and tap k: two
// loads of x, four broadcast weights, eight FMAs.
TEXT ·convx4AVX2(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ x+16(FP), SI
	MOVQ xStride+24(FP), R10
	SUBQ K+48(FP), R10
	SHLQ $2, R10                 // bytes from x[c, t+K] to x[c+1, t]
	MOVQ wp+32(FP), DX
	MOVQ T+56(FP), R14
	SHRQ $4, R14
	JZ   cv8

cv16:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS (DI)(R8*1), Y2
	VMOVUPS 32(DI)(R8*1), Y3
	VMOVUPS (DI)(R8*2), Y4
	VMOVUPS 32(DI)(R8*2), Y5
	VMOVUPS (DI)(R9*1), Y6
	VMOVUPS 32(DI)(R9*1), Y7
	MOVQ    SI, R11
	MOVQ    DX, R12
	MOVQ    C+40(FP), CX

cv16c:
	MOVQ K+48(FP), BX
	CMPQ BX, $3
	JNE  cv16k

	// K = 3: the three taps unrolled.
	VMOVUPS      (R11), Y8
	VMOVUPS      32(R11), Y9
	VBROADCASTSS (R12), Y10
	VBROADCASTSS 4(R12), Y11
	VBROADCASTSS 8(R12), Y12
	VBROADCASTSS 12(R12), Y13
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	VMOVUPS      4(R11), Y8
	VMOVUPS      36(R11), Y9
	VBROADCASTSS 16(R12), Y10
	VBROADCASTSS 20(R12), Y11
	VBROADCASTSS 24(R12), Y12
	VBROADCASTSS 28(R12), Y13
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	VMOVUPS      8(R11), Y8
	VMOVUPS      40(R11), Y9
	VBROADCASTSS 32(R12), Y10
	VBROADCASTSS 36(R12), Y11
	VBROADCASTSS 40(R12), Y12
	VBROADCASTSS 44(R12), Y13
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $12, R11
	ADDQ         $48, R12
	JMP          cv16cnext

cv16k:
	VMOVUPS      (R11), Y8
	VMOVUPS      32(R11), Y9
	VBROADCASTSS (R12), Y10
	VBROADCASTSS 4(R12), Y11
	VBROADCASTSS 8(R12), Y12
	VBROADCASTSS 12(R12), Y13
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $4, R11
	ADDQ         $16, R12
	DECQ         BX
	JNZ          cv16k

cv16cnext:
	ADDQ         R10, R11
	DECQ         CX
	JNZ          cv16c
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, (DI)(R8*1)
	VMOVUPS      Y3, 32(DI)(R8*1)
	VMOVUPS      Y4, (DI)(R8*2)
	VMOVUPS      Y5, 32(DI)(R8*2)
	VMOVUPS      Y6, (DI)(R9*1)
	VMOVUPS      Y7, 32(DI)(R9*1)
	ADDQ         $64, DI
	ADDQ         $64, SI
	DECQ         R14
	JNZ          cv16

cv8:
	MOVQ  T+56(FP), R13
	TESTQ $8, R13
	JZ    cvtail
	VMOVUPS (DI), Y0
	VMOVUPS (DI)(R8*1), Y2
	VMOVUPS (DI)(R8*2), Y4
	VMOVUPS (DI)(R9*1), Y6
	MOVQ    SI, R11
	MOVQ    DX, R12
	MOVQ    C+40(FP), CX

cv8c:
	MOVQ K+48(FP), BX

cv8k:
	VMOVUPS      (R11), Y8
	VBROADCASTSS (R12), Y10
	VBROADCASTSS 4(R12), Y11
	VBROADCASTSS 8(R12), Y12
	VBROADCASTSS 12(R12), Y13
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y8, Y13, Y6
	ADDQ         $4, R11
	ADDQ         $16, R12
	DECQ         BX
	JNZ          cv8k
	ADDQ         R10, R11
	DECQ         CX
	JNZ          cv8c
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y2, (DI)(R8*1)
	VMOVUPS      Y4, (DI)(R8*2)
	VMOVUPS      Y6, (DI)(R9*1)
	ADDQ         $32, DI
	ADDQ         $32, SI

cvtail:
	ANDQ    $7, R13
	JZ      cvdone
	LEAQ    -32(DI)(R13*4), DI
	LEAQ    -32(SI)(R13*4), SI
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(R13*4), Y15
	VMOVUPS (DI), Y0
	VMOVUPS (DI)(R8*1), Y2
	VMOVUPS (DI)(R8*2), Y4
	VMOVUPS (DI)(R9*1), Y6
	MOVQ    SI, R11
	MOVQ    DX, R12
	MOVQ    C+40(FP), CX

cvtc:
	MOVQ K+48(FP), BX

cvtk:
	VMOVUPS      (R11), Y8
	VBROADCASTSS (R12), Y10
	VBROADCASTSS 4(R12), Y11
	VBROADCASTSS 8(R12), Y12
	VBROADCASTSS 12(R12), Y13
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y8, Y13, Y6
	ADDQ         $4, R11
	ADDQ         $16, R12
	DECQ         BX
	JNZ          cvtk
	ADDQ         R10, R11
	DECQ         CX
	JNZ          cvtc
	VMASKMOVPS   Y0, Y15, (DI)
	VMASKMOVPS   Y2, Y15, (DI)(R8*1)
	VMASKMOVPS   Y4, Y15, (DI)(R8*2)
	VMASKMOVPS   Y6, Y15, (DI)(R9*1)

cvdone:
	VZEROUPPER
	RET

// func gradw3x4AVX2(out *[12]float32, dy *float32, dyStride int, x *float32, T int)
//
// Accumulators Y(3r+k) = sum over 8-lane chunks of dy[r, t]*x[t+k].
TEXT ·gradw3x4AVX2(SB), NOSPLIT, $0-40
	MOVQ   dy+8(FP), SI
	MOVQ   dyStride+16(FP), R8
	SHLQ   $2, R8
	LEAQ   (R8)(R8*2), R9
	MOVQ   x+24(FP), DI
	MOVQ   T+32(FP), CX
	MOVQ   CX, DX
	ANDQ   $7, DX
	SHRQ   $3, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

gwloop:
	VMOVUPS     (DI), Y12
	VMOVUPS     4(DI), Y13
	VMOVUPS     8(DI), Y14
	VMOVUPS     (SI), Y15
	VFMADD231PS Y12, Y15, Y0
	VFMADD231PS Y13, Y15, Y1
	VFMADD231PS Y14, Y15, Y2
	VMOVUPS     (SI)(R8*1), Y15
	VFMADD231PS Y12, Y15, Y3
	VFMADD231PS Y13, Y15, Y4
	VFMADD231PS Y14, Y15, Y5
	VMOVUPS     (SI)(R8*2), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VFMADD231PS Y14, Y15, Y8
	VMOVUPS     (SI)(R9*1), Y15
	VFMADD231PS Y12, Y15, Y9
	VFMADD231PS Y13, Y15, Y10
	VFMADD231PS Y14, Y15, Y11
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         gwloop

	TESTQ       DX, DX
	JZ          gwreduce
	LEAQ        -32(SI)(DX*4), SI
	LEAQ        -32(DI)(DX*4), DI
	LEAQ        tailmask<>(SB), AX
	LEAQ        (AX)(DX*4), AX
	VMOVUPS     (DI), Y12
	VANDPS      (AX), Y12, Y12
	VMOVUPS     4(DI), Y13
	VANDPS      (AX), Y13, Y13
	VMOVUPS     8(DI), Y14
	VANDPS      (AX), Y14, Y14
	VMOVUPS     (SI), Y15
	VANDPS      (AX), Y15, Y15
	VFMADD231PS Y12, Y15, Y0
	VFMADD231PS Y13, Y15, Y1
	VFMADD231PS Y14, Y15, Y2
	VMOVUPS     (SI)(R8*1), Y15
	VANDPS      (AX), Y15, Y15
	VFMADD231PS Y12, Y15, Y3
	VFMADD231PS Y13, Y15, Y4
	VFMADD231PS Y14, Y15, Y5
	VMOVUPS     (SI)(R8*2), Y15
	VANDPS      (AX), Y15, Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VFMADD231PS Y14, Y15, Y8
	VMOVUPS     (SI)(R9*1), Y15
	VANDPS      (AX), Y15, Y15
	VFMADD231PS Y12, Y15, Y9
	VFMADD231PS Y13, Y15, Y10
	VFMADD231PS Y14, Y15, Y11

gwreduce:
	MOVQ         out+0(FP), AX
	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      X0, (AX)
	VHADDPS      Y5, Y4, Y4
	VHADDPS      Y7, Y6, Y6
	VHADDPS      Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPS       X5, X4, X4
	VMOVUPS      X4, 16(AX)
	VHADDPS      Y9, Y8, Y8
	VHADDPS      Y11, Y10, Y10
	VHADDPS      Y10, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPS       X9, X8, X8
	VMOVUPS      X8, 32(AX)
	VZEROUPPER
	RET
