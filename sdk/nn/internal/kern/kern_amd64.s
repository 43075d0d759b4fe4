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

// ZERO12 clears Y0..Y11, the accumulators of the 12-chain kernels.
#define ZERO12 \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1; VXORPS Y2, Y2, Y2; VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; VXORPS Y5, Y5, Y5; VXORPS Y6, Y6, Y6; VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8; VXORPS Y9, Y9, Y9; VXORPS Y10, Y10, Y10; VXORPS Y11, Y11, Y11

// CV16STEP is one (input row, tap) step of convx4AVX2's 16-step block:
// the x vectors at xa and xb (steps t..t+7, t+8..t+15), the weights of
// its 4 output rows at w0..w3, and 8 FMAs into Y0..Y7 (row r: Y(2r),
// Y(2r+1)).
#define CV16STEP(xa, xb, w0, w1, w2, w3) \
	VMOVUPS      xa, Y8; \
	VMOVUPS      xb, Y9; \
	VBROADCASTSS w0, Y10; \
	VBROADCASTSS w1, Y11; \
	VBROADCASTSS w2, Y12; \
	VBROADCASTSS w3, Y13; \
	VFMADD231PS  Y8, Y10, Y0; \
	VFMADD231PS  Y9, Y10, Y1; \
	VFMADD231PS  Y8, Y11, Y2; \
	VFMADD231PS  Y9, Y11, Y3; \
	VFMADD231PS  Y8, Y12, Y4; \
	VFMADD231PS  Y9, Y12, Y5; \
	VFMADD231PS  Y8, Y13, Y6; \
	VFMADD231PS  Y9, Y13, Y7

