/* random_multinomial.c -- multinomial: category indices drawn from each row of a
 * probability tensor, with or without replacement.  Mirrors ATen/native/Distributions.cpp's
 * multinomial.  With replacement each draw inverts the row's cumulative distribution; without
 * it, each category gets the key p / E (E ~ Exp(1): the exponential race) and a row keeps its
 * num_samples largest keys (multinomial_chunk).  Every draw is a function of its counter
 * (Note [Philox streams] in generator.h), so threads may split the rows any way. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../c10/cpu_features.h"
#include "../../c10/error.h"
#include "../../c10/parallel.h"
#include "../distributions.h"
#include "../generator.h"
#include "native.h"
#include "vec_math.h"

#define MULTINOMIAL_GRAIN (PTL_GRAIN_SIZE / 8)

typedef struct MultinomialJob {
    const double *p;   /* rows x ncat, validated */
    int64_t *out;      /* rows x n */
    int64_t ncat, n;
    int replacement;
    uint64_t seed, offset;
} MultinomialJob;

typedef struct KeyIndex {
    double key;
    int64_t index;
} KeyIndex;

/* larger key first, then smaller index */
static int
key_index_cmp(const void *a, const void *b)
{
    const KeyIndex *x = a, *y = b;
    if (x->key != y->key) {
        return x->key > y->key ? -1 : 1;
    }
    return (x->index > y->index) - (x->index < y->index);
}

/* Counters per chunk of ptl_philox_words64 draws in multinomial_chunk. */
#define MULTINOMIAL_DRAWS 512

/* Sifts keys[i] down the heap keys[0 .. n) whose root is the worst key (key_index_cmp). */
static void
worst_first_sift(KeyIndex *keys, int64_t n, int64_t i)
{
    for (;;) {
        int64_t w = i, l = 2 * i + 1, r = l + 1;
        if (l < n && key_index_cmp(&keys[l], &keys[w]) > 0) {
            w = l;
        }
        if (r < n && key_index_cmp(&keys[r], &keys[w]) > 0) {
            w = r;
        }
        if (w == i) {
            return;
        }
        KeyIndex t = keys[i];
        keys[i] = keys[w];
        keys[w] = t;
        i = w;
    }
}

/* Moves the n best of keys[0 .. ncat) (key_index_cmp order, a total one: indices differ)
 * into keys[0 .. n), in order.  A few of many are kept in a heap of n whose root is the
 * worst (O(ncat log n), one pass) instead of sorting every key: sampling one token of a
 * 50257-word vocabulary sorted 50257 keys (0.15x PyTorch). */
static void
best_keys(KeyIndex *keys, int64_t ncat, int64_t n)
{
    if (n * 4 < ncat) {
        for (int64_t i = n / 2 - 1; i >= 0; i--) {
            worst_first_sift(keys, n, i);
        }
        for (int64_t c = n; c < ncat; c++) {
            if (key_index_cmp(&keys[c], &keys[0]) < 0) {
                keys[0] = keys[c];
                worst_first_sift(keys, n, 0);
            }
        }
        ncat = n;
    }
    qsort(keys, (size_t)ncat, sizeof(KeyIndex), key_index_cmp);
}

#ifdef PTL_HAVE_AVX2_KERNELS
/* keys[k] = p[k] > 0 ? p[k] / E_k : 0 for k < n / W * W (W = 8 or 4 lanes), E_k the
 * exponential of word x[k] as the scalar loop of multinomial_chunk computes it: 1 - u (u the
 * word's top 53 bits, exact) through ptl_log_normal's vector twin, negated (-log / 1, so
 * -0.0 stays as the scalar's).  The same bits, a vector of keys at a time; the scalar loop
 * took a libm fma call per term. */
PTL_AVX512 static int64_t
race_keys_pd512(const uint64_t *x, const double *p, int64_t n, double *keys)
{
    const __m512d one = _mm512_set1_pd(1.0), scale = _mm512_set1_pd(0x1p-53);
    const __m512d sign = _mm512_set1_pd(-0.0), zero = _mm512_setzero_pd();
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m512i w = _mm512_srli_epi64(_mm512_loadu_si512((const void *)(x + k)), 11);
        __m512d u = _mm512_mul_pd(_mm512_cvtepu64_pd(w), scale);
        __m512d ex = _mm512_xor_pd(ptl_vm_log_normal_pd512(_mm512_sub_pd(one, u)), sign);
        __m512d pv = _mm512_loadu_pd(p + k);
        __mmask8 pos = _mm512_cmp_pd_mask(pv, zero, _CMP_GT_OQ);
        _mm512_storeu_pd(keys + k, _mm512_maskz_div_pd(pos, pv, ex));
    }
    return k;
}

/* (AVX2: the 53-bit integer w >> 11 as a double from its low 52 bits and its top bit, each
 * exact) */
