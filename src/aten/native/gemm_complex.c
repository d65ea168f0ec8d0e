/* gemm_complex.c -- C = alpha * A @ B + beta * S for complex64 and complex128: the engine
 * under the complex mm, bmm, addmm, baddbmm, addmv, mv, dot, vdot and matmul.  Plays the
 * role of cgemm/zgemm and cgemv/zgemv in ATen/native/CPUBlas.cpp (PyTorch calls MKL or
 * OpenBLAS there; we carry our own, as gemm.c does for the real dtypes).
 *
 * Note [Complex GEMM]
 * ~~~~~~~~~~~~~~~~~~~
 * The three-level blocking of gemm.c (Note [GEMM blocking]), on packed copies that split
 * each complex number into its parts:
 *   for jc over NC columns, pc over KC of the k dim: B's kc x nc panel is packed in slivers
 *   of NR columns, each k step as NR real parts then NR imaginary parts;
 *   for ic over MC rows (one task each, in parallel): A's mc x kc block is packed in slivers
 *   of MR rows, each k step as MR real parts then MR imaginary parts (the parts negated
 *   for conj(A), vdot's);
 *   for each B sliver, each A sliver: the micro-kernel keeps MR x NR real and MR x NR
 *   imaginary sums in vector registers, broadcasts a row's two parts and does four
 *   fused multiply-adds per vector: re += ar br - ai bi, im += ar bi + ai br.
 * Packing reads A and B through any strides (transposed and mH views, a 0 stride of a
 * broadcast batch), so nothing is copied whole; it pads the last slivers with zeros, and the
 * update writes only the valid rows and columns: C = alpha * sums + beta * S on the first
 * k block (S not read when beta is 0), C += alpha * sums on the next ones.
 * The micro-kernels exist for AVX-512 (MR 8, NR one 16-float / 8-double vector, and a half
 * tile of one 8-float / 4-double vector for a last sliver of at most NR / 2 columns: a B of
 * 8 complex64 columns had been half padding) and AVX2 + FMA (MR 6, NR one 8-float /
 * 4-double vector), picked at run time by ptl_cpu_capability(), and on GCC's portable
 * vector types (MR 4, NR 4 floats / 2 doubles) elsewhere; the SIMD ones' fused
 * multiply-adds round once, so the last bits depend on the CPU, as they do in gemm.c and
 * in MKL.  KC is long (512 complex64, 256 complex128) so that C's update pass is rare (a
 * 512^3 complex64 product has one): the micro-kernel does 32 multiply-adds per two vector
 * loads of B, so its B sliver need not stay in L1; MC keeps an A block (512 KiB) in L2.
 * With KC 128 the four update passes over a 512 x 512 C (out of L2) held 512^3 to 0.6 of
 * PyTorch's speed; with 512, 0.8-1.0 (one thread, a loaded machine).
 * A B with contiguous rows is packed row by row (its reads in order, loops.h's clones
 * splitting the parts); 8 x 1024 @ 1024 x 1024 had spent most of its time packing B.  The
 * AVX-512 engines pack full slivers with shuffles (ZEngine's pack_a, split_b, pack_b): a
 * row of B's sliver is two loads split by two permutes; 8 rows of A (or 16 / 8 columns of a
 * B with contiguous columns, an mT or mH view) with contiguous k steps are transposed 8
 * (complex64) or 4 (complex128) steps at a time, a complex number moving as one 64- or
 * 128-bit unit, then split; an A with adjacent rows (an mT view) is one permute a step.
 * They copy the same numbers as the element loops (a conj(A) times -1 as there), so every
 * layout gives the same bits.  The element loops had been 20% of bmm 64 x 64^3 complex64 (A)
 * and 11% (B); one thread against PyTorch, mm 64^3 complex64 0.99 -> 1.08-1.09.  The
 * update of a C with contiguous rows is one vectorised loop per tile row (a short k, as in
 * 1024 x 16 @ 16 x 1024, is mostly updates).  Products of at most ZGEMM_TINY_MACS (32^3)
 * multiply-adds, the batches of small matrices, skip the packing (it cost more than their
 * arithmetic): per matrix, column chunks of at most 64 bytes (8 complex64 / 4 complex128)
 * sum two rows at a time in GCC vector types, A's elements broadcast and B's rows read in
 * place (a B with contiguous columns, an mT or mH view, is first copied to rows); their
 * loops are clones (loops.h) compiled with fp-contract=fast, so the AVX-512 clone fuses
 * and the others do not (the bits depend on the CPU, as the micro-kernels' do).  They
 * replaced an element-by-element loop for at most 64 multiply-adds: one thread against
 * PyTorch, bmm of 10000 x 2 x 2 0.64 -> 1.2-1.5, 2500 x 8 x 8 0.34-0.47 -> 1.9-4, 500 x 16
 * x 16 0.25-0.39 -> 1.04-1.07 (complex64; the blocked loops had done 8 x 8 and up).
 * A product with one column (mv, dot, vdot, matmul's vector cases) or one row skips the
 * packing: it is a row of dot products (gemv).  Over contiguous parts they run as products
 * of real arrays, x * y and x * y with y's parts swapped, in 16 lanes each (loops.h's
 * clones vectorise them; the lanes are summed in one fixed order, so every CPU gives the
 * same bits): the real part is the even lanes of the first less its odd lanes, the
 * imaginary part the sum of the second (signs flipped for a conjugated side).  When the
 * matrix's rows are adjacent instead (v @ M of a row-major M, A^T v of an mT view), its
 * contiguous columns are summed with v's real and imaginary parts as weights into two real
 * arrays (an axpy, 256 rows at a time) that combine into the complex results.
 * Threads: a batch of at least as many products as threads splits over the batch; one
 * product splits over its MC blocks (and over column groups when there are fewer blocks
 * than threads), each task packing its own A block.  Below ZGEMM_PARALLEL_MACS complex
 * multiply-adds everything runs on the calling thread. */
#include <stdlib.h>
#include <string.h>

#ifdef __x86_64__
#include <immintrin.h>
#endif

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../loops.h"
#include "gemm_complex.h"

#define ZGEMM_PARALLEL_MACS (1 << 16)
#define ZGEMM_TINY_MACS 32768  /* m * n * k: the per-matrix kernels without packing */
#define ZGEMM_MAX_MR 8
#define ZGEMM_MAX_NR 16

typedef void (*ZKernelFn)(int64_t kc, const void *ap, const void *bp, void *acc);
/* Packs one full sliver of mr rows of A (pack_a's layout) when its layout allows (rows or
 * columns contiguous): 1, or 0 when it does not (the caller's loop packs it) */
typedef int (*ZPackFn)(void *dst, const void *a, int64_t rs, int64_t cs, int64_t kc,
                       int conj);
/* One contiguous row of B (cols complex numbers) into its place in every sliver of B's
 * packed panel (pack_b's layout, kc steps): the full slivers, returning how many columns
 * it packed (a multiple of nr); the caller packs the rest */
typedef int64_t (*ZSplitFn)(void *dst, const void *src, int64_t kc, int64_t cols);

/* One engine per dtype and instruction set: the micro-kernel, its tile and the blocking. */
typedef struct ZEngine {
    int64_t mr, nr, kc, mc, nc;
    ZKernelFn kernel;   /* acc (mr rows of nr real parts, then nr imaginary parts) = A @ B */
    ZKernelFn half;     /* the same on the first nr / 2 columns only (a sliver of at most
                         * nr / 2 valid columns), or NULL */
    ZPackFn pack_a;     /* a full A sliver with shuffles, or NULL */
    ZSplitFn split_b;   /* a row of B's full slivers with shuffles, or NULL */
    ZPackFn pack_b;     /* a full B sliver (columns as pack_a's rows) with shuffles, or NULL */
} ZEngine;

/* ---- micro-kernels ---- */

/* acc = the kc-step product (kc >= 1) of an A sliver (MR rows) and a B sliver (VL columns),
 * over vectors V of VL reals; FMADD(a, b, c) = a b + c, FNMADD(a, b, c) = c - a b.  The
 * rows are written out one by one (ROWS applies a row macro to 0 .. MR-1), each row's sums
 * in two named vectors: arrays of vectors had gcc zero them in memory with rep stos and
 * store them through the stack, most of a short kc's time.  The first step sets the sums. */
#define ZROWS8(X, ...) ZROWS6(X, __VA_ARGS__) X(6, __VA_ARGS__) X(7, __VA_ARGS__)
#define ZROWS6(X, ...)                                                                         \
    X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__) X(4, __VA_ARGS__)  \
    X(5, __VA_ARGS__)
#define ZK_FIRST(I, V, MR, SET1, MULV, FMADD, FNMADD)                                          \
    V cr##I = FNMADD(SET1(ap[MR + I]), bi, MULV(SET1(ap[I]), br));                             \
    V ci##I = FMADD(SET1(ap[MR + I]), br, MULV(SET1(ap[I]), bi));
#define ZK_STEP(I, V, MR, SET1, MULV, FMADD, FNMADD)                                           \
    {                                                                                          \
        V ar = SET1(ap[I]), ai = SET1(ap[MR + I]);                                             \
        cr##I = FMADD(ar, br, cr##I);                                                          \
        ci##I = FMADD(ar, bi, ci##I);                                                          \
        cr##I = FNMADD(ai, bi, cr##I);                                                         \
        ci##I = FMADD(ai, br, ci##I);                                                          \
    }