// func convx4AVX2(dst *float32, dstStride int, x *float32, xStride int, wp *float32, bias, rel *float32, C, K, T int)
//
// Register block: 4 output rows (stride R8 bytes) x 16 time steps in Y0..Y7
// (Y0,Y1 row 0; Y2,Y3 row 1; ...). For every input row c and tap k: two
// loads of x, four broadcast weights, eight FMAs. The accumulators start
// from dst, or from the broadcast bias[r] when bias is not nil. When rel is
// not nil, max(result, 0) is also stored at the same place relative to rel
// (reld-8(SP) holds rel-dst in bytes).
TEXT ·convx4AVX2(SB), NOSPLIT, $8-80
	MOVQ dst+0(FP), DI
	MOVQ rel+48(FP), AX
	SUBQ DI, AX
	MOVQ AX, reld-8(SP)
	MOVQ dstStride+8(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ x+16(FP), SI
	MOVQ xStride+24(FP), R10
	SUBQ K+64(FP), R10
	SHLQ $2, R10                 // bytes from x[c, t+K] to x[c+1, t]
	MOVQ wp+32(FP), DX
	MOVQ T+72(FP), R14
	SHRQ $4, R14
	JZ   cv8

cv16:
	MOVQ         bias+40(FP), AX
	TESTQ        AX, AX
	JZ           cv16ld
	VBROADCASTSS (AX), Y0
	VMOVAPS      Y0, Y1
	VBROADCASTSS 4(AX), Y2
	VMOVAPS      Y2, Y3
	VBROADCASTSS 8(AX), Y4
	VMOVAPS      Y4, Y5
	VBROADCASTSS 12(AX), Y6
	VMOVAPS      Y6, Y7
	JMP          cv16go

cv16ld:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS (DI)(R8*1), Y2
	VMOVUPS 32(DI)(R8*1), Y3
	VMOVUPS (DI)(R8*2), Y4
	VMOVUPS 32(DI)(R8*2), Y5
	VMOVUPS (DI)(R9*1), Y6
	VMOVUPS 32(DI)(R9*1), Y7

cv16go:
	MOVQ    SI, R11
	MOVQ    DX, R12
	MOVQ    C+56(FP), CX
	CMPQ    K+64(FP), $1
	JEQ     cv16k1

cv16c:
	MOVQ K+64(FP), BX
	CMPQ BX, $3
	JNE  cv16k

	// K = 3: the three taps unrolled.
	CV16STEP((R11), 32(R11), (R12), 4(R12), 8(R12), 12(R12))
	CV16STEP(4(R11), 36(R11), 16(R12), 20(R12), 24(R12), 28(R12))
	CV16STEP(8(R11), 40(R11), 32(R12), 36(R12), 40(R12), 44(R12))
	ADDQ         $12, R11
	ADDQ         $48, R12
	JMP          cv16cnext

cv16k:
	CV16STEP((R11), 32(R11), (R12), 4(R12), 8(R12), 12(R12))
	ADDQ         $4, R11
	ADDQ         $16, R12
	DECQ         BX
	JNZ          cv16k

cv16cnext:
	ADDQ         R10, R11
	DECQ         CX
	JNZ          cv16c

cv16store:
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, (DI)(R8*1)
	VMOVUPS      Y3, 32(DI)(R8*1)
	VMOVUPS      Y4, (DI)(R8*2)
	VMOVUPS      Y5, 32(DI)(R8*2)
	VMOVUPS      Y6, (DI)(R9*1)
	VMOVUPS      Y7, 32(DI)(R9*1)
	MOVQ         rel+48(FP), AX
	TESTQ        AX, AX
	JZ           cv16next
	MOVQ         reld-8(SP), AX
	ADDQ         DI, AX
	VXORPS       Y14, Y14, Y14
	VMAXPS       Y0, Y14, Y0
	VMAXPS       Y1, Y14, Y1
	VMAXPS       Y2, Y14, Y2
	VMAXPS       Y3, Y14, Y3
	VMAXPS       Y4, Y14, Y4
	VMAXPS       Y5, Y14, Y5
	VMAXPS       Y6, Y14, Y6
	VMAXPS       Y7, Y14, Y7
	VMOVUPS      Y0, (AX)
	VMOVUPS      Y1, 32(AX)
	VMOVUPS      Y2, (AX)(R8*1)
	VMOVUPS      Y3, 32(AX)(R8*1)
	VMOVUPS      Y4, (AX)(R8*2)
	VMOVUPS      Y5, 32(AX)(R8*2)
	VMOVUPS      Y6, (AX)(R9*1)
	VMOVUPS      Y7, 32(AX)(R9*1)

cv16next:
	ADDQ         $64, DI
	ADDQ         $64, SI
	DECQ         R14
	JNZ          cv16
	JMP          cv8

	// K = 1 (a 1x1 convolution, a dense layer): two input rows an
	// iteration and no tap loop, R13 the bytes from one row to the
	// next; the same FMAs in the same order as cv16c.
cv16k1:
	LEAQ 4(R10), R13

cv16k1two:
	CMPQ         CX, $2
	JLT          cv16k1one
	CV16STEP((R11), 32(R11), (R12), 4(R12), 8(R12), 12(R12))
	CV16STEP((R11)(R13*1), 32(R11)(R13*1), 16(R12), 20(R12), 24(R12), 28(R12))
	LEAQ         (R11)(R13*2), R11
	ADDQ         $32, R12
	SUBQ         $2, CX
	JMP          cv16k1two

cv16k1one:
	TESTQ        CX, CX
	JZ           cv16store
	CV16STEP((R11), 32(R11), (R12), 4(R12), 8(R12), 12(R12))
	JMP          cv16store

cv8:
	MOVQ  T+72(FP), R13
	TESTQ $8, R13
	JZ    cvtail
	MOVQ         bias+40(FP), AX
	TESTQ        AX, AX
	JZ           cv8ld
	VBROADCASTSS (AX), Y0
	VBROADCASTSS 4(AX), Y2
	VBROADCASTSS 8(AX), Y4
	VBROADCASTSS 12(AX), Y6
	JMP          cv8go

cv8ld:
	VMOVUPS (DI), Y0
	VMOVUPS (DI)(R8*1), Y2
	VMOVUPS (DI)(R8*2), Y4
	VMOVUPS (DI)(R9*1), Y6

cv8go:
	MOVQ    SI, R11
	MOVQ    DX, R12
	MOVQ    C+56(FP), CX

cv8c:
	MOVQ K+64(FP), BX

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
	MOVQ         rel+48(FP), AX
	TESTQ        AX, AX
	JZ           cv8next
	MOVQ         reld-8(SP), AX
	ADDQ         DI, AX
	VXORPS       Y14, Y14, Y14
	VMAXPS       Y0, Y14, Y0
	VMAXPS       Y2, Y14, Y2
	VMAXPS       Y4, Y14, Y4
	VMAXPS       Y6, Y14, Y6
	VMOVUPS      Y0, (AX)
	VMOVUPS      Y2, (AX)(R8*1)
	VMOVUPS      Y4, (AX)(R8*2)
	VMOVUPS      Y6, (AX)(R9*1)

cv8next:
	ADDQ         $32, DI
	ADDQ         $32, SI

cvtail:
	ANDQ    $7, R13
	JZ      cvdone
	LEAQ    -32(DI)(R13*4), DI
	LEAQ    -32(SI)(R13*4), SI
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(R13*4), Y15
	MOVQ         bias+40(FP), AX
	TESTQ        AX, AX
	JZ           cvtld
	VBROADCASTSS (AX), Y0
	VBROADCASTSS 4(AX), Y2
	VBROADCASTSS 8(AX), Y4
	VBROADCASTSS 12(AX), Y6
	JMP          cvtgo

cvtld:
	VMOVUPS (DI), Y0
	VMOVUPS (DI)(R8*1), Y2
	VMOVUPS (DI)(R8*2), Y4
	VMOVUPS (DI)(R9*1), Y6

cvtgo:
	MOVQ    SI, R11
	MOVQ    DX, R12
	MOVQ    C+56(FP), CX

cvtc:
	MOVQ K+64(FP), BX

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
	MOVQ         rel+48(FP), AX
	TESTQ        AX, AX
	JZ           cvdone
	MOVQ         reld-8(SP), AX
	ADDQ         DI, AX
	VXORPS       Y14, Y14, Y14
	VMAXPS       Y0, Y14, Y0
	VMAXPS       Y2, Y14, Y2
	VMAXPS       Y4, Y14, Y4
	VMAXPS       Y6, Y14, Y6
	VMASKMOVPS   Y0, Y15, (AX)
	VMASKMOVPS   Y2, Y15, (AX)(R8*1)
	VMASKMOVPS   Y4, Y15, (AX)(R8*2)
	VMASKMOVPS   Y6, Y15, (AX)(R9*1)

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
	ZERO12

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

// func gradw4x3AVX2(out *[12]float32, dy *float32, dyStride int, x0, x1, x2 *float32, T int)
//
// Accumulators Y(3r+j) = sum over 8-lane chunks of dy[r, t]*xj[t]: per
// chunk four dy loads and three x loads feed twelve FMAs. R10 and R11 hold
// x1-x0 and x2-x0 in bytes, so two pointers advance.
TEXT ·gradw4x3AVX2(SB), NOSPLIT, $0-56
	MOVQ   dy+8(FP), SI
	MOVQ   dyStride+16(FP), R8
	SHLQ   $2, R8
	LEAQ   (R8)(R8*2), R9
	MOVQ   x0+24(FP), DI
	MOVQ   x1+32(FP), R10
	SUBQ   DI, R10
	MOVQ   x2+40(FP), R11
	SUBQ   DI, R11
	MOVQ   T+48(FP), CX
	MOVQ   CX, DX
	ANDQ   $7, DX
	SHRQ   $3, CX
	ZERO12

g43loop:
	VMOVUPS     (DI), Y12
	VMOVUPS     (DI)(R10*1), Y13
	VMOVUPS     (DI)(R11*1), Y14
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
	JNZ         g43loop

	TESTQ       DX, DX
	JZ          g43reduce
	LEAQ        -32(SI)(DX*4), SI
	LEAQ        -32(DI)(DX*4), DI
	LEAQ        tailmask<>(SB), AX
	LEAQ        (AX)(DX*4), AX
	VMOVUPS     (DI), Y12
	VANDPS      (AX), Y12, Y12
	VMOVUPS     (DI)(R10*1), Y13
	VANDPS      (AX), Y13, Y13
	VMOVUPS     (DI)(R11*1), Y14
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

g43reduce:
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

// Lane numbers 0..7 and -8..-1 as int32, for position vectors.
DATA lanes<>+0(SB)/4, $0
DATA lanes<>+4(SB)/4, $1
DATA lanes<>+8(SB)/4, $2
DATA lanes<>+12(SB)/4, $3
DATA lanes<>+16(SB)/4, $4
DATA lanes<>+20(SB)/4, $5
DATA lanes<>+24(SB)/4, $6
DATA lanes<>+28(SB)/4, $7
DATA lanes<>+32(SB)/4, $-8
DATA lanes<>+36(SB)/4, $-7
DATA lanes<>+40(SB)/4, $-6
DATA lanes<>+44(SB)/4, $-5
DATA lanes<>+48(SB)/4, $-4
DATA lanes<>+52(SB)/4, $-3
DATA lanes<>+56(SB)/4, $-2
DATA lanes<>+60(SB)/4, $-1
DATA lanes<>+64(SB)/4, $1
DATA lanes<>+68(SB)/4, $8
GLOBL lanes<>(SB), RODATA|NOPTR, $72

// func reluToAVX2(dst, x []float32)
TEXT ·reluToAVX2(SB), NOSPLIT, $0-48
	MOVQ   dst_base+0(FP), DI
	MOVQ   dst_len+8(FP), CX
	MOVQ   x_base+24(FP), SI
	VXORPS Y15, Y15, Y15
	MOVQ   CX, DX
	ANDQ   $7, DX
	SHRQ   $3, CX
	CMPQ   CX, $4
	JLT    rtloop8

rtloop32:
	VMAXPS  (SI), Y15, Y0
	VMAXPS  32(SI), Y15, Y1
	VMAXPS  64(SI), Y15, Y2
	VMAXPS  96(SI), Y15, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $4, CX
	CMPQ    CX, $4
	JGE     rtloop32
	TESTQ   CX, CX
	JZ      rttail

rtloop8:
	VMAXPS  (SI), Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     rtloop8

rttail:
	TESTQ      DX, DX
	JZ         rtdone
	LEAQ       -32(DI)(DX*4), DI
	LEAQ       -32(SI)(DX*4), SI
	LEAQ       tailmask<>(SB), AX
	VMOVUPS    (AX)(DX*4), Y12
	VMAXPS     (SI), Y15, Y0
	VMASKMOVPS Y0, Y12, (DI)

rtdone:
	VZEROUPPER
	RET

// func reluGradAVX2(dx, dy, y []float32)
// The mask is !(y <= 0) (predicate NLE_US: true for NaN).
TEXT ·reluGradAVX2(SB), NOSPLIT, $0-72
	MOVQ   dx_base+0(FP), DI
	MOVQ   dx_len+8(FP), CX
	MOVQ   dy_base+24(FP), SI
	MOVQ   y_base+48(FP), BX
	VXORPS Y15, Y15, Y15
	MOVQ   CX, DX
	ANDQ   $7, DX
	SHRQ   $3, CX
	CMPQ   CX, $2
	JLT    rgloop8

rgloop16:
	VMOVUPS (BX), Y0
	VMOVUPS 32(BX), Y1
	VCMPPS  $6, Y15, Y0, Y0
	VCMPPS  $6, Y15, Y1, Y1
	VANDPS  (SI), Y0, Y0
	VANDPS  32(SI), Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $64, BX
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $2, CX
	CMPQ    CX, $2
	JGE     rgloop16
	TESTQ   CX, CX
	JZ      rgtail

rgloop8:
	VMOVUPS (BX), Y0
	VCMPPS  $6, Y15, Y0, Y0
	VANDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, BX
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     rgloop8

rgtail:
	TESTQ      DX, DX
	JZ         rgdone
	LEAQ       -32(DI)(DX*4), DI
	LEAQ       -32(SI)(DX*4), SI
	LEAQ       -32(BX)(DX*4), BX
	LEAQ       tailmask<>(SB), AX
	VMOVUPS    (AX)(DX*4), Y12
	VMOVUPS    (BX), Y0
	VCMPPS     $6, Y15, Y0, Y0
	VANDPS     (SI), Y0, Y0
	VMASKMOVPS Y0, Y12, (DI)

rgdone:
	VZEROUPPER
	RET

// func maxPoolAVX2(dst *float32, idx *int32, x *float32, n, k int)
//
// 8 outputs per chunk: Y0 the running maximum, Y1 its position, Y2 the
// position of the sample being compared, Y13 the chunk's positions t. The
// last chunk ends at n-1 and recomputes (identically) outputs of the one
// before.
TEXT ·maxPoolAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         idx+8(FP), R8
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), R10
	SUBQ         $8, R10                // start of the last chunk
	MOVQ         k+32(FP), BX
	VMOVDQU      lanes<>(SB), Y13
	VPBROADCASTD lanes<>+64(SB), Y14    // 1
	VPBROADCASTD lanes<>+68(SB), Y12    // 8
	MOVQ         n+24(FP), AX
	VMOVQ        AX, X11
	VPBROADCASTD X11, Y11
	VPADDD       lanes<>+32(SB), Y11, Y11 // positions of the last chunk
	XORQ         R9, R9
	CMPQ         BX, $3
	JEQ          mp3chunk

