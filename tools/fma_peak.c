/* fma_peak.c -- one core's float32 FMA peak, to judge the SGEMM tile's rate against.
 *
 * Build and run (one thread, pinned; the unroll pragmas keep the chains in registers):
 *     gcc -O2 -o /tmp/fma_peak tools/fma_peak.c && taskset -c 1 /tmp/fma_peak [iterations]
 *
 * Each test runs NCHAIN independent chains of FMAs (acc = acc * m + a), so the latency of
 * one FMA (4 cycles on Zen 4) hides behind the others and only the FMA pipes' throughput
 * counts.  "reg" forms read only registers; "bcast" forms broadcast A's elements from
 * memory (`vbroadcastss`) and load B's vectors, as the GEMM tiles do, so that the loads'
 * port pressure shows.  Each test runs 7 times; the best thread-CPU-time rate is printed
 * (the host is shared, so the best run is the one least disturbed).  A float32 FMA is 2
 * flops a lane.  docs/performance.md (SGEMM against the core's FMA peak) quotes it. */
#define _POSIX_C_SOURCE 199309L
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NCHAIN 12
#define REPS 7
#define ITERS 20000000L   /* k steps a test, unless given on the command line */

static double
thread_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Stops the compiler from folding the chains away. */
static volatile float sink;

/* The register-only test of one vector width (P: the intrinsics' prefix, V: the vector
 * type): NCHAIN chains acc = acc * m + a, their sum stored to `sink`. */
#define DEFINE_REG_TEST(NAME, TARGET, P, V)                                               \
    TARGET static void                                                                    \
    NAME(long iters)                                                                      \
    {                                                                                     \
        V acc[NCHAIN];                                                                    \
        const V m = P##_set1_ps(0.999999f), a = P##_set1_ps(1e-7f);                       \
        float out[sizeof(V) / sizeof(float)];                                             \
        for (int c = 0; c < NCHAIN; c++) {                                                \
            acc[c] = P##_set1_ps((float)c);                                               \
        }                                                                                 \
        for (long i = 0; i < iters; i++) {                                                \
            _Pragma("GCC unroll 16") for (int c = 0; c < NCHAIN; c++) {                   \
                acc[c] = P##_fmadd_ps(acc[c], m, a);                                      \
            }                                                                             \
        }                                                                                 \
        for (int c = 1; c < NCHAIN; c++) {                                                \
            acc[0] = P##_add_ps(acc[0], acc[c]);                                          \
        }                                                                                 \
        P##_storeu_ps(out, acc[0]);                                                       \
        sink = out[0];                                                                    \
    }

DEFINE_REG_TEST(avx512_reg, __attribute__((target("avx512f"))), _mm512, __m512)
DEFINE_REG_TEST(avx2_reg, __attribute__((target("avx2,fma"))), _mm256, __m256)
#undef DEFINE_REG_TEST

/* Four rows of A broadcast against three vectors of B a k step: 12 FMAs, 3 vector loads and
 * 4 broadcasts, near the 12 x 32 tile's mix (24 FMAs, 2 vector loads, 12 broadcasts). */
__attribute__((target("avx512f"))) static void
avx512_bcast(long iters)
{
    __m512 acc[NCHAIN];
    float buf[96] __attribute__((aligned(64)));

    for (int i = 0; i < 96; i++) {
        buf[i] = 1e-7f * i;
    }
    for (int c = 0; c < NCHAIN; c++) {
        acc[c] = _mm512_set1_ps((float)c);
    }
    for (long i = 0; i < iters; i++) {
        const float *p = buf + (i & 7);
        const float *q = buf + 48 * (i & 1);   /* B's row moves, so its loads stay in the loop */
        const __m512 b[3] = {_mm512_load_ps(q), _mm512_load_ps(q + 16), _mm512_load_ps(q + 32)};
        const __m512 a[4] = {_mm512_set1_ps(p[0]), _mm512_set1_ps(p[1]),
                             _mm512_set1_ps(p[2]), _mm512_set1_ps(p[3])};

#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
#pragma GCC unroll 3
            for (int v = 0; v < 3; v++) {
                acc[3 * r + v] = _mm512_fmadd_ps(a[r], b[v], acc[3 * r + v]);
            }
        }
    }
    for (int c = 1; c < NCHAIN; c++) {
        acc[0] = _mm512_add_ps(acc[0], acc[c]);
    }
    _mm512_storeu_ps(buf, acc[0]);
    sink = buf[0];
}