#define ZK_STORE(I, NR, STOREV)                                                                \
    STOREV(acc + 2 * NR * I, cr##I);                                                           \
    STOREV(acc + 2 * NR * I + NR, ci##I);
/* NR: the packed sliver's width, VL or (a half tile, the first VL of 2 VL columns) 2 VL */
#define ZKERNEL(NAME, ATTR, R, VL, NR, MR, ROWS, V, LOADV, STOREV, SET1, MULV, FMADD, FNMADD) \
    ATTR static void NAME(int64_t kc, const void *apv, const void *bpv, void *accv)           \
    {                                                                                          \
        const R *ap = apv, *bp = bpv;                                                          \
        R *acc = accv;                                                                         \
        V br = LOADV(bp), bi = LOADV(bp + NR);                                                 \
        ROWS(ZK_FIRST, V, MR, SET1, MULV, FMADD, FNMADD)                                       \
        for (int64_t p = 1; p < kc; p++) {                                                     \
            ap += 2 * MR;                                                                      \
            bp += 2 * NR;                                                                      \
            br = LOADV(bp);                                                                    \
            bi = LOADV(bp + NR);                                                               \
            ROWS(ZK_STEP, V, MR, SET1, MULV, FMADD, FNMADD)                                    \
        }                                                                                      \
        ROWS(ZK_STORE, NR, STOREV)                                                             \
    }

/* ---- packing ---- */

/* Steps [p0, kc) of one sliver of mr rows of a (rs reals apart, steps cs apart) in pack_a's
 * layout, 2 mr reals a step: the first h rows' real parts, then their imaginary parts times
 * sign, rows h .. mr - 1 zero.  pack_a's and pack_b's loops and the last steps of the
 * AVX-512 packers (B's columns as its rows); always inlined, for the callers' constants and
 * loop clones to shape its loops. */
#define ZPACK_STEPS(SUF, R)                                                                    \
    static inline __attribute__((always_inline)) void                                          \
    zpack_steps_##SUF(R *dst, const R *a, int64_t rs, int64_t cs, int64_t p0, int64_t kc,      \
                      int64_t h, int64_t mr, R sign)                                           \
    {                                                                                          \
        for (int64_t p = p0; p < kc; p++) {                                                    \
            R *d = dst + 2 * mr * p;                                                           \
            const R *src = a + p * cs;                                                         \
            int64_t i = 0;                                                                     \
            for (; i < h; i++) {                                                               \
                d[i] = src[i * rs];                                                            \
                d[mr + i] = sign * src[i * rs + 1];                                            \
            }                                                                                  \
            for (; i < mr; i++) {                                                              \
                d[i] = 0;                                                                      \
                d[mr + i] = 0;                                                                 \
            }                                                                                  \
        }                                                                                      \
    }
ZPACK_STEPS(c8, float)
ZPACK_STEPS(c16, double)
#undef ZPACK_STEPS

#ifdef __x86_64__
#define AVX512 __attribute__((target("avx512f,avx2,fma")))
#define AVX2 __attribute__((target("avx2,fma")))
/* The vector type and operations of one x86 width W (256, 512) on floats (ps) or doubles
 * (pd, D d): ZKERNEL's last seven arguments, through ZKERNEL_X86 (which expands them
 * first); the AVX-512 half tiles and the AVX2 tiles share the 256-bit ones. */
#define ZOPS_X86(W, S, D)                                                                      \
    __m##W##D, _mm##W##_loadu_##S, _mm##W##_storeu_##S, _mm##W##_set1_##S, _mm##W##_mul_##S,    \
        _mm##W##_fmadd_##S, _mm##W##_fnmadd_##S
#define ZKERNEL_X86(...) ZKERNEL(__VA_ARGS__)
ZKERNEL_X86(zkernel_c8_avx512, AVX512, float, 16, 16, 8, ZROWS8, ZOPS_X86(512, ps, ))
ZKERNEL_X86(zkernel_c16_avx512, AVX512, double, 8, 8, 8, ZROWS8, ZOPS_X86(512, pd, d))
ZKERNEL_X86(zkernel_c8_avx512_half, AVX512, float, 8, 16, 8, ZROWS8, ZOPS_X86(256, ps, ))
ZKERNEL_X86(zkernel_c16_avx512_half, AVX512, double, 4, 8, 8, ZROWS8, ZOPS_X86(256, pd, d))
ZKERNEL_X86(zkernel_c8_avx2, AVX2, float, 8, 8, 6, ZROWS6, ZOPS_X86(256, ps, ))
ZKERNEL_X86(zkernel_c16_avx2, AVX2, double, 4, 4, 6, ZROWS6, ZOPS_X86(256, pd, d))
#undef ZKERNEL_X86
#undef ZOPS_X86

/* out[q] = step q of 8 rows (rs floats apart) of 8 contiguous complex64 steps from a: the
 * rows' numbers in order, their parts interleaved */
AVX512 static inline void
ztranspose8_c8(const float *a, int64_t rs, __m512 out[8])
{
    const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    __m512d r[8], t[8], u[8];
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_loadu_pd((const double *)(a + i * rs));
    }
    for (int i = 0; i < 8; i += 2) {   /* t[i], t[i + 1]: steps 0 2 4 6, 1 3 5 7 of rows i, i + 1 */
        t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
    }
    for (int h = 0; h < 8; h += 4) {   /* u[h + q]: rows h .. h + 3 of steps q, q + 4 */
        u[h + 0] = _mm512_permutex2var_pd(t[h], lo, t[h + 2]);
        u[h + 2] = _mm512_permutex2var_pd(t[h], hi, t[h + 2]);
        u[h + 1] = _mm512_permutex2var_pd(t[h + 1], lo, t[h + 3]);
        u[h + 3] = _mm512_permutex2var_pd(t[h + 1], hi, t[h + 3]);
    }
    for (int q = 0; q < 4; q++) {
        out[q] = _mm512_castpd_ps(_mm512_shuffle_f64x2(u[q], u[4 + q], 0x44));
        out[q + 4] = _mm512_castpd_ps(_mm512_shuffle_f64x2(u[q], u[4 + q], 0xEE));
    }
}

/* A's full slivers of 8 rows for the AVX-512 engines (Note [Complex GEMM]): each k step's 8
 * complex numbers become 8 real parts then 8 imaginary parts (times -1 for conj, as the
 * loop's sign does: the same bits).  Rows adjacent (an mT view): one step's 8 numbers are
 * one or two loads, split by a permute.  Rows contiguous (a row-major A): 8 steps of the 8
 * rows (complex64) or 4 steps (complex128) are loaded row by row and transposed, a complex
 * number moving as one 64- or 128-bit unit; the k steps past the last whole group go
 * element by element. */
AVX512 static int
zpack_a_c8_avx512(void *dstv, const void *av, int64_t rs, int64_t cs, int64_t kc, int conj)
{
    float *dst = dstv;
    const float *a = av;
    const __m512i split = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13,
                                            15);
    const __m512 sign = _mm512_setr_ps(1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m512 one = _mm512_set1_ps(1);
    const __m512 sg = conj ? sign : one;
    int64_t p = 0;
    if (rs == 2) {
        for (; p < kc; p++) {
            __m512 v = _mm512_permutexvar_ps(split, _mm512_loadu_ps(a + p * cs));
            _mm512_storeu_ps(dst + 16 * p, _mm512_mul_ps(v, sg));
        }
        return 1;
    }
    if (cs != 2) {
        return 0;
    }
    for (; p + 8 <= kc; p += 8) {
        __m512 v[8];
        ztranspose8_c8(a + 2 * p, rs, v);
        for (int q = 0; q < 8; q++) {
            _mm512_storeu_ps(dst + 16 * (p + q),
                             _mm512_mul_ps(_mm512_permutexvar_ps(split, v[q]), sg));
        }
    }
    zpack_steps_c8(dst, a, rs, 2, p, kc, 8, 8, conj ? -1.0f : 1.0f);
    return 1;
}

/* B's full sliver of 16 complex64 columns (rs floats apart) when its k steps are contiguous
 * (cs 2: an mT or mH view's B), pack_b's layout (16 real parts, then 16 imaginary parts a
 * step): two 8 x 8 transposes merged by two permutes; 0 for another layout.  (complex128's
 * sliver of 8 columns has pack_a's layout: zpack_a_c16_avx512 packs it.) */
AVX512 static int
zpack_b_c8_avx512(void *dstv, const void *bv, int64_t rs, int64_t cs, int64_t kc, int conj)
{
    float *dst = dstv;
    const float *b = bv;
    const __m512i re = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                         30);
    const __m512i im = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29,
                                         31);
    int64_t p = 0;
    if (cs != 2 || conj) {
        return 0;
    }
    for (; p + 8 <= kc; p += 8) {
        __m512 v[8], w[8];
        ztranspose8_c8(b + 2 * p, rs, v);
        ztranspose8_c8(b + 8 * rs + 2 * p, rs, w);
        for (int q = 0; q < 8; q++) {
            _mm512_storeu_ps(dst + 32 * (p + q), _mm512_permutex2var_ps(v[q], re, w[q]));
            _mm512_storeu_ps(dst + 32 * (p + q) + 16, _mm512_permutex2var_ps(v[q], im, w[q]));
        }
    }
    zpack_steps_c8(dst, b, rs, 2, p, kc, 16, 16, 1.0f);
    return 1;
}

AVX512 static int
zpack_a_c16_avx512(void *dstv, const void *av, int64_t rs, int64_t cs, int64_t kc, int conj)
{
    double *dst = dstv;
    const double *a = av;
    const __m512i re = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
    const __m512i im = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    const __m512d sg = _mm512_set1_pd(conj ? -1.0 : 1.0);
    int64_t p = 0;
    if (rs == 2) {
        for (; p < kc; p++) {
            __m512d l = _mm512_loadu_pd(a + p * cs), h = _mm512_loadu_pd(a + p * cs + 8);
            _mm512_storeu_pd(dst + 16 * p, _mm512_permutex2var_pd(l, re, h));
            _mm512_storeu_pd(dst + 16 * p + 8, _mm512_mul_pd(_mm512_permutex2var_pd(l, im, h),
                                                             sg));
        }
        return 1;
    }
    if (cs != 2) {
        return 0;
    }
    for (; p + 4 <= kc; p += 4) {
        __m512d st[2][4];   /* st[g][q]: rows 4 g .. 4 g + 3 of step p + q */
        for (int g = 0; g < 2; g++) {
            const double *b = a + 4 * g * rs + 2 * p;
            __m512d r0 = _mm512_loadu_pd(b), r1 = _mm512_loadu_pd(b + rs);
            __m512d r2 = _mm512_loadu_pd(b + 2 * rs), r3 = _mm512_loadu_pd(b + 3 * rs);
            __m512d s0 = _mm512_shuffle_f64x2(r0, r1, 0x44);
            __m512d s1 = _mm512_shuffle_f64x2(r0, r1, 0xEE);
            __m512d s2 = _mm512_shuffle_f64x2(r2, r3, 0x44);
            __m512d s3 = _mm512_shuffle_f64x2(r2, r3, 0xEE);
            st[g][0] = _mm512_shuffle_f64x2(s0, s2, 0x88);
            st[g][1] = _mm512_shuffle_f64x2(s0, s2, 0xDD);
            st[g][2] = _mm512_shuffle_f64x2(s1, s3, 0x88);
            st[g][3] = _mm512_shuffle_f64x2(s1, s3, 0xDD);
        }
        for (int q = 0; q < 4; q++) {
            double *d = dst + 16 * (p + q);
            _mm512_storeu_pd(d, _mm512_permutex2var_pd(st[0][q], re, st[1][q]));
            _mm512_storeu_pd(d + 8, _mm512_mul_pd(_mm512_permutex2var_pd(st[0][q], im,
                                                                         st[1][q]), sg));
        }
    }
    zpack_steps_c16(dst, a, rs, 2, p, kc, 8, 8, conj ? -1.0 : 1.0);
    return 1;
}