mpchunk:
	LEAQ    (SI)(R9*4), R11
	VMOVUPS (R11), Y0
	VMOVDQA Y13, Y1
	VMOVDQA Y13, Y2
	MOVQ    BX, DX
	DECQ    DX
	JZ      mpstore

mpk:
	ADDQ      $4, R11
	VPADDD    Y14, Y2, Y2
	VMOVUPS   (R11), Y3
	VCMPPS    $0x1e, Y0, Y3, Y4     // x[t+j] > max (GT_OQ)
	VBLENDVPS Y4, Y3, Y0, Y0
	VBLENDVPS Y4, Y2, Y1, Y1
	DECQ      DX
	JNZ       mpk

mpstore:
	VMOVUPS Y0, (DI)(R9*4)
	VMOVDQU Y1, (R8)(R9*4)
	CMPQ    R9, R10
	JGE     mpdone
	ADDQ    $8, R9
	VPADDD  Y12, Y13, Y13
	CMPQ    R9, R10
	JLE     mpchunk
	MOVQ    R10, R9
	VMOVDQA Y11, Y13
	JMP     mpchunk

	// k = 3, unrolled: Y13 = t, Y2 = t+1, Y5 = t+2.
mp3chunk:
	LEAQ      (SI)(R9*4), R11
	VMOVUPS   (R11), Y0
	VMOVUPS   4(R11), Y3
	VMOVUPS   8(R11), Y6
	VPADDD    Y14, Y13, Y2
	VPADDD    Y14, Y2, Y5
	VCMPPS    $0x1e, Y0, Y3, Y4
	VBLENDVPS Y4, Y3, Y0, Y0
	VBLENDVPS Y4, Y2, Y13, Y1
	VCMPPS    $0x1e, Y0, Y6, Y4
	VBLENDVPS Y4, Y6, Y0, Y0
	VBLENDVPS Y4, Y5, Y1, Y1
	VMOVUPS   Y0, (DI)(R9*4)
	VMOVDQU   Y1, (R8)(R9*4)
	CMPQ      R9, R10
	JGE       mpdone
	ADDQ      $8, R9
	VPADDD    Y12, Y13, Y13
	CMPQ      R9, R10
	JLE       mp3chunk
	MOVQ      R10, R9
	VMOVDQA   Y11, Y13
	JMP       mp3chunk