/* The AVX2 6 x 16 tile's mix: 6 broadcasts, 2 vector loads, 12 FMAs a k step.  AVX2 has 16
 * registers, so the 12 chains are named variables with one broadcast live at a time (an
 * array of them went through the stack here). */
#define AVX2_ROW(R, X, Y)                                                                  \
    do {                                                                                   \
        __m256 a_ = _mm256_broadcast_ss(p + (R));                                          \
        X = _mm256_fmadd_ps(a_, b0, X);                                                    \
        Y = _mm256_fmadd_ps(a_, b1, Y);                                                    \
    } while (0)

__attribute__((target("avx2,fma"))) static void
avx2_bcast(long iters)
{
    float buf[32] __attribute__((aligned(32)));

    for (int i = 0; i < 32; i++) {
        buf[i] = 1e-7f * i;
    }
    __m256 c0 = _mm256_set1_ps(0.f), c1 = _mm256_set1_ps(1.f), c2 = _mm256_set1_ps(2.f);
    __m256 c3 = _mm256_set1_ps(3.f), c4 = _mm256_set1_ps(4.f), c5 = _mm256_set1_ps(5.f);
    __m256 c6 = _mm256_set1_ps(6.f), c7 = _mm256_set1_ps(7.f), c8 = _mm256_set1_ps(8.f);
    __m256 c9 = _mm256_set1_ps(9.f), c10 = _mm256_set1_ps(10.f), c11 = _mm256_set1_ps(11.f);
    for (long i = 0; i < iters; i++) {
        const float *p = buf + (i & 7);
        const float *q = buf + 16 * (i & 1);   /* B's row moves, so its loads stay in the loop */
        __m256 b0 = _mm256_load_ps(q), b1 = _mm256_load_ps(q + 8);

        AVX2_ROW(0, c0, c1);
        AVX2_ROW(1, c2, c3);
        AVX2_ROW(2, c4, c5);
        AVX2_ROW(3, c6, c7);
        AVX2_ROW(4, c8, c9);
        AVX2_ROW(5, c10, c11);
    }
    c0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                       _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
    c0 = _mm256_add_ps(c0, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
    _mm256_storeu_ps(buf, c0);
    sink = buf[0];
}
#undef AVX2_ROW

static void
measure(const char *name, void (*fn)(long), int lanes, long iters)
{
    double best = 0.0;

    for (int r = 0; r < REPS; r++) {
        double t0 = thread_seconds();
        fn(iters);
        double dt = thread_seconds() - t0;
        double gflops = dt > 0 ? 2.0 * lanes * NCHAIN * (double)iters / dt * 1e-9 : 0.0;
        best = gflops > best ? gflops : best;
    }
    printf("%-14s %7.1f GFLOP/s (best of %d)\n", name, best, REPS);
}

int
main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : ITERS;

    if (iters <= 0) {
        fprintf(stderr, "usage: %s [iterations > 0]\n", argv[0]);
        return 2;
    }
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        measure("avx2 reg", avx2_reg, 8, iters);
        measure("avx2 bcast", avx2_bcast, 8, iters);
    }
    if (__builtin_cpu_supports("avx512f")) {
        measure("avx512 reg", avx512_reg, 16, iters);
        measure("avx512 bcast", avx512_bcast, 16, iters);
    }
    return 0;
}