/* A row of B into the full slivers of 16 (complex64) or 8 (complex128) columns: each
 * sliver's numbers are two loads, split into real and imaginary parts by two permutes */
AVX512 static int64_t
zsplit_b_c8_avx512(void *dstv, const void *srcv, int64_t kc, int64_t cols)
{
    float *dst = dstv;
    const float *src = srcv;
    const __m512i re = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                         30);
    const __m512i im = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29,
                                         31);
    int64_t j0 = 0;
    for (; j0 + 16 <= cols; j0 += 16, dst += 32 * kc) {
        __m512 l = _mm512_loadu_ps(src + 2 * j0), h = _mm512_loadu_ps(src + 2 * j0 + 16);
        _mm512_storeu_ps(dst, _mm512_permutex2var_ps(l, re, h));
        _mm512_storeu_ps(dst + 16, _mm512_permutex2var_ps(l, im, h));
    }
    return j0;
}

AVX512 static int64_t
zsplit_b_c16_avx512(void *dstv, const void *srcv, int64_t kc, int64_t cols)
{
    double *dst = dstv;
    const double *src = srcv;
    const __m512i re = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
    const __m512i im = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    int64_t j0 = 0;
    for (; j0 + 8 <= cols; j0 += 8, dst += 16 * kc) {
        __m512d l = _mm512_loadu_pd(src + 2 * j0), h = _mm512_loadu_pd(src + 2 * j0 + 8);
        _mm512_storeu_pd(dst, _mm512_permutex2var_pd(l, re, h));
        _mm512_storeu_pd(dst + 8, _mm512_permutex2var_pd(l, im, h));
    }
    return j0;
}

/* The AVX2 engines' packers (MR 6, NR 8 complex64 / 4 complex128), copying the numbers the
 * element loops copy (a conj(A)'s imaginary parts times -1, its real parts times 1, as the
 * AVX-512 packers do: the same bits).  A's full slivers of 6 rows: rows adjacent (an mT
 * view), a step's 6 numbers are three loads split by permutes; rows contiguous (a row-major
 * A), 4 (complex64) or 2 (complex128) steps of each row are loaded and transposed, a
 * complex number moving as one 64- or 128-bit unit, the steps past the last whole group
 * element by element.  A row of B into its full slivers: two loads split by shuffles.  (The
 * element loops had been a quarter of mm 64^3 complex64's GEMM time on a Zen 3, at 0.81-0.85
 * of PyTorch's speed.) */
AVX2 static inline void
zstore6_c8(float *d, __m256 x, __m128 y, __m256 sg4, __m128 sg2)
{
    /* x: rows 0-3 of a step (r0 i0 .. r3 i3), y: rows 4-5 (r4 i4 r5 i5) */
    x = _mm256_mul_ps(_mm256_permutevar8x32_ps(x, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7)),
                      sg4);
    y = _mm_mul_ps(_mm_shuffle_ps(y, y, _MM_SHUFFLE(3, 1, 2, 0)), sg2);
    _mm_storeu_ps(d, _mm256_castps256_ps128(x));
    _mm_storel_pi((__m64 *)(d + 4), y);
    _mm_storeu_ps(d + 6, _mm256_extractf128_ps(x, 1));
    _mm_storeh_pi((__m64 *)(d + 10), y);
}

AVX2 static int
zpack_a_c8_avx2(void *dstv, const void *av, int64_t rs, int64_t cs, int64_t kc, int conj)
{
    float *dst = dstv;
    const float *a = av;
    const __m256 sg4 = conj ? _mm256_setr_ps(1, 1, 1, 1, -1, -1, -1, -1) : _mm256_set1_ps(1);
    const __m128 sg2 = conj ? _mm_setr_ps(1, 1, -1, -1) : _mm_set1_ps(1);
    int64_t p = 0;
    if (rs == 2) {
        for (; p < kc; p++) {
            zstore6_c8(dst + 12 * p, _mm256_loadu_ps(a + p * cs), _mm_loadu_ps(a + p * cs + 8),
                       sg4, sg2);
        }
        return 1;
    }
    if (cs != 2) {
        return 0;
    }
    for (; p + 4 <= kc; p += 4) {
        /* t[2 g], t[2 g + 1]: rows 2 g, 2 g + 1 of steps 0 and 2, of steps 1 and 3 */
        __m256d t[6];
        for (int i = 0; i < 6; i += 2) {
            __m256d r0 = _mm256_loadu_pd((const double *)(a + i * rs + 2 * p));
            __m256d r1 = _mm256_loadu_pd((const double *)(a + (i + 1) * rs + 2 * p));
            t[i] = _mm256_unpacklo_pd(r0, r1);
            t[i + 1] = _mm256_unpackhi_pd(r0, r1);
        }
        for (int q = 0; q < 2; q++) {
            zstore6_c8(dst + 12 * (p + q),
                       _mm256_castpd_ps(_mm256_permute2f128_pd(t[q], t[2 + q], 0x20)),
                       _mm_castpd_ps(_mm256_castpd256_pd128(t[4 + q])), sg4, sg2);
            zstore6_c8(dst + 12 * (p + 2 + q),
                       _mm256_castpd_ps(_mm256_permute2f128_pd(t[q], t[2 + q], 0x31)),
                       _mm_castpd_ps(_mm256_extractf128_pd(t[4 + q], 1)), sg4, sg2);
        }
    }
    zpack_steps_c8(dst, a, rs, 2, p, kc, 6, 6, conj ? -1.0f : 1.0f);
    return 1;
}

AVX2 static inline void
zstore6_c16(double *d, __m256d x, __m256d y, __m256d z, __m256d sg)
{
    /* x, y, z: rows 0-1, 2-3, 4-5 of a step (r i r i) */
    __m128d zl = _mm256_castpd256_pd128(z), zh = _mm256_extractf128_pd(z, 1);
    _mm256_storeu_pd(d, _mm256_permute4x64_pd(_mm256_unpacklo_pd(x, y), 0xD8));
    _mm_storeu_pd(d + 4, _mm_unpacklo_pd(zl, zh));
    _mm256_storeu_pd(d + 6,
                     _mm256_mul_pd(_mm256_permute4x64_pd(_mm256_unpackhi_pd(x, y), 0xD8), sg));
    _mm_storeu_pd(d + 10, _mm_mul_pd(_mm_unpackhi_pd(zl, zh), _mm256_castpd256_pd128(sg)));
}

AVX2 static int
zpack_a_c16_avx2(void *dstv, const void *av, int64_t rs, int64_t cs, int64_t kc, int conj)
{
    double *dst = dstv;
    const double *a = av;
    const __m256d sg = _mm256_set1_pd(conj ? -1.0 : 1.0);
    int64_t p = 0;
    if (rs == 2) {
        for (; p < kc; p++) {
            const double *s = a + p * cs;
            zstore6_c16(dst + 12 * p, _mm256_loadu_pd(s), _mm256_loadu_pd(s + 4),
                        _mm256_loadu_pd(s + 8), sg);
        }
        return 1;
    }
    if (cs != 2) {
        return 0;
    }
    for (; p + 2 <= kc; p += 2) {
        __m256d r[6];
        for (int i = 0; i < 6; i++) {
            r[i] = _mm256_loadu_pd(a + i * rs + 2 * p);
        }
        zstore6_c16(dst + 12 * p, _mm256_permute2f128_pd(r[0], r[1], 0x20),
                    _mm256_permute2f128_pd(r[2], r[3], 0x20),
                    _mm256_permute2f128_pd(r[4], r[5], 0x20), sg);
        zstore6_c16(dst + 12 * (p + 1), _mm256_permute2f128_pd(r[0], r[1], 0x31),
                    _mm256_permute2f128_pd(r[2], r[3], 0x31),
                    _mm256_permute2f128_pd(r[4], r[5], 0x31), sg);
    }
    zpack_steps_c16(dst, a, rs, 2, p, kc, 6, 6, conj ? -1.0 : 1.0);
    return 1;
}

AVX2 static int64_t
zsplit_b_c8_avx2(void *dstv, const void *srcv, int64_t kc, int64_t cols)
{
    float *dst = dstv;
    const float *src = srcv;
    int64_t j0 = 0;
    for (; j0 + 8 <= cols; j0 += 8, dst += 16 * kc) {
        __m256 l = _mm256_loadu_ps(src + 2 * j0), h = _mm256_loadu_ps(src + 2 * j0 + 8);
        __m256 re = _mm256_shuffle_ps(l, h, _MM_SHUFFLE(2, 0, 2, 0));
        __m256 im = _mm256_shuffle_ps(l, h, _MM_SHUFFLE(3, 1, 3, 1));
        _mm256_storeu_pd((double *)dst, _mm256_permute4x64_pd(_mm256_castps_pd(re), 0xD8));
        _mm256_storeu_pd((double *)(dst + 8),
                         _mm256_permute4x64_pd(_mm256_castps_pd(im), 0xD8));
    }
    return j0;
}

AVX2 static int64_t
zsplit_b_c16_avx2(void *dstv, const void *srcv, int64_t kc, int64_t cols)
{
    double *dst = dstv;
    const double *src = srcv;
    int64_t j0 = 0;
    for (; j0 + 4 <= cols; j0 += 4, dst += 8 * kc) {
        __m256d l = _mm256_loadu_pd(src + 2 * j0), h = _mm256_loadu_pd(src + 2 * j0 + 4);
        _mm256_storeu_pd(dst, _mm256_permute4x64_pd(_mm256_unpacklo_pd(l, h), 0xD8));
        _mm256_storeu_pd(dst + 4, _mm256_permute4x64_pd(_mm256_unpackhi_pd(l, h), 0xD8));
    }
    return j0;
}
#undef AVX512
#undef AVX2
#endif
/* The portable kernels: MR 4 on GCC's 16-byte vector types (one SSE2 or NEON register: NR
 * 4 floats, 2 doubles), a multiply and an add where the SIMD ones fuse them. */