mpdone:
	VZEROUPPER
	RET

// func maxPoolGradAVX2(dx, dy *float32, idx *int32, m, k int)
//
// 8 outputs s per chunk (Y13 their positions): the sum over the k windows
// t = s-k+1..s of dy[t] where idx[t] == s. dx points at position k-1, dy
// and idx at position 0, so output u of the chunk reads dy and idx at u..u+k-1.
TEXT ·maxPoolGradAVX2(SB), NOSPLIT, $0-40
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         idx+16(FP), R8
	MOVQ         m+24(FP), R10
	SUBQ         $8, R10                // start of the last chunk
	MOVQ         k+32(FP), BX
	LEAQ         -1(BX), AX
	VMOVQ        AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQA      Y13, Y11
	VPADDD       lanes<>(SB), Y13, Y13  // positions of the first chunk: k-1+lane
	MOVQ         m+24(FP), AX
	VMOVQ        AX, X10
	VPBROADCASTD X10, Y10
	VPADDD       Y10, Y11, Y11
	VPADDD       lanes<>+32(SB), Y11, Y11 // positions of the last chunk: k-1+m-8+lane
	VPBROADCASTD lanes<>+68(SB), Y12    // 8
	XORQ         R9, R9
	CMPQ         BX, $3
	JEQ          mg3chunk

mgchunk:
	VXORPS Y0, Y0, Y0
	LEAQ   (SI)(R9*4), R11
	LEAQ   (R8)(R9*4), R12
	MOVQ   BX, DX

mgk:
	VPCMPEQD (R12), Y13, Y4
	VANDPS   (R11), Y4, Y5
	VADDPS   Y5, Y0, Y0
	ADDQ     $4, R11
	ADDQ     $4, R12
	DECQ     DX
	JNZ      mgk
	VMOVUPS  Y0, (DI)(R9*4)
	CMPQ     R9, R10
	JGE      mgdone
	ADDQ     $8, R9
	VPADDD   Y12, Y13, Y13
	CMPQ     R9, R10
	JLE      mgchunk
	MOVQ     R10, R9
	VMOVDQA  Y11, Y13
	JMP      mgchunk

	// k = 3, unrolled.
mg3chunk:
	LEAQ     (SI)(R9*4), R11
	LEAQ     (R8)(R9*4), R12
	VPCMPEQD (R12), Y13, Y4
	VPCMPEQD 4(R12), Y13, Y5
	VPCMPEQD 8(R12), Y13, Y6
	VANDPS   (R11), Y4, Y4
	VANDPS   4(R11), Y5, Y5
	VANDPS   8(R11), Y6, Y6
	VXORPS   Y0, Y0, Y0
	VADDPS   Y4, Y0, Y0
	VADDPS   Y5, Y0, Y0
	VADDPS   Y6, Y0, Y0
	VMOVUPS  Y0, (DI)(R9*4)
	CMPQ     R9, R10
	JGE      mgdone
	ADDQ     $8, R9
	VPADDD   Y12, Y13, Y13
	CMPQ     R9, R10
	JLE      mg3chunk
	MOVQ     R10, R9
	VMOVDQA  Y11, Y13
	JMP      mg3chunk