PTL_AVX2 static int64_t
race_keys_pd(const uint64_t *x, const double *p, int64_t n, double *keys)
{
    const __m256i low52 = _mm256_set1_epi64x(0xfffffffffffffLL);
    const __m256i two52 = _mm256_castpd_si256(_mm256_set1_pd(0x1p52));
    const __m256d one = _mm256_set1_pd(1.0), scale = _mm256_set1_pd(0x1p-53);
    const __m256d sign = _mm256_set1_pd(-0.0), zero = _mm256_setzero_pd();
    int64_t k = 0;
    for (; k + 4 <= n; k += 4) {
        __m256i w = _mm256_srli_epi64(_mm256_loadu_si256((const __m256i *)(x + k)), 11);
        __m256i top = _mm256_sub_epi64(_mm256_setzero_si256(), _mm256_srli_epi64(w, 52));
        __m256d d = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(w, low52), two52)),
            _mm256_set1_pd(0x1p52));
        d = _mm256_add_pd(d, _mm256_castsi256_pd(_mm256_and_si256(top, two52)));
        __m256d u = _mm256_mul_pd(d, scale);
        __m256d ex = _mm256_xor_pd(ptl_vm_log_normal_pd(_mm256_sub_pd(one, u)), sign);
        __m256d pv = _mm256_loadu_pd(p + k);
        __m256d pos = _mm256_cmp_pd(pv, zero, _CMP_GT_OQ);
        _mm256_storeu_pd(keys + k, _mm256_and_pd(pos, _mm256_div_pd(pv, ex)));
    }
    return k;
}
#endif

/* Rows [b, e).  With replacement, sample j of row r inverts the row's CDF at the uniform of
 * counter r * n + j.  Without, category c of row r gets the key p / E with E ~ Exp(1) from
 * counter r * ncat + c, and the n largest keys win (the exponential race: the same law as
 * drawing one by one and renormalising; best_keys).  The counters' words 0-1 are drawn
 * MULTINOMIAL_DRAWS at a time in vectors (ptl_philox_words64), and the keys a vector at a
 * time (race_keys_pd512 / race_keys_pd, the same bits): one draw of a 50257-word vocabulary
 * 0.87 -> 4.1x PyTorch, one thread. */
static int
multinomial_chunk(void *ctx, int64_t b, int64_t e)
{
    const MultinomialJob *j = ctx;
    void *buf = malloc((size_t)j->ncat * (j->replacement ? sizeof(double) : sizeof(KeyIndex)));
    uint64_t x[MULTINOMIAL_DRAWS];
    double kv[MULTINOMIAL_DRAWS];
    if (buf == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory in multinomial");
    }
    for (int64_t r = b; r < e; r++) {
        const double *p = j->p + r * j->ncat;
        int64_t *o = j->out + r * j->n;
        if (j->replacement) {
            double *cdf = buf, acc = 0.0;
            for (int64_t c = 0; c < j->ncat; c++) {
                acc += p[c];
                cdf[c] = acc;
            }
            for (int64_t k = 0; k < j->n; k++) {
                if (k % MULTINOMIAL_DRAWS == 0) {
                    int64_t m = j->n - k < MULTINOMIAL_DRAWS ? j->n - k : MULTINOMIAL_DRAWS;
                    ptl_philox_words64(j->seed, j->offset, r * j->n + k, m, x);
                }
                uint64_t w = x[k % MULTINOMIAL_DRAWS];
                double u = ptl_uniform_bits((uint32_t)w, (uint32_t)(w >> 32), 53) * acc;
                /* the first category whose CDF exceeds u (it has p > 0), else the last: the
                 * answer stays in [lo, lo + len), halved without a branch */
                int64_t lo = 0, len = j->ncat;
                while (len > 1) {
                    int64_t half = len / 2;
                    lo += cdf[lo + half - 1] > u ? 0 : half;
                    len -= half;
                }
                while (lo > 0 && p[lo] == 0.0) {
                    lo--;
                }
                o[k] = lo;
            }
        }
        else {
            KeyIndex *keys = buf;
            for (int64_t c0 = 0; c0 < j->ncat; c0 += MULTINOMIAL_DRAWS) {
                int64_t m = j->ncat - c0 < MULTINOMIAL_DRAWS ? j->ncat - c0 : MULTINOMIAL_DRAWS;
                int64_t v = 0;
                ptl_philox_words64(j->seed, j->offset, r * j->ncat + c0, m, x);
#ifdef PTL_HAVE_AVX2_KERNELS
                if (ptl_cpu_capability() >= PTL_CPU_AVX512) {
                    v = race_keys_pd512(x, p + c0, m, kv);
                }
                else if (ptl_cpu_capability() >= PTL_CPU_AVX2) {
                    v = race_keys_pd(x, p + c0, m, kv);
                }
#endif
                for (int64_t c = 0; c < v; c++) {
                    keys[c0 + c].key = kv[c];
                    keys[c0 + c].index = c0 + c;
                }
                for (int64_t c = c0 + v; c < c0 + m; c++) {
                    uint64_t w = x[c - c0];
                    double ex = ptl_transform_exponential(
                        ptl_uniform_open0((uint32_t)w, (uint32_t)(w >> 32)), 1.0);
                    keys[c].key = p[c] > 0.0 ? p[c] / ex : 0.0;
                    keys[c].index = c;
                }
            }
            best_keys(keys, j->ncat, j->n);
            for (int64_t k = 0; k < j->n; k++) {
                o[k] = keys[k].index;
            }
        }
    }
    free(buf);
    return 0;
}