#define ZROWS4(X, ...) X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__)
#define ZVEC_OPS(SUF, R, V)                                                                    \
    typedef R V __attribute__((vector_size(16)));                                              \
    static inline V zload_##SUF(const R *p)                                                    \
    {                                                                                          \
        V v;                                                                                   \
        memcpy(&v, p, sizeof(v));                                                              \
        return v;                                                                              \
    }                                                                                          \
    static inline void zstore_##SUF(R *p, V v)                                                 \
    {                                                                                          \
        memcpy(p, &v, sizeof(v));                                                              \
    }                                                                                          \
    static inline V zset1_##SUF(R x)                                                           \
    {                                                                                          \
        V v = {0};                                                                             \
        return v + x;                                                                          \
    }                                                                                          \
    static inline V zmul_##SUF(V a, V b)                                                       \
    {                                                                                          \
        return a * b;                                                                          \
    }                                                                                          \
    static inline V zmadd_##SUF(V a, V b, V c)                                                 \
    {                                                                                          \
        return a * b + c;                                                                      \
    }                                                                                          \
    static inline V znmadd_##SUF(V a, V b, V c)                                                \
    {                                                                                          \
        return c - a * b;                                                                      \
    }
ZVEC_OPS(c8, float, ZVec4f)
ZVEC_OPS(c16, double, ZVec2d)
ZKERNEL(zkernel_c8_c, , float, 4, 4, 4, ZROWS4, ZVec4f, zload_c8, zstore_c8, zset1_c8,
        zmul_c8, zmadd_c8, znmadd_c8)
ZKERNEL(zkernel_c16_c, , double, 2, 2, 4, ZROWS4, ZVec2d, zload_c16, zstore_c16, zset1_c16,
        zmul_c16, zmadd_c16, znmadd_c16)
#undef ZVEC_OPS
#undef ZROWS4
#undef ZKERNEL
#undef ZK_STORE
#undef ZK_STEP
#undef ZK_FIRST
#undef ZROWS6
#undef ZROWS8

static const ZEngine *
zgemm_engine(PtlDtype dt)
{
    static const ZEngine generic[2] = {{4, 4, 512, 128, 512, zkernel_c8_c, NULL, NULL, NULL, NULL},
                                       {4, 2, 256, 128, 512, zkernel_c16_c, NULL, NULL, NULL,
                                        NULL}};
#ifdef __x86_64__
    static const ZEngine avx512[2] = {
        {8, 16, 512, 128, 1024, zkernel_c8_avx512, zkernel_c8_avx512_half, zpack_a_c8_avx512,
         zsplit_b_c8_avx512, zpack_b_c8_avx512},
        {8, 8, 256, 128, 512, zkernel_c16_avx512, zkernel_c16_avx512_half, zpack_a_c16_avx512,
         zsplit_b_c16_avx512, zpack_a_c16_avx512}};
    static const ZEngine avx2[2] = {
        {6, 8, 512, 120, 1024, zkernel_c8_avx2, NULL, zpack_a_c8_avx2, zsplit_b_c8_avx2, NULL},
        {6, 4, 256, 120, 512, zkernel_c16_avx2, NULL, zpack_a_c16_avx2, zsplit_b_c16_avx2,
         NULL}};
    PtlCpuCapability cap = ptl_cpu_capability();
    if (cap >= PTL_CPU_AVX512) {
        return &avx512[dt == PTL_DTYPE_COMPLEX128];
    }
    if (cap >= PTL_CPU_AVX2) {
        return &avx2[dt == PTL_DTYPE_COMPLEX128];
    }
#endif
    return &generic[dt == PTL_DTYPE_COMPLEX128];
}

/* ---- the problem ---- */

/* Strides are in reals (twice the tensor's element strides), pointers at the first
 * matrix of the batch. */
typedef struct ZProblem {
    const ZEngine *e;
    int is64;                       /* complex128 */
    int conj_a;
    int nbd;                        /* batch dims */
    int64_t bsizes[PTL_MAX_DIMS], a_bs[PTL_MAX_DIMS], b_bs[PTL_MAX_DIMS];
    int64_t c_bs[PTL_MAX_DIMS], s_bs[PTL_MAX_DIMS];
    int64_t batch, m, n, k;
    const char *a, *b, *s;          /* s: NULL when beta is 0 */
    char *c;
    int64_t ars, acs, brs, bcs, crs, ccs, srs, scs;
    double alpha[2], beta[2];
    int parallel;                   /* the product may split over threads */
} ZProblem;

/* One matrix of the batch: pointers (bytes) and the problem's strides. */
typedef struct ZMat {
    const char *a, *b, *s;
    char *c;
} ZMat;

static ZMat
zgemm_mat(const ZProblem *pr, int64_t t)
{
    size_t item = pr->is64 ? sizeof(double) : sizeof(float);
    int64_t oa = 0, ob = 0, oc = 0, os = 0;
    for (int d = pr->nbd - 1; d >= 0; d--) {
        int64_t i = t % pr->bsizes[d];
        t /= pr->bsizes[d];
        oa += i * pr->a_bs[d];
        ob += i * pr->b_bs[d];
        oc += i * pr->c_bs[d];
        os += i * pr->s_bs[d];
    }
    ZMat x = {pr->a + (size_t)oa * item, pr->b + (size_t)ob * item,
              pr->s ? pr->s + (size_t)os * item : NULL, pr->c + (size_t)oc * item};
    return x;
}

/* The parts of the real type R: packing, update, scaling and gemv, stamped for float
 * (complex64, suffix c8) and double (complex128, suffix c16). */