mgdone:
	VZEROUPPER
	RET

// func argMaxAVX2(x []float32) int
//
// Two passes: the maximum m, NaNs skipped (VMAXPS returns its second
// source, the accumulator, when the sample is a NaN; x[0] is not a NaN),
// then the first position p with x[p] == m. Chunks past the start may
// overlap the previous one: re-reading a sample changes neither pass.
TEXT ·argMaxAVX2(SB), NOSPLIT, $0-32
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	LEAQ         -32(SI)(CX*4), R8      // the last chunk
	VBROADCASTSS (SI), Y0
	VMOVAPS      Y0, Y1
	VMOVAPS      Y0, Y2
	VMOVAPS      Y0, Y3
	MOVQ         SI, DI
	MOVQ         CX, DX
	SHRQ         $5, DX
	JZ           amx8

amx32:
	VMOVUPS (DI), Y4
	VMOVUPS 32(DI), Y5
	VMOVUPS 64(DI), Y6
	VMOVUPS 96(DI), Y7
	VMAXPS  Y0, Y4, Y0
	VMAXPS  Y1, Y5, Y1
	VMAXPS  Y2, Y6, Y2
	VMAXPS  Y3, Y7, Y3
	ADDQ    $128, DI
	DECQ    DX
	JNZ     amx32

amx8:
	CMPQ    DI, R8
	JGE     amxlast
	VMOVUPS (DI), Y4
	VMAXPS  Y0, Y4, Y0
	ADDQ    $32, DI
	JMP     amx8

amxlast:
	VMOVUPS      (R8), Y4
	VMAXPS       Y0, Y4, Y0
	VMAXPS       Y1, Y0, Y0
	VMAXPS       Y3, Y2, Y2
	VMAXPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VBROADCASTSS X0, Y0

	// Find the first x[p] == m.
	MOVQ SI, DI

amfind:
	CMPQ      DI, R8
	JGE       amflast
	VCMPPS    $0, (DI), Y0, Y4      // EQ_OQ
	VMOVMSKPS Y4, AX
	TESTL     AX, AX
	JNZ       amfound
	ADDQ      $32, DI
	JMP       amfind

amflast:
	MOVQ      R8, DI
	VCMPPS    $0, (DI), Y0, Y4
	VMOVMSKPS Y4, AX

amfound:
	BSFL AX, AX
	SUBQ SI, DI
	SHRQ $2, DI
	ADDQ DI, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

// func sum64AVX2(x []float32) float64
// len(x) is a multiple of 4 and >= 8.
TEXT ·sum64AVX2(SB), NOSPLIT, $0-32
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	SHRQ   $2, CX
	CMPQ   CX, $4
	JLT    s6loop4

s6loop16:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VADDPD    Y4, Y0, Y0
	VADDPD    Y5, Y1, Y1
	VADDPD    Y6, Y2, Y2
	VADDPD    Y7, Y3, Y3
	ADDQ      $64, SI
	SUBQ      $4, CX
	CMPQ      CX, $4
	JGE       s6loop16
	TESTQ     CX, CX
	JZ        s6reduce

s6loop4:
	VCVTPS2PD (SI), Y4
	VADDPD    Y4, Y0, Y0
	ADDQ      $16, SI
	DECQ      CX
	JNZ       s6loop4

s6reduce:
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VADDPD       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0
	VMOVSD       X0, ret+24(FP)
	VZEROUPPER
	RET

// func sqDev64AVX2(x []float32, c float64) float64
// len(x) is a multiple of 4 and >= 8.
TEXT ·sqDev64AVX2(SB), NOSPLIT, $0-40
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSD c+24(FP), Y15
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	VXORPD       Y2, Y2, Y2
	VXORPD       Y3, Y3, Y3
	SHRQ         $2, CX
	CMPQ         CX, $4
	JLT          sdloop4

sdloop16:
	VCVTPS2PD   (SI), Y4
	VCVTPS2PD   16(SI), Y5
	VCVTPS2PD   32(SI), Y6
	VCVTPS2PD   48(SI), Y7
	VSUBPD      Y15, Y4, Y4
	VSUBPD      Y15, Y5, Y5
	VSUBPD      Y15, Y6, Y6
	VSUBPD      Y15, Y7, Y7
	VFMADD231PD Y4, Y4, Y0
	VFMADD231PD Y5, Y5, Y1
	VFMADD231PD Y6, Y6, Y2
	VFMADD231PD Y7, Y7, Y3
	ADDQ        $64, SI
	SUBQ        $4, CX
	CMPQ        CX, $4
	JGE         sdloop16
	TESTQ       CX, CX
	JZ          sdreduce

sdloop4:
	VCVTPS2PD   (SI), Y4
	VSUBPD      Y15, Y4, Y4
	VFMADD231PD Y4, Y4, Y0
	ADDQ        $16, SI
	DECQ        CX
	JNZ         sdloop4

sdreduce:
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VADDPD       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0
	VMOVSD       X0, ret+32(FP)
	VZEROUPPER
	RET