/* Note [CUDA randperm and multinomial]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * randperm's Fisher-Yates swaps run in order, and multinomial without replacement sorts
 * each row's keys: neither is a PtlDistJob the fill kernel (random.cu) can take.  On a CUDA
 * device both run their host code (random.c, this file) on the device generator's counters
 * (Note [CUDA
 * generators] in generator.h), reading the probabilities back and writing the result to the
 * device, much as PyTorch's CUDA randperm once offloaded small n to the CPU.  So a seed gives
 * the CPU's values on either device; the cost is a synchronisation and two copies.  A device
 * kernel (keys drawn per element, then a segmented sort) is the upgrade path. */

/* multinomial(Tensor self, int num_samples, bool replacement=False): indices of categories
 * drawn from each row of self (1-D: one distribution; 2-D: one per row); a CUDA self gets a
 * CUDA result (Note [CUDA randperm and multinomial]) */
static int
multinomial_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *pf = NULL, *t = NULL, *dst = NULL;
    int64_t n = s[1].u.i;
    int replacement = s[2].u.b;
    PtlDevice cpu = ptl_device_cpu();
    PtlGenerator *gen;
    MultinomialJob j;
    if (self->dim != 1 && self->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME, "prob_dist must be 1 or 2 dim");
    }
    if (!ptl_dtype_is_floating(self->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "multinomial only supports floating-point dtypes for input, got: %s",
                             ptl_dtype_legacy_name(self->dtype));
    }
    if (n <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "cannot sample n_sample <= 0 samples");
    }
    int64_t ncat = self->sizes[self->dim - 1];
    int64_t rows = self->dim == 2 ? self->sizes[0] : 1;
    if (!replacement && n > ncat) {
        return ptl_error_set(PTL_ERR_RUNTIME, "cannot sample n_sample > prob_dist.size(-1) "
                                              "samples without replacement");
    }
    if (ncat > ((int64_t)1 << 24)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "number of categories cannot exceed 2^24");
    }
    if ((gen = ptl_random_generator_for(ptl_random_generator_arg(op, s), self->device)) == NULL ||
        (pf = self->device.type == PTL_DEVICE_CPU ? ptl_cast(self, PTL_DTYPE_FLOAT64)
                                                  : ptl_to_copy(self, PTL_DTYPE_FLOAT64, &cpu))
            == NULL) {
        return -1;
    }
    j.p = (const double *)ptl_tensor_data(pf);
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0.0;
        for (int64_t c = 0; c < ncat; c++) {
            double x = j.p[r * ncat + c];
            PTL_CHECK(isfinite(x) && x >= 0.0, PTL_ERR_RUNTIME,
                      "probability tensor contains either `inf`, `nan` or element < 0");
            sum += x;
        }
        PTL_CHECK(sum > 0.0, PTL_ERR_RUNTIME,
                  "invalid multinomial distribution (sum of probabilities <= 0)");
    }
    int64_t osizes[2] = {rows, n};
    if (self->dim == 1) {
        t = ptl_empty(1, &n, PTL_DTYPE_INT64, ptl_device_cpu());
    }
    else {
        t = ptl_empty(2, osizes, PTL_DTYPE_INT64, ptl_device_cpu());
    }
    if (t == NULL) {
        goto error;
    }
    j.out = (int64_t *)ptl_tensor_data(t);
    j.ncat = ncat;
    j.n = n;
    j.replacement = replacement;
    if (ptl_generator_reserve(gen, (uint64_t)(rows * (replacement ? n : ncat)), &j.seed,
                              &j.offset) < 0) {
        goto error;
    }
    if (rows > 0) {
        int64_t grain = MULTINOMIAL_GRAIN / (ncat + n) + 1;
        void *token = ptl_nogil_begin();
        int rc = ptl_parallel_for(0, rows, grain, multinomial_chunk, &j);
        ptl_nogil_end(token);
        if (rc < 0) {
            goto error;
        }
    }
    if (self->device.type == PTL_DEVICE_CUDA) {
        if ((dst = ptl_empty(t->dim, t->sizes, PTL_DTYPE_INT64, self->device)) == NULL ||
            ptl_copy_into(dst, t) < 0) {
            goto error;
        }
        ptl_decref(t);
        t = dst;
    }
    ptl_decref(pf);
    s[0] = ptl_iv_tensor(t);
    return 0;
error:
    ptl_xdecref(pf);
    ptl_xdecref(t);
    ptl_xdecref(dst);
    return -1;
}

static const PtlKernelReg multinomial_cpu_kernels[] = {
    {PTL_OP_multinomial, PTL_KEY_CPU, multinomial_cpu},
};
PTL_DEFINE_REGISTER(multinomial_cpu_kernels)