#define ZGEMM_TYPED(SUF, R)                                                                    \
    /* A's rows x kc block into slivers of mr rows: per k step mr real parts, then mr       \
     * imaginary parts (negated for conj), rows past `rows` zero */                            \
    static void pack_a_##SUF(R *dst, const R *a, int64_t rs, int64_t cs, int64_t rows,       \
                             int64_t kc, int64_t mr, int conj, ZPackFn fast)                   \
    {                                                                                          \
        const R sign = conj ? (R)-1 : (R)1;                                                    \
        for (int64_t i0 = 0; i0 < rows; i0 += mr) {                                            \
            int64_t h = rows - i0 < mr ? rows - i0 : mr;                                       \
            if (h < mr || fast == NULL || !fast(dst, a + i0 * rs, rs, cs, kc, conj)) {         \
                zpack_steps_##SUF(dst, a + i0 * rs, rs, cs, 0, kc, h, mr, sign);               \
            }                                                                                  \
            dst += 2 * mr * kc;                                                                \
        }                                                                                      \
    }                                                                                          \
    /* B's kc x cols panel into slivers of nr columns, per k step nr real parts then nr     \
     * imaginary parts, columns past `cols` zero */                                            \
    static PTL_LOOP_CLONES_WIDE void split_row_##SUF(R *dst, const R *src, int64_t kc,        \
                                                     int64_t cols, int64_t nr)                 \
    {                                                                                          \
        /* one contiguous row of B into its place in every sliver (kc rows of 2 nr apart): \
         * a step of each sliver, its columns as zpack_steps' rows */                          \
        for (int64_t j0 = 0; j0 < cols; j0 += nr, dst += 2 * nr * kc) {                        \
            int64_t w = cols - j0 < nr ? cols - j0 : nr;                                       \
            zpack_steps_##SUF(dst, src + 2 * j0, 2, 0, 0, 1, w, nr, (R)1);                     \
        }                                                                                      \
    }                                                                                          \
    static void pack_b_##SUF(R *dst, const R *b, int64_t rs, int64_t cs, int64_t kc,          \
                             int64_t cols, int64_t nr, ZSplitFn fast, ZPackFn sliver)          \
    {                                                                                          \
        if (cs == 2) {   /* contiguous rows: read row by row, in order */                     \
            for (int64_t p = 0; p < kc; p++) {                                                 \
                int64_t j = fast != NULL ? fast(dst + 2 * nr * p, b + p * rs, kc, cols) : 0;  \
                if (j < cols) {                                                                \
                    split_row_##SUF(dst + 2 * (nr * p + kc * j), b + p * rs + 2 * j, kc,       \
                                    cols - j, nr);                                             \
                }                                                                              \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        /* B's columns are pack_a's rows */                                                   \
        pack_a_##SUF(dst, b, cs, rs, cols, kc, nr, 0, sliver);                                 \
    }                                                                                          \
    /* C (h x w of the tile) = alpha * acc + beta * S; S is not read when beta is 0, and an    \
     * alpha (beta) of 1, one (one_s), takes acc (S) as it is: 1 times an infinite part as a   \
     * complex product is nan (1 * inf - 0 * im), where torch's dot gives -inf + inf i, and    \
     * the blocked engine's C += sums of its later k blocks had made nan of an infinite C */   \
    /* the same on rows of contiguous complex numbers (C's, and S's when read), in three     \
     * loops gcc vectorises (loops.h's clones; the same bits as the generic one): S not      \
     * read, S = C itself (in place), S elsewhere (not overlapping C, as gemm_complex.h     \
     * says) */                                                                                \
    static PTL_LOOP_CLONES_WIDE void update_rows_##SUF(const R *restrict acc, int64_t nr,     \
                                                       int64_t h, int64_t w, R *c,             \
                                                       int64_t crs, const R *s, int64_t srs,   \
                                                       R ar, R ai, R br, R bi, int read_s,     \
                                                       int one, int one_s)                     \
    {                                                                                          \
        for (int64_t i = 0; i < h; i++) {                                                      \
            const R *restrict re = acc + 2 * nr * i, *restrict im = re + nr;                   \
            R *ci = c + i * crs;                                                               \
            if (!read_s) {                                                                     \
                R *restrict co = ci;                                                           \
                for (int64_t j = 0; j < w; j++) {                                              \
                    co[2 * j] = one ? re[j] : ar * re[j] - ai * im[j];                         \
                    co[2 * j + 1] = one ? im[j] : ar * im[j] + ai * re[j];                     \
                }                                                                              \
            }                                                                                  \
            else if (s == c && srs == crs) {                                                   \
                for (int64_t j = 0; j < w; j++) {                                              \
                    R sr = ci[2 * j], sm = ci[2 * j + 1];                                      \
                    R xr = one ? re[j] : ar * re[j] - ai * im[j];                              \
                    R xi = one ? im[j] : ar * im[j] + ai * re[j];                              \
                    ci[2 * j] = xr + (one_s ? sr : br * sr - bi * sm);                         \
                    ci[2 * j + 1] = xi + (one_s ? sm : br * sm + bi * sr);                     \
                }                                                                              \
            }                                                                                  \
            else {                                                                             \
                R *restrict co = ci;                                                           \
                const R *restrict si = s + i * srs;                                            \
                for (int64_t j = 0; j < w; j++) {                                              \
                    R xr = one ? re[j] : ar * re[j] - ai * im[j];                              \
                    R xi = one ? im[j] : ar * im[j] + ai * re[j];                              \
                    R sr = si[2 * j], sm = si[2 * j + 1];                                      \
                    co[2 * j] = xr + (one_s ? sr : br * sr - bi * sm);                         \
                    co[2 * j + 1] = xi + (one_s ? sm : br * sm + bi * sr);                     \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void update_##SUF(const R *acc, int64_t nr, int64_t h, int64_t w, R *c,            \
                             int64_t crs, int64_t ccs, const R *s, int64_t srs, int64_t scs,   \
                             const double *alpha, const double *beta)                          \
    {                                                                                          \
        const R ar = (R)alpha[0], ai = (R)alpha[1], br = (R)beta[0], bi = (R)beta[1];         \
        int read_s = s != NULL && (beta[0] != 0 || beta[1] != 0);                              \
        int one = alpha[0] == 1 && alpha[1] == 0, one_s = beta[0] == 1 && beta[1] == 0;        \
        if (ccs == 2 && (!read_s || scs == 2) && w > 1) {                                      \
            update_rows_##SUF(acc, nr, h, w, c, crs, s, srs, ar, ai, br, bi, read_s, one,      \
                              one_s);                                                          \
            return;                                                                            \
        }                                                                                      \
        for (int64_t i = 0; i < h; i++) {                                                      \
            const R *re = acc + 2 * nr * i, *im = re + nr;                                     \
            R *ci = c + i * crs;                                                               \
            const R *si = read_s ? s + i * srs : NULL;                                         \
            for (int64_t j = 0; j < w; j++) {                                                  \
                R xr = one ? re[j] : ar * re[j] - ai * im[j];                                  \
                R xi = one ? im[j] : ar * im[j] + ai * re[j];                                  \
                if (read_s) {                                                                  \
                    R sr = si[j * scs], sm = si[j * scs + 1];                                  \
                    xr += one_s ? sr : br * sr - bi * sm;                                      \
                    xi += one_s ? sm : br * sm + bi * sr;                                      \
                }                                                                              \
                ci[j * ccs] = xr;                                                              \
                ci[j * ccs + 1] = xi;                                                          \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    /* C = beta * S over m x n (an empty k), S not read when beta is 0 */                     \
    static void scale_##SUF(const ZProblem *pr, const ZMat *x)                                \
    {                                                                                          \
        R *c = (R *)x->c;                                                                      \
        const R *s = (const R *)x->s;                                                          \
        const R br = (R)pr->beta[0], bi = (R)pr->beta[1];                                     \
        int read_s = s != NULL && (br != 0 || bi != 0);                                        \
        for (int64_t i = 0; i < pr->m; i++) {                                                  \
            for (int64_t j = 0; j < pr->n; j++) {                                              \
                R xr = 0, xi = 0;                                                              \
                if (read_s) {                                                                  \
                    R sr = s[i * pr->srs + j * pr->scs], sm = s[i * pr->srs + j * pr->scs + 1]; \
                    xr = br * sr - bi * sm;                                                    \
                    xi = br * sm + bi * sr;                                                    \
                }                                                                              \
                c[i * pr->crs + j * pr->ccs] = xr;                                             \
                c[i * pr->crs + j * pr->ccs + 1] = xi;                                         \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    /* {even, odd} lane sums of x * y and of x * swap(y) over k contiguous complex numbers   \
     * (Note [Complex GEMM]) */                                                                \
    static PTL_LOOP_CLONES_WIDE void lanes_##SUF(const R *x, const R *y, int64_t k, R *sums)  \
    {                                                                                          \
        R a[16] = {0}, b[16] = {0};                                                            \
        int64_t n = 2 * k, i = 0;                                                              \
        for (; i + 16 <= n; i += 16) {                                                         \
            for (int l = 0; l < 16; l++) {                                                     \
                a[l] += x[i + l] * y[i + l];                                                   \
                b[l] += x[i + l] * y[i + (l ^ 1)];                                             \
            }                                                                                  \
        }                                                                                      \
        for (int l = 0; i + l < n; l++) {                                                      \
            a[l] += x[i + l] * y[i + l];                                                       \
            b[l] += x[i + l] * y[i + (l ^ 1)];                                                 \
        }                                                                                      \
        sums[0] = sums[1] = sums[2] = sums[3] = 0;                                             \
        for (int l = 0; l < 16; l += 2) {                                                      \
            sums[0] += a[l];                                                                   \
            sums[1] += a[l + 1];                                                               \
            sums[2] += b[l];                                                                   \
            sums[3] += b[l + 1];                                                               \
        }                                                                                      \
    }                                                                                          \
    /* acc (n <= 256 complex) = sum_p op(v[p]) op(M[:n, p]) over M's adjacent rows (column  \
     * p of M, at mat + p * mks, is contiguous): the reals of the columns summed with the    \
     * weights vr and xi (v[p]'s parts after conj) in two arrays, element by element, then   \
     * re = a_re - b_im, im = a_im + b_re (with M's imaginary parts' sign when conj) */        \
    static PTL_LOOP_CLONES_WIDE void axpy_##SUF(const R *restrict mat, int64_t mks,            \
                                                int conj_m, const R *restrict v, int64_t vs,   \
                                                int conj_v, int64_t k, int64_t n,              \
                                                R *restrict acc)                               \
    {                                                                                          \
        const R sm = conj_m ? (R)-1 : (R)1;                                                    \
        R a[2 * 256], b[2 * 256];                                                              \
        memset(a, 0, (size_t)(2 * n) * sizeof(R));                                            \
        memset(b, 0, (size_t)(2 * n) * sizeof(R));                                            \
        for (int64_t p = 0; p < k; p++) {                                                      \
            const R vr = v[p * vs], xi = conj_v ? -v[p * vs + 1] : v[p * vs + 1];              \
            const R *m = mat + p * mks;                                                        \
            for (int64_t i = 0; i < 2 * n; i++) {                                              \
                a[i] += vr * m[i];                                                             \
                b[i] += xi * m[i];                                                             \
            }                                                                                  \
        }                                                                                      \
        for (int64_t r = 0; r < n; r++) {                                                      \
            acc[2 * r] = a[2 * r] - sm * b[2 * r + 1];                                         \
            acc[2 * r + 1] = sm * a[2 * r + 1] + b[2 * r];                                     \
        }                                                                                      \
    }                                                                                          \
    /* out[r] = alpha * sum_p op(M[r, p]) op(v[p]) + beta * S[r] for r in [r0, r1): the       \
     * products with one column or one row (M's rows mrs apart, its k dim mks) */              \
    static void gemv_##SUF(const R *mat, int64_t mrs, int64_t mks, int conj_m, const R *v,   \
                           int64_t vs, int conj_v, int64_t k, R *out, int64_t os,              \
                           const R *s, int64_t ss, const double *alpha, const double *beta,    \
                           int64_t r0, int64_t r1)                                             \
    {                                                                                          \
        const R sm = conj_m ? (R)-1 : (R)1, sv = conj_v ? (R)-1 : (R)1;                        \
        R acc[2 * 2];                                                                          \
        if (mrs == 2 && !(mks == 2 && vs == 2)) {   /* adjacent rows: axpy, 256 at a time */  \
            R buf[2 * 256];                                                                    \
            for (int64_t c0 = r0; c0 < r1; c0 += 256) {                                        \
                int64_t cn = r1 - c0 < 256 ? r1 - c0 : 256;                                    \
                axpy_##SUF(mat + 2 * c0, mks, conj_m, v, vs, conj_v, k, cn, buf);              \
                for (int64_t i = 0; i < cn; i++) {                                             \
                    int64_t r = c0 + i;                                                        \
                    update_##SUF(buf + 2 * i, 1, 1, 1, out + r * os, 0, 0,                     \
                                 s ? s + r * ss : NULL, 0, 0, alpha, beta);                    \
                }                                                                              \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        for (int64_t r = r0; r < r1; r++) {                                                    \
            const R *row = mat + r * mrs;                                                      \
            if (mks == 2 && vs == 2) {                                                         \
                R l[4];                                                                        \
                lanes_##SUF(row, v, k, l);                                                     \
                acc[0] = conj_m || conj_v ? l[0] + l[1] : l[0] - l[1];                         \
                acc[1] = conj_m ? l[2] - l[3] : conj_v ? l[3] - l[2] : l[2] + l[3];            \
                update_##SUF(acc, 1, 1, 1, out + r * os, 0, 0, s ? s + r * ss : NULL, 0, 0,   \
                             alpha, beta);                                                     \
                continue;                                                                      \
            }                                                                                  \
            R re0 = 0, im0 = 0, re1 = 0, im1 = 0;                                              \
            int64_t p = 0;                                                                     \
            for (; p + 1 < k; p += 2) {                                                        \
                R xr = row[p * mks], xi = sm * row[p * mks + 1];                               \
                R yr = v[p * vs], yi = sv * v[p * vs + 1];                                     \
                re0 += xr * yr - xi * yi;                                                      \
                im0 += xr * yi + xi * yr;                                                      \
                xr = row[(p + 1) * mks];                                                       \
                xi = sm * row[(p + 1) * mks + 1];                                              \
                yr = v[(p + 1) * vs];                                                          \
                yi = sv * v[(p + 1) * vs + 1];                                                 \
                re1 += xr * yr - xi * yi;                                                      \
                im1 += xr * yi + xi * yr;                                                      \
            }                                                                                  \
            if (p < k) {                                                                       \
                R xr = row[p * mks], xi = sm * row[p * mks + 1];                               \
                R yr = v[p * vs], yi = sv * v[p * vs + 1];                                     \
                re0 += xr * yr - xi * yi;                                                      \
                im0 += xr * yi + xi * yr;                                                      \
            }                                                                                  \
            acc[0] = re0 + re1;                                                                \
            acc[1] = im0 + im1;                                                                \
            acc[2] = 0;                                                                        \
            acc[3] = 0;                                                                        \
            /* the 1 x 1 tile: its parts are acc[0] and acc[1] (nr = 1) */                    \
            update_##SUF(acc, 1, 1, 1, out + r * os, 0, 0, s ? s + r * ss : NULL, 0, 0,       \
                         alpha, beta);                                                         \
        }                                                                                      \
    }

ZGEMM_TYPED(c8, float)
ZGEMM_TYPED(c16, double)
#undef ZGEMM_TYPED

/* ---- tiny products ---- */

/* Columns [j0, j0 + W) of C = alpha * op(A) @ B + beta * S for one matrix, W a constant of
 * at most 64 bytes of reals: each row's sums of op(A[i, p]) * B[p, j0:j0 + W] in GCC vector
 * types, x += re(a) * B's row and y += im(a) * B's row (B's row read in place, its parts
 * interleaved), combined once per row in the same vectors: c = x + sgn * swap(y) (y's parts
 * swapped, sgn = -1, 1, -1, 1, ...), re = x_re - y_im, im = x_im + y_re; for conj(A) sgn
 * changes sign rather than each step's im(a) (a sign change is exact, the bits the same, two
 * scalar multiplications a step fewer; the combine had been scalar extracts, nearly half of
 * bmm 1250 x 8 x 8 complex64's time on AVX2).  The sums of a row are NH vectors of 2 W / NH
 * reals each (HALVES, NH = 1 or 2): one vector of up to 64 bytes fits an AVX-512 register,
 * but the AVX2 and portable clones kept a 64-byte vector in memory (each step a store, GPR
 * moves and a reload: bmm of 312 x 16 x 16 complex64 ran at 0.16 of PyTorch's speed on a
 * Zen 3), so every clone but AVX-512's takes two 32-byte halves; a lane's arithmetic is the
 * same either way, and so are the bits.
 * Rows go in pairs, four independent sums per half (one pair of sums had each step wait on
 * the last add).  b: B's first column of the chunk, its rows brs reals apart and contiguous;
 * plain: alpha 1, S not read and C's rows contiguous (bmm's case): rows stored as they are.
 * The rows reach tiny_out through arrays, never as vector arguments (a baseline-ISA caller
 * of an AVX2 or AVX-512 callee passes those in memory where it expects registers: gcc's
 * -Wpsabi note; the -O1 sanitized build had read garbage so). */
#define ZTINY_H1(X, ...) X(0, __VA_ARGS__)
#define ZTINY_H2(X, ...) X(0, __VA_ARGS__) X(1, __VA_ARGS__)
#define ZTINY_ZERO(H, V, ROW) V x##ROW##_##H = {0}, y##ROW##_##H = {0};
#define ZTINY_SUM(H, V, ROW, AP, BP, HR)                                                       \
    {                                                                                          \
        V bv;                                                                                  \
        memcpy(&bv, (BP) + H * (HR), sizeof(bv));                                              \
        x##ROW##_##H += (AP)[0] * bv;                                                          \
        y##ROW##_##H += (AP)[1] * bv;                                                          \
    }
#define ZTINY_SAVE(H, V, ROW, CV, HR)                                                          \
    {                                                                                          \
        V c_ = x##ROW##_##H + sgn * __builtin_shuffle(y##ROW##_##H, swap);                     \
        memcpy((CV) + H * (HR), &c_, sizeof(V));                                               \
    }
#define ZTINY_OUT(SUF, R, W)                                                                   \
    static inline __attribute__((always_inline)) void                                         \
        tiny_out_##SUF##_##W(const ZProblem *pr, const R *cv, R *c, const R *s, int plain)     \
    {                                                                                          \
        if (plain) {                                                                           \
            memcpy(c, cv, 2 * W * sizeof(R));                                                  \
            return;                                                                            \
        }                                                                                      \
        R t[2 * W];   /* update's layout: W real parts, then W imaginary parts */             \
        for (int j = 0; j < W; j++) {                                                          \
            t[j] = cv[2 * j];                                                                  \
            t[W + j] = cv[2 * j + 1];                                                          \
        }                                                                                      \
        update_##SUF(t, W, 1, W, c, 0, pr->ccs, s, 0, pr->scs, pr->alpha, pr->beta);          \
    }
/* NAME: W columns, the sums of a row in NH vectors (HALVES: ZTINY_H1 or ZTINY_H2) of R, IT
 * the integer of R's size, SWAP the lanes' pair swap and ALT the signs -1, 1, ... */
#define ZTINY(NAME, ATTR, SUF, R, IT, W, NH, HALVES, SWAP, ALT)                                \
    typedef R NAME##_vec __attribute__((vector_size(2 * W * sizeof(R) / NH)));               \
    typedef IT NAME##_idx __attribute__((vector_size(2 * W * sizeof(R) / NH)));              \
    static ATTR __attribute__((optimize("fp-contract=fast"))) void                            \
    NAME(const ZProblem *pr, const R *a, const R *b, int64_t brs, R *c, const R *s, int plain) \
    {                                                                                          \
        const int64_t ars = pr->ars, acs = pr->acs, k = pr->k, hr = 2 * W / NH;                \
        const NAME##_idx swap = SWAP;                                                          \
        const NAME##_vec sgn = (pr->conj_a ? (R)-1 : (R)1) * (NAME##_vec)ALT;                  \
        R cv[2 * W];                                                                           \
        int64_t i = 0;                                                                         \
        for (; i + 1 < pr->m; i += 2) {                                                        \
            const R *a0 = a + i * ars, *a1 = a0 + ars;                                         \
            HALVES(ZTINY_ZERO, NAME##_vec, 0)                                                  \
            HALVES(ZTINY_ZERO, NAME##_vec, 1)                                                  \
            for (int64_t p = 0; p < k; p++) {                                                  \
                HALVES(ZTINY_SUM, NAME##_vec, 0, a0 + p * acs, b + p * brs, hr)                \
                HALVES(ZTINY_SUM, NAME##_vec, 1, a1 + p * acs, b + p * brs, hr)                \
            }                                                                                  \
            HALVES(ZTINY_SAVE, NAME##_vec, 0, cv, hr)                                          \
            tiny_out_##SUF##_##W(pr, cv, c + i * pr->crs,                                      \
                                 s != NULL ? s + i * pr->srs : NULL, plain);                   \
            HALVES(ZTINY_SAVE, NAME##_vec, 1, cv, hr)                                          \
            tiny_out_##SUF##_##W(pr, cv, c + (i + 1) * pr->crs,                                \
                                 s != NULL ? s + (i + 1) * pr->srs : NULL, plain);             \
        }                                                                                      \
        if (i < pr->m) {                                                                       \
            const R *a0 = a + i * ars;                                                         \
            HALVES(ZTINY_ZERO, NAME##_vec, 0)                                                  \
            for (int64_t p = 0; p < k; p++) {                                                  \
                HALVES(ZTINY_SUM, NAME##_vec, 0, a0 + p * acs, b + p * brs, hr)                \
            }                                                                                  \
            HALVES(ZTINY_SAVE, NAME##_vec, 0, cv, hr)                                          \
            tiny_out_##SUF##_##W(pr, cv, c + i * pr->crs,                                      \
                                 s != NULL ? s + i * pr->srs : NULL, plain);                   \
        }                                                                                      \
    }
/* One matrix in column chunks of WMAX (8 complex64, 4 complex128: 64 bytes), 4, 2 and 1
 * complex numbers (n = 7: 4 + 2 + 1); a B without contiguous rows (an mT or mH view) is first
 * copied to bbuf (k x n, contiguous).  The 64-byte chunks take one vector a row's sums on
 * AVX-512 (tiny_SUF_WMAX_avx512) and two halves elsewhere. */
#ifdef __x86_64__
#define ZTINY_WIDEST(SUF, WMAX)                                                                \
    if (ptl_cpu_capability() >= PTL_CPU_AVX512) {                                              \
        widest = tiny_##SUF##_##WMAX##_avx512;                                                 \
    }
#else
#define ZTINY_WIDEST(SUF, WMAX)
#endif
#define ZTINY_MATRIX(SUF, R, WMAX)                                                             \
    static void tiny_##SUF(const ZProblem *pr, const ZMat *x, R *bbuf)                        \
    {                                                                                          \
        const R *b = (const R *)x->b, *s = (const R *)x->s;                                   \
        R *c = (R *)x->c;                                                                      \
        int64_t brs = pr->brs;                                                                 \
        void (*widest)(const ZProblem *, const R *, const R *, int64_t, R *, const R *, int) = \
            tiny_##SUF##_##WMAX;                                                               \
        ZTINY_WIDEST(SUF, WMAX)                                                                \
        if (pr->bcs != 2) {                                                                    \
            const int64_t k = pr->k, n = pr->n, bcs = pr->bcs;                                 \
            R *restrict d = bbuf;                                                              \
            for (int64_t p = 0; p < k; p++) {                                                  \
                for (int64_t j = 0; j < n; j++, d += 2) {                                      \
                    memcpy(d, b + p * brs + j * bcs, 2 * sizeof(R));                           \
                }                                                                              \
            }                                                                                  \
            b = bbuf;                                                                          \
            brs = 2 * n;                                                                       \
        }                                                                                      \
        int plain = pr->alpha[0] == 1 && pr->alpha[1] == 0 && s == NULL && pr->ccs == 2;     \
        for (int64_t j0 = 0; j0 < pr->n;) {                                                    \
            int64_t left = pr->n - j0;                                                         \
            int64_t w = left >= WMAX ? WMAX : left >= 4 ? 4 : left >= 2 ? 2 : 1;              \
            const R *bj = b + 2 * j0, *sj = s != NULL ? s + j0 * pr->scs : NULL;              \
            R *cj = c + j0 * pr->ccs;                                                          \
            const R *ax = (const R *)x->a;                                                     \
            if (w == WMAX) {                                                                   \
                widest(pr, ax, bj, brs, cj, sj, plain);                                        \
            }                                                                                  \
            else if (w == 4) {                                                                 \
                tiny_##SUF##_4(pr, ax, bj, brs, cj, sj, plain);                                \
            }                                                                                  \
            else if (w == 2) {                                                                 \
                tiny_##SUF##_2(pr, ax, bj, brs, cj, sj, plain);                                \
            }                                                                                  \
            else {                                                                             \
                tiny_##SUF##_1(pr, ax, bj, brs, cj, sj, plain);                                \
            }                                                                                  \
            j0 += w;                                                                           \
        }                                                                                      \
    }
ZTINY_OUT(c8, float, 1)
ZTINY_OUT(c8, float, 2)
ZTINY_OUT(c8, float, 4)
ZTINY_OUT(c8, float, 8)
ZTINY_OUT(c16, double, 1)
ZTINY_OUT(c16, double, 2)
ZTINY_OUT(c16, double, 4)
#define ZT_SW2 {1, 0}
#define ZT_SW4 {1, 0, 3, 2}
#define ZT_SW8 {1, 0, 3, 2, 5, 4, 7, 6}
#define ZT_SW16 {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14}
#define ZT_AL2 {-1, 1}
#define ZT_AL4 {-1, 1, -1, 1}
#define ZT_AL8 {-1, 1, -1, 1, -1, 1, -1, 1}
#define ZT_AL16 {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1}
ZTINY(tiny_c8_1, PTL_LOOP_CLONES_WIDE, c8, float, int32_t, 1, 1, ZTINY_H1, ZT_SW2, ZT_AL2)
ZTINY(tiny_c8_2, PTL_LOOP_CLONES_WIDE, c8, float, int32_t, 2, 1, ZTINY_H1, ZT_SW4, ZT_AL4)
ZTINY(tiny_c8_4, PTL_LOOP_CLONES_WIDE, c8, float, int32_t, 4, 1, ZTINY_H1, ZT_SW8, ZT_AL8)
ZTINY(tiny_c8_8, PTL_LOOP_CLONES, c8, float, int32_t, 8, 2, ZTINY_H2, ZT_SW8, ZT_AL8)
ZTINY(tiny_c16_1, PTL_LOOP_CLONES_WIDE, c16, double, int64_t, 1, 1, ZTINY_H1, ZT_SW2, ZT_AL2)
ZTINY(tiny_c16_2, PTL_LOOP_CLONES_WIDE, c16, double, int64_t, 2, 1, ZTINY_H1, ZT_SW4, ZT_AL4)
ZTINY(tiny_c16_4, PTL_LOOP_CLONES, c16, double, int64_t, 4, 2, ZTINY_H2, ZT_SW4, ZT_AL4)
#ifdef __x86_64__
ZTINY(tiny_c8_8_avx512, __attribute__((target("avx512f"))), c8, float, int32_t, 8, 1, ZTINY_H1,
      ZT_SW16, ZT_AL16)
ZTINY(tiny_c16_4_avx512, __attribute__((target("avx512f"))), c16, double, int64_t, 4, 1,
      ZTINY_H1, ZT_SW8, ZT_AL8)
#endif
ZTINY_MATRIX(c8, float, 8)
ZTINY_MATRIX(c16, double, 4)
#undef ZTINY_MATRIX
#undef ZTINY_WIDEST
#undef ZTINY
#undef ZTINY_OUT
#undef ZTINY_SAVE
#undef ZTINY_SUM
#undef ZTINY_ZERO
#undef ZTINY_H2
#undef ZTINY_H1
#undef ZT_SW2
#undef ZT_SW4
#undef ZT_SW8
#undef ZT_SW16
#undef ZT_AL2
#undef ZT_AL4
#undef ZT_AL8
#undef ZT_AL16

/* ---- the blocked product ---- */

typedef struct ZJob {
    const ZProblem *pr;
    ZMat x;
    const void *bpack;              /* the packed kc x nc panel */
    int64_t jc, nc, pc, kc;
    int64_t ncg, cgw;               /* column groups and their width (a multiple of nr) */
} ZJob;

/* A buffer for one packed A block (new; NULL with the error set) */
static void *
zalloc(size_t nbytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, nbytes ? nbytes : 64) != 0) {
        ptl_error_set(PTL_ERR_MEMORY, "gemm: out of memory allocating %zu bytes", nbytes);
        return NULL;
    }
    return p;
}

/* Tasks [t0, t1) of one (jc, pc) step: task t is the MC block t / ncg and the column group
 * t % ncg; apack holds an MC x KC block. */
static void
zgemm_tasks(const ZJob *jb, void *apack, int64_t t0, int64_t t1)
{
    const ZProblem *pr = jb->pr;
    const ZEngine *e = pr->e;
    size_t item = pr->is64 ? sizeof(double) : sizeof(float);
    char acc[2 * ZGEMM_MAX_MR * ZGEMM_MAX_NR * sizeof(double)] __attribute__((aligned(64)));
    int first = jb->pc == 0;
    const double one[2] = {1, 0};
    for (int64_t t = t0; t < t1; t++) {
        int64_t ic = (t / jb->ncg) * e->mc, g = t % jb->ncg;
        int64_t mc = pr->m - ic < e->mc ? pr->m - ic : e->mc;
        int64_t j0 = g * jb->cgw, j1 = j0 + jb->cgw < jb->nc ? j0 + jb->cgw : jb->nc;
        const char *a = jb->x.a + (size_t)(ic * pr->ars + jb->pc * pr->acs) * item;
        if (pr->is64) {
            pack_a_c16(apack, (const double *)a, pr->ars, pr->acs, mc, jb->kc, e->mr,
                       pr->conj_a, e->pack_a);
        }
        else {
            pack_a_c8(apack, (const float *)a, pr->ars, pr->acs, mc, jb->kc, e->mr, pr->conj_a,
                      e->pack_a);
        }
        for (int64_t jr = j0; jr < j1; jr += e->nr) {
            int64_t w = j1 - jr < e->nr ? j1 - jr : e->nr;
            const char *bp = (const char *)jb->bpack + (size_t)(jr * jb->kc * 2) * item;
            for (int64_t ir = 0; ir < mc; ir += e->mr) {
                int64_t h = mc - ir < e->mr ? mc - ir : e->mr;
                const char *ap = (const char *)apack + (size_t)(ir * jb->kc * 2) * item;
                int64_t ci = ic + ir, cj = jb->jc + jr;
                char *c = jb->x.c + (size_t)(ci * pr->crs + cj * pr->ccs) * item;
                const char *s = first ? jb->x.s : c;
                int64_t srs = first ? pr->srs : pr->crs, scs = first ? pr->scs : pr->ccs;
                const double *beta = first ? pr->beta : one;
                if (first && s != NULL) {
                    s += (size_t)(ci * srs + cj * scs) * item;
                }
                if (e->half != NULL && 2 * w <= e->nr) {
                    e->half(jb->kc, ap, bp, acc);
                }
                else {
                    e->kernel(jb->kc, ap, bp, acc);
                }
                if (pr->is64) {
                    update_c16((const double *)acc, e->nr, h, w, (double *)c, pr->crs, pr->ccs,
                               (const double *)s, srs, scs, pr->alpha, beta);
                }
                else {
                    update_c8((const float *)acc, e->nr, h, w, (float *)c, pr->crs, pr->ccs,
                              (const float *)s, srs, scs, pr->alpha, beta);
                }
            }
        }
    }
}

static int
zgemm_tasks_parallel(void *ctx, int64_t t0, int64_t t1)
{
    const ZJob *jb = ctx;
    const ZEngine *e = jb->pr->e;
    size_t item = jb->pr->is64 ? sizeof(double) : sizeof(float);
    void *apack = zalloc((size_t)(e->mc * e->kc * 2) * item);
    if (apack == NULL) {
        return -1;
    }
    zgemm_tasks(jb, apack, t0, t1);
    free(apack);
    return 0;
}

/* One matrix of the batch through the blocked loops; apack and bpack hold an MC x KC block
 * and a KC x NC panel.  0, or -1 with the error set. */
static int
zgemm_blocked(const ZProblem *pr, const ZMat *x, void *apack, void *bpack)
{
    const ZEngine *e = pr->e;
    size_t item = pr->is64 ? sizeof(double) : sizeof(float);
    int nthreads = pr->parallel ? ptl_get_num_threads() : 1;
    ZJob jb = {.pr = pr, .x = *x, .bpack = bpack};
    for (jb.jc = 0; jb.jc < pr->n; jb.jc += e->nc) {
        jb.nc = pr->n - jb.jc < e->nc ? pr->n - jb.jc : e->nc;
        int64_t nblk = (pr->m + e->mc - 1) / e->mc, nsliv = (jb.nc + e->nr - 1) / e->nr;
        jb.ncg = nblk >= nthreads ? 1 : (nthreads + nblk - 1) / nblk;
        jb.ncg = jb.ncg < nsliv ? jb.ncg : nsliv;
        jb.cgw = (nsliv + jb.ncg - 1) / jb.ncg * e->nr;
        jb.ncg = (jb.nc + jb.cgw - 1) / jb.cgw;
        for (jb.pc = 0; jb.pc < pr->k; jb.pc += e->kc) {
            jb.kc = pr->k - jb.pc < e->kc ? pr->k - jb.pc : e->kc;
            const char *b = x->b + (size_t)(jb.pc * pr->brs + jb.jc * pr->bcs) * item;
            if (pr->is64) {
                pack_b_c16(bpack, (const double *)b, pr->brs, pr->bcs, jb.kc, jb.nc, e->nr,
                           e->split_b, e->pack_b);
            }
            else {
                pack_b_c8(bpack, (const float *)b, pr->brs, pr->bcs, jb.kc, jb.nc, e->nr,
                          e->split_b, e->pack_b);
            }
            int64_t ntasks = nblk * jb.ncg;
            if (nthreads > 1 && ntasks > 1) {
                if (ptl_parallel_for(0, ntasks, 1, zgemm_tasks_parallel, &jb) < 0) {
                    return -1;
                }
            }
            else {
                zgemm_tasks(&jb, apack, 0, ntasks);
            }
        }
    }
    return 0;
}

/* gemv over rows [r0, r1) of one matrix with one column (n == 1) or one row (m == 1) */
static void
zgemm_vector(const ZProblem *pr, const ZMat *x, int64_t r0, int64_t r1)
{
    int by_row = pr->n == 1;   /* C's column = op(A) @ b; else C's row = a^T-ish @ B */
    const char *mat = by_row ? x->a : x->b, *v = by_row ? x->b : x->a;
    int64_t mrs = by_row ? pr->ars : pr->bcs, mks = by_row ? pr->acs : pr->brs;
    int64_t vs = by_row ? pr->brs : pr->acs, os = by_row ? pr->crs : pr->ccs;
    int64_t ss = by_row ? pr->srs : pr->scs;
    int conj_m = by_row && pr->conj_a, conj_v = !by_row && pr->conj_a;
    if (pr->is64) {
        gemv_c16((const double *)mat, mrs, mks, conj_m, (const double *)v, vs, conj_v, pr->k,
                 (double *)x->c, os, (const double *)x->s, ss, pr->alpha, pr->beta, r0, r1);
    }
    else {
        gemv_c8((const float *)mat, mrs, mks, conj_m, (const float *)v, vs, conj_v, pr->k,
                (float *)x->c, os, (const float *)x->s, ss, pr->alpha, pr->beta, r0, r1);
    }
}

typedef struct ZVecJob {
    const ZProblem *pr;
    ZMat x;
} ZVecJob;

static int
zgemm_vector_parallel(void *ctx, int64_t r0, int64_t r1)
{
    const ZVecJob *vj = ctx;
    zgemm_vector(vj->pr, &vj->x, r0, r1);
    return 0;
}

/* Matrices [t0, t1) of the batch, each on this thread or split over the threads when
 * pr->parallel.  0, or -1 with the error set. */
static int
zgemm_range(const ZProblem *pr, int64_t t0, int64_t t1)
{
    const ZEngine *e = pr->e;
    size_t item = pr->is64 ? sizeof(double) : sizeof(float);
    int vector = pr->n == 1 || pr->m == 1;
    int tiny = !vector && (double)pr->m * (double)pr->n * (double)pr->k <= ZGEMM_TINY_MACS;
    void *apack = NULL, *bpack = NULL, *bbuf = NULL;
    int rc = -1;
    if (tiny && pr->bcs != 2 && pr->k > 0 &&
        (bbuf = zalloc((size_t)(2 * pr->k * pr->n) * item)) == NULL) {
        goto done;
    }
    if (!vector && !tiny && pr->k > 0) {
        int64_t kc = pr->k < e->kc ? pr->k : e->kc;
        int64_t nc = pr->n < e->nc ? pr->n : e->nc, mc = pr->m < e->mc ? pr->m : e->mc;
        nc = (nc + e->nr - 1) / e->nr * e->nr;
        mc = (mc + e->mr - 1) / e->mr * e->mr;
        if ((apack = zalloc((size_t)(mc * kc * 2) * item)) == NULL ||
            (bpack = zalloc((size_t)(nc * kc * 2) * item)) == NULL) {
            goto done;
        }
    }
    for (int64_t t = t0; t < t1; t++) {
        ZMat x = zgemm_mat(pr, t);
        if (pr->k == 0) {
            if (pr->is64) {
                scale_c16(pr, &x);
            }
            else {
                scale_c8(pr, &x);
            }
        }
        else if (vector) {
            int64_t rows = pr->n == 1 ? pr->m : pr->n;
            ZVecJob vj = {pr, x};
            int64_t grain = ZGEMM_PARALLEL_MACS / pr->k + 1;
            if (pr->parallel && ptl_parallel_for(0, rows, grain, zgemm_vector_parallel,
                                                 &vj) < 0) {
                goto done;
            }
            if (!pr->parallel) {
                zgemm_vector(pr, &x, 0, rows);
            }
        }
        else if (tiny) {
            if (pr->is64) {
                tiny_c16(pr, &x, bbuf);
            }
            else {
                tiny_c8(pr, &x, bbuf);
            }
        }
        else if (zgemm_blocked(pr, &x, apack, bpack) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    free(apack);
    free(bpack);
    free(bbuf);
    return rc;
}

static int
zgemm_batch_parallel(void *ctx, int64_t t0, int64_t t1)
{
    return zgemm_range(ctx, t0, t1);
}

static void
zgemm_operand(const PtlTensorImpl *t, int off, int64_t *bs, int64_t *rs, int64_t *cs)
{
    for (int d = 0; d < off; d++) {
        bs[d] = 2 * t->strides[d];
    }
    *rs = 2 * t->strides[off];
    *cs = 2 * t->strides[off + 1];
}

/* ptl_zgemm_c8 / ptl_zgemm_c16: one product on raw pointers (gemm_complex.h) */
static int
zgemm_raw(int is64, int64_t m, int64_t n, int64_t k, const double alpha[2], const void *a,
          int64_t ars, int64_t acs, const void *b, int64_t brs, int64_t bcs,
          const double beta[2], void *c, int64_t ldc, int conj_a)
{
    ZProblem pr;
    if (m <= 0 || n <= 0) {
        return 0;
    }
    memset(&pr, 0, sizeof(pr));
    pr.e = zgemm_engine(is64 ? PTL_DTYPE_COMPLEX128 : PTL_DTYPE_COMPLEX64);
    pr.is64 = is64;
    pr.conj_a = conj_a;
    pr.batch = 1;
    pr.m = m;
    pr.n = n;
    pr.k = k;
    pr.a = a;
    pr.b = b;
    pr.c = c;
    pr.s = beta[0] != 0 || beta[1] != 0 ? c : NULL;
    pr.ars = 2 * ars;
    pr.acs = 2 * acs;
    pr.brs = 2 * brs;
    pr.bcs = 2 * bcs;
    pr.crs = pr.srs = 2 * ldc;
    pr.ccs = pr.scs = 2;
    memcpy(pr.alpha, alpha, sizeof(pr.alpha));
    memcpy(pr.beta, beta, sizeof(pr.beta));
    double macs = (double)m * (double)n * (double)(k + 1);
    pr.parallel = macs >= ZGEMM_PARALLEL_MACS && !ptl_in_parallel_region() &&
                  ptl_get_num_threads() > 1;
    return zgemm_range(&pr, 0, 1);
}

int
ptl_zgemm_c8(int64_t m, int64_t n, int64_t k, const double alpha[2], const void *a,
             int64_t ars, int64_t acs, const void *b, int64_t brs, int64_t bcs,
             const double beta[2], void *c, int64_t ldc, int conj_a)
{
    return zgemm_raw(0, m, n, k, alpha, a, ars, acs, b, brs, bcs, beta, c, ldc, conj_a);
}

int
ptl_zgemm_c16(int64_t m, int64_t n, int64_t k, const double alpha[2], const void *a,
              int64_t ars, int64_t acs, const void *b, int64_t brs, int64_t bcs,
              const double beta[2], void *c, int64_t ldc, int conj_a)
{
    return zgemm_raw(1, m, n, k, alpha, a, ars, acs, b, brs, bcs, beta, c, ldc, conj_a);
}

int
ptl_gemm_complex(PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b, const double alpha[2],
                 const double beta[2], PtlTensorImpl *src, int conj_a)
{
    ZProblem pr;
    int off = c->dim - 2;

    if (!ptl_dtype_is_complex(c->dtype) || a->dtype != c->dtype || b->dtype != c->dtype ||
        a->dim != c->dim || b->dim != c->dim || c->dim < 2 ||
        (src != NULL && (src->dtype != c->dtype || src->dim != c->dim))) {
        return ptl_error_set(PTL_ERR_RUNTIME, "gemm: operands must be at least 2-D, of one "
                             "complex dtype and rank");
    }
    if (ptl_tensor_is_meta(c)) {   /* shapes only: Note [Meta kernels] in meta.c */
        return 0;
    }
    if (c->device.type != PTL_DEVICE_CPU) {   /* the Complex key refuses CUDA before this */
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"gemm\" not implemented for '%s' on "
                             "this device", ptl_dtype_legacy_name(c->dtype));
    }
    memset(&pr, 0, sizeof(pr));
    pr.e = zgemm_engine(c->dtype);
    pr.is64 = c->dtype == PTL_DTYPE_COMPLEX128;
    pr.conj_a = conj_a;
    pr.nbd = off;
    pr.batch = 1;
    for (int d = 0; d < off; d++) {
        pr.bsizes[d] = c->sizes[d];
        pr.batch *= c->sizes[d];
    }
    pr.m = c->sizes[off];
    pr.n = c->sizes[off + 1];
    pr.k = a->sizes[off + 1];
    if (pr.batch == 0 || pr.m == 0 || pr.n == 0) {
        return 0;
    }
    src = src != NULL ? src : c;
    zgemm_operand(a, off, pr.a_bs, &pr.ars, &pr.acs);
    zgemm_operand(b, off, pr.b_bs, &pr.brs, &pr.bcs);
    zgemm_operand(c, off, pr.c_bs, &pr.crs, &pr.ccs);
    zgemm_operand(src, off, pr.s_bs, &pr.srs, &pr.scs);
    pr.a = ptl_tensor_data(a);
    pr.b = ptl_tensor_data(b);
    pr.c = ptl_tensor_data(c);
    pr.s = beta[0] != 0 || beta[1] != 0 ? ptl_tensor_data(src) : NULL;
    memcpy(pr.alpha, alpha, sizeof(pr.alpha));
    memcpy(pr.beta, beta, sizeof(pr.beta));

    double macs = (double)pr.batch * (double)pr.m * (double)pr.n * (double)(pr.k + 1);
    int threads = ptl_in_parallel_region() ? 1 : ptl_get_num_threads();
    int big = macs >= ZGEMM_PARALLEL_MACS && threads > 1;
    void *token = macs >= ZGEMM_PARALLEL_MACS ? ptl_nogil_begin() : NULL;
    int rc;
    if (big && pr.batch >= threads) {
        rc = ptl_parallel_for(0, pr.batch, 1, zgemm_batch_parallel, &pr);
    }
    else {
        pr.parallel = big;
        rc = zgemm_range(&pr, 0, pr.batch);
    }
    ptl_nogil_end(token);
    return rc;
}