// func sumDot64AVX2(x, y []float32) (sx, sxy float64)
// len(x) is a multiple of 4 and >= 8.
TEXT ·sumDot64AVX2(SB), NOSPLIT, $0-64
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	MOVQ   y_base+24(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	SHRQ   $2, CX
	CMPQ   CX, $2
	JLT    sxloop4

sxloop8:
	VCVTPS2PD   (SI), Y4
	VCVTPS2PD   16(SI), Y5
	VCVTPS2PD   (DI), Y6
	VCVTPS2PD   16(DI), Y7
	VADDPD      Y4, Y0, Y0
	VADDPD      Y5, Y1, Y1
	VFMADD231PD Y4, Y6, Y2
	VFMADD231PD Y5, Y7, Y3
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $2, CX
	CMPQ        CX, $2
	JGE         sxloop8
	TESTQ       CX, CX
	JZ          sxreduce

sxloop4:
	VCVTPS2PD   (SI), Y4
	VCVTPS2PD   (DI), Y6
	VADDPD      Y4, Y0, Y0
	VFMADD231PD Y4, Y6, Y2

sxreduce:
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0
	VMOVSD       X0, sx+48(FP)
	VEXTRACTF128 $1, Y2, X3
	VADDPD       X3, X2, X2
	VHADDPD      X2, X2, X2
	VMOVSD       X2, sxy+56(FP)
	VZEROUPPER
	RET

// BNROW is a batchnorm row's arithmetic on the 8 values in Y0, with mu,
// s, g, b broadcast in Y12..Y15: Y0 = (Y0 - mu) * s (xh), Y1 = Y0 * g + b
// (y), each operation rounded.
#define BNROW \
	VSUBPS Y12, Y0, Y0; \
	VMULPS Y13, Y0, Y0; \
	VMULPS Y14, Y0, Y1; \
	VADDPS Y15, Y1, Y1

// func normalizeAVX2(xh, y, x []float32, mu, sc, ga, be float32)
TEXT ·normalizeAVX2(SB), NOSPLIT, $0-88
	MOVQ         xh_base+0(FP), DI
	MOVQ         y_base+24(FP), R8
	MOVQ         x_base+48(FP), SI
	MOVQ         x_len+56(FP), CX
	VBROADCASTSS mu+72(FP), Y12
	VBROADCASTSS sc+76(FP), Y13
	VBROADCASTSS ga+80(FP), Y14
	VBROADCASTSS be+84(FP), Y15
	MOVQ         CX, DX
	ANDQ         $7, DX
	SHRQ         $3, CX

nmloop8:
	VMOVUPS (SI), Y0
	BNROW
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, (R8)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, R8
	DECQ    CX
	JNZ     nmloop8
	TESTQ   DX, DX
	JZ      nmdone
	LEAQ    -32(SI)(DX*4), SI
	LEAQ    -32(DI)(DX*4), DI
	LEAQ    -32(R8)(DX*4), R8
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(DX*4), Y11
	VMOVUPS (SI), Y0
	BNROW
	VMASKMOVPS Y0, Y11, (DI)
	VMASKMOVPS Y1, Y11, (R8)

nmdone:
	VZEROUPPER
	RET

// func normalizeGradAVX2(dx, dy, xh []float32, k, md, mdx float32)
TEXT ·normalizeGradAVX2(SB), NOSPLIT, $0-84
	MOVQ         dx_base+0(FP), DI
	MOVQ         dx_len+8(FP), CX
	MOVQ         dy_base+24(FP), SI
	MOVQ         xh_base+48(FP), R8
	VBROADCASTSS k+72(FP), Y12
	VBROADCASTSS md+76(FP), Y13
	VBROADCASTSS mdx+80(FP), Y14
	MOVQ         CX, DX
	ANDQ         $7, DX
	SHRQ         $3, CX

ngloop8:
	VMOVUPS (SI), Y0
	VSUBPS  Y13, Y0, Y0
	VMULPS  (R8), Y14, Y1
	VSUBPS  Y1, Y0, Y0
	VMULPS  Y12, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, R8
	DECQ    CX
	JNZ     ngloop8
	TESTQ   DX, DX
	JZ      ngdone
	LEAQ    -32(SI)(DX*4), SI
	LEAQ    -32(DI)(DX*4), DI
	LEAQ    -32(R8)(DX*4), R8
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(DX*4), Y11
	VMOVUPS (SI), Y0
	VSUBPS  Y13, Y0, Y0
	VMULPS  (R8), Y14, Y1
	VSUBPS  Y1, Y0, Y0
	VMULPS  Y12, Y0, Y0
	VMASKMOVPS Y0, Y11, (DI)

ngdone:
	VZEROUPPER
	RET

// func gerAVX2(a *float32, lda int, x, y []float32)
//
// Row by row: a[i, :] += x[i]*y, the last partial chunk of a row done as an
// overlapping chunk with a masked store.
TEXT ·gerAVX2(SB), NOSPLIT, $0-64
	MOVQ    a+0(FP), DI
	MOVQ    lda+8(FP), R8
	SHLQ    $2, R8
	MOVQ    x_base+16(FP), SI
	MOVQ    x_len+24(FP), CX
	MOVQ    y_base+40(FP), BX
	MOVQ    y_len+48(FP), DX
	MOVQ    DX, R9
	ANDQ    $7, R9
	SHRQ    $3, DX
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(R9*4), Y12

grrow:
	VBROADCASTSS (SI), Y15
	MOVQ         DI, R10
	MOVQ         BX, R11
	MOVQ         DX, R12

grchunk:
	VMOVUPS     (R10), Y0
	VFMADD231PS (R11), Y15, Y0
	VMOVUPS     Y0, (R10)
	ADDQ        $32, R10
	ADDQ        $32, R11
	DECQ        R12
	JNZ         grchunk
	TESTQ       R9, R9
	JZ          grnext
	LEAQ        -32(R10)(R9*4), R10
	LEAQ        -32(R11)(R9*4), R11
	VMOVUPS     (R10), Y0
	VFMADD231PS (R11), Y15, Y0
	VMASKMOVPS  Y0, Y12, (R10)

grnext:
	ADDQ R8, DI
	ADDQ $4, SI
	DECQ CX
	JNZ  grrow
	VZEROUPPER
	RET

// func gemvTAVX2(y []float32, a *float32, lda int, x []float32)
//
// Groups of four 8-lane chunks of y in Y0..Y3, each summed over the rows of
// a. A chunk starts at min(offset, n-8): near the end chunks overlap and
// recompute the same sums, harmless as y is only written.
TEXT ·gemvTAVX2(SB), NOSPLIT, $8-64
	MOVQ y_base+0(FP), DI
	MOVQ y_len+8(FP), R9
	MOVQ a+24(FP), SI
	MOVQ lda+32(FP), R8
	SHLQ $2, R8
	MOVQ x_base+40(FP), BX
	SHLQ $2, R9                    // n in bytes
	LEAQ -32(R9), R11              // byte offset of the last chunk
	XORQ AX, AX                    // byte offset of the group

gtgroup:
	MOVQ    AX, R13
	LEAQ    32(AX), R14
	LEAQ    64(AX), DX
	LEAQ    96(AX), CX
	CMPQ    R13, R11
	CMOVQGT R11, R13
	CMPQ    R14, R11
	CMOVQGT R11, R14
	CMPQ    DX, R11
	CMOVQGT R11, DX
	CMPQ    CX, R11
	CMOVQGT R11, CX
	MOVQ    SI, R10
	MOVQ    BX, R12
	VBROADCASTSS (R12), Y15
	VMULPS  (R10)(R13*1), Y15, Y0
	VMULPS  (R10)(R14*1), Y15, Y1
	VMULPS  (R10)(DX*1), Y15, Y2
	VMULPS  (R10)(CX*1), Y15, Y3
	MOVQ    AX, grp-8(SP)
	MOVQ    x_len+48(FP), AX
	DECQ    AX
	JZ      gtstore

gtrow:
	ADDQ         R8, R10
	ADDQ         $4, R12
	VBROADCASTSS (R12), Y15
	VFMADD231PS  (R10)(R13*1), Y15, Y0
	VFMADD231PS  (R10)(R14*1), Y15, Y1
	VFMADD231PS  (R10)(DX*1), Y15, Y2
	VFMADD231PS  (R10)(CX*1), Y15, Y3
	DECQ         AX
	JNZ          gtrow

gtstore:
	MOVQ    grp-8(SP), AX
	VMOVUPS Y0, (DI)(R13*1)
	VMOVUPS Y1, (DI)(R14*1)
	VMOVUPS Y2, (DI)(DX*1)
	VMOVUPS Y3, (DI)(CX*1)
	ADDQ    $128, AX
	CMPQ    AX, R9
	JLT     gtgroup
	VZEROUPPER
	RET

// func expAVX2(dst, x []float32, c *[12]float32)
//
// dst[i] = exp(x[i]) for the len(dst)&^7 first elements, 8 at a time, as
// expGeneric computes it (Cephes' expf): the clamped x = f ln2 + r with f
// = round(x log2e), e^r by a degree-7 polynomial, times 2^f. c holds the
// constants in expConsts' order.
TEXT ·expAVX2(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ c+48(FP), R8
	SHRQ $3, CX
	JZ   exdone
	VBROADCASTSS 0(R8), Y8   // lo
	VBROADCASTSS 4(R8), Y9   // hi
	VBROADCASTSS 8(R8), Y10  // log2e
	VBROADCASTSS 12(R8), Y11 // c1
	VBROADCASTSS 16(R8), Y12 // c2
	VBROADCASTSS 44(R8), Y13 // 1
	MOVL         $127, AX
	MOVL         AX, X14
	VPBROADCASTD X14, Y14

exloop:
	VMOVUPS      (SI), Y0
	VMAXPS       Y8, Y0, Y0
	VMINPS       Y9, Y0, Y0
	VMULPS       Y10, Y0, Y1
	VROUNDPS     $0, Y1, Y1
	VFNMADD231PS Y11, Y1, Y0
	VFNMADD231PS Y12, Y1, Y0
	VMULPS       Y0, Y0, Y2
	VBROADCASTSS 20(R8), Y3
	VBROADCASTSS 24(R8), Y4
	VFMADD213PS  Y4, Y0, Y3
	VBROADCASTSS 28(R8), Y4
	VFMADD213PS  Y4, Y0, Y3
	VBROADCASTSS 32(R8), Y4
	VFMADD213PS  Y4, Y0, Y3
	VBROADCASTSS 36(R8), Y4
	VFMADD213PS  Y4, Y0, Y3
	VBROADCASTSS 40(R8), Y4
	VFMADD213PS  Y4, Y0, Y3
	VFMADD213PS  Y0, Y2, Y3
	VADDPS       Y13, Y3, Y3
	VCVTPS2DQ    Y1, Y5
	VPADDD       Y14, Y5, Y5
	VPSLLD       $23, Y5, Y5
	VMULPS       Y5, Y3, Y3
	VMOVUPS      Y3, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          exloop

exdone:
	VZEROUPPER
	RET

// func dotCols16AVX2(y *float32, x *float32, xStride int, w *float32, in int)
// y[j] = dot(w[0:in], column j of x), j < 16, column j the values
// x[i*xStride+j]: four partial sums by i mod 4 (the tail into the first),
// each product rounded before its sum, combined as (s0+s1)+(s2+s3).
TEXT ·dotCols16AVX2(SB), NOSPLIT, $0-40
	MOVQ   y+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   xStride+16(FP), BX
	SHLQ   $2, BX
	MOVQ   w+24(FP), DX
	MOVQ   in+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ   CX, R8
	SHRQ   $2, R8
	ANDQ   $3, CX
	TESTQ  R8, R8
	JZ     dctail

dcloop:
	VBROADCASTSS (DX), Y4
	VMULPS       (SI), Y4, Y5
	VMULPS       32(SI), Y4, Y6
	VADDPS       Y5, Y0, Y0
	VADDPS       Y6, Y8, Y8
	ADDQ         BX, SI
	VBROADCASTSS 4(DX), Y4
	VMULPS       (SI), Y4, Y5
	VMULPS       32(SI), Y4, Y6
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y9, Y9
	ADDQ         BX, SI
	VBROADCASTSS 8(DX), Y4
	VMULPS       (SI), Y4, Y5
	VMULPS       32(SI), Y4, Y6
	VADDPS       Y5, Y2, Y2
	VADDPS       Y6, Y10, Y10
	ADDQ         BX, SI
	VBROADCASTSS 12(DX), Y4
	VMULPS       (SI), Y4, Y5
	VMULPS       32(SI), Y4, Y6
	VADDPS       Y5, Y3, Y3
	VADDPS       Y6, Y11, Y11
	ADDQ         BX, SI
	ADDQ         $16, DX
	DECQ         R8
	JNZ          dcloop

dctail:
	TESTQ CX, CX
	JZ    dcdone

dctl:
	VBROADCASTSS (DX), Y4
	VMULPS       (SI), Y4, Y5
	VMULPS       32(SI), Y4, Y6
	VADDPS       Y5, Y0, Y0
	VADDPS       Y6, Y8, Y8
	ADDQ         BX, SI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          dctl

dcdone:
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y2, Y2
	VADDPS  Y2, Y0, Y0
	VADDPS  Y9, Y8, Y8
	VADDPS  Y11, Y10, Y10
	VADDPS  Y10, Y8, Y8
	VMOVUPS Y0, (DI)
	VMOVUPS Y8, 32(DI)
	VZEROUPPER
	RET

// func fmaPeakAVX2(n int)
//
// n iterations of 12 independent VFMADD231PS on zeros (no subnormals):
// 192 float32 flops an iteration, enough chains to keep both FMA pipes
// busy through their latency. The benchmarks' measure of the core's
// AVX2 peak.
TEXT ·fmaPeakAVX2(SB), NOSPLIT, $0-8
	MOVQ   n+0(FP), CX
	ZERO12
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	TESTQ  CX, CX
	JZ     fpdone

fploop:
	VFMADD231PS Y12, Y13, Y0
	VFMADD231PS Y12, Y13, Y1
	VFMADD231PS Y12, Y13, Y2
	VFMADD231PS Y12, Y13, Y3
	VFMADD231PS Y12, Y13, Y4
	VFMADD231PS Y12, Y13, Y5
	VFMADD231PS Y12, Y13, Y6
	VFMADD231PS Y12, Y13, Y7
	VFMADD231PS Y12, Y13, Y8
	VFMADD231PS Y12, Y13, Y9
	VFMADD231PS Y12, Y13, Y10
	VFMADD231PS Y12, Y13, Y11
	DECQ        CX
	JNZ         fploop

fpdone:
	VZEROUPPER
	RET

// func normalizeYAVX2(y, x []float32, mu, sc, ga, be float32, relu int)
//
// normalizeAVX2's y without its xh: y = ((x - mu) * sc) * ga + be, each
// operation rounded, then max(0, y) as reluToAVX2 takes it when relu is
// not 0. len(y) >= 8, len(x) >= len(y).
TEXT ·normalizeYAVX2(SB), NOSPLIT, $0-72
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	VBROADCASTSS mu+48(FP), Y12
	VBROADCASTSS sc+52(FP), Y13
	VBROADCASTSS ga+56(FP), Y14
	VBROADCASTSS be+60(FP), Y15
	MOVQ         relu+64(FP), R9
	VXORPS       Y10, Y10, Y10
	MOVQ         CX, DX
	ANDQ         $7, DX
	SHRQ         $3, CX

nyloop8:
	VMOVUPS (SI), Y0
	BNROW
	TESTQ   R9, R9
	JZ      nystore
	VMAXPS  Y1, Y10, Y1

nystore:
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     nyloop8
	TESTQ   DX, DX
	JZ      nydone
	LEAQ    -32(SI)(DX*4), SI
	LEAQ    -32(DI)(DX*4), DI
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(DX*4), Y11
	VMOVUPS (SI), Y0
	BNROW
	TESTQ   R9, R9
	JZ      nytstore
	VMAXPS  Y1, Y10, Y1

nytstore:
	VMASKMOVPS Y1, Y11, (DI)

nydone:
	VZEROUPPER
	RET

// func centerAVX2(xh, x []float32, mu, sc float32)
//
// normalizeAVX2's xh alone: xh = (x - mu) * sc, each operation rounded.
// len(xh) >= 8, len(x) >= len(xh).
TEXT ·centerAVX2(SB), NOSPLIT, $0-56
	MOVQ         xh_base+0(FP), DI
	MOVQ         xh_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	VBROADCASTSS mu+48(FP), Y12
	VBROADCASTSS sc+52(FP), Y13
	MOVQ         CX, DX
	ANDQ         $7, DX
	SHRQ         $3, CX

celoop8:
	VMOVUPS (SI), Y0
	VSUBPS  Y12, Y0, Y0
	VMULPS  Y13, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     celoop8
	TESTQ   DX, DX
	JZ      cedone
	LEAQ    -32(SI)(DX*4), SI
	LEAQ    -32(DI)(DX*4), DI
	LEAQ    tailmask<>(SB), AX
	VMOVUPS (AX)(DX*4), Y11
	VMOVUPS (SI), Y0
	VSUBPS  Y12, Y0, Y0
	VMULPS  Y13, Y0, Y0
	VMASKMOVPS Y0, Y11, (DI)

cedone:
	VZEROUPPER
	RET
