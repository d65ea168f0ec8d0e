/* gemm_plan.c -- the host side of the GEMM kernels, in every build: the plan (Note [CUDA GEMM
 * plan] in gemm_plan.h), the hook gemm.c calls for CUDA products, and the kernels' emulation
 * on the host that the CPU tests run (the same tile loads, thread and warp ownership, edge
 * masks and grid loops as gemm.cu, over host memory). */
#include "gemm_plan.h"

#include <stdlib.h>
#include <string.h>

#include "../c10/error.h"
#include "cuda_api.h"

static int64_t emulation_sms, emulation_max_grid;
static int64_t emulation_counts[PTL_CUDA_GEMM_KINDS];

void
ptl_cuda_set_gemm_emulation(int64_t sms, int64_t max_grid_yz)
{
    ptl_device_gemm_emulation = sms > 0;
    ptl_device_gemm_hook = ptl_cuda_gemm;
    emulation_sms = sms;
    emulation_max_grid = max_grid_yz;
    memset(emulation_counts, 0, sizeof(emulation_counts));
}

void
ptl_cuda_gemm_emulation_counts(int64_t counts[PTL_CUDA_GEMM_KINDS])
{
    memcpy(counts, emulation_counts, sizeof(emulation_counts));
}

static int64_t
ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* 1 when both operands take a fast path's 16-byte vectors (Note [CUDA GEMM plan]) */
static int
operands_vector_aligned(const PtlDeviceGemmArgs *a, int a_k_unit, int b_n_unit, int vec)
{
    const int itemsize = (int)ptl_dtype_itemsize((PtlDtype)a->dtype);
    const int a_ok = a_k_unit ? ptl_gemm_vector_aligned(a, a->a, a->acs, a->ars, a->m, a->a_bs,
                                                        vec, itemsize)
                              : ptl_gemm_vector_aligned(a, a->a, a->ars, a->acs, a->k, a->a_bs,
                                                        vec, itemsize);
    const int b_ok = b_n_unit ? ptl_gemm_vector_aligned(a, a->b, a->bcs, a->brs, a->k, a->b_bs,
                                                        vec, itemsize)
                              : ptl_gemm_vector_aligned(a, a->b, a->brs, a->bcs, a->n, a->b_bs,
                                                        vec, itemsize);
    return a_ok && b_ok;
}

PtlCudaGemmPlan
ptl_cuda_gemm_plan(const PtlDeviceGemmArgs *a, int64_t sms, int64_t max_grid_yz)
{
    PtlCudaGemmPlan p;
    memset(&p, 0, sizeof(p));
    /* the layout flags: walk the unit-stride dimension (k for a row-major A, n for B) */
    const int a_k_unit = a->acs == 1 || a->ars != 1;
    const int b_n_unit = a->bcs == 1 || a->brs != 1;
    const int half = a->dtype == PTL_DTYPE_FLOAT16 || a->dtype == PTL_DTYPE_BFLOAT16;
    const int vec = 16 / (int)ptl_dtype_itemsize((PtlDtype)a->dtype);
    if (half && operands_vector_aligned(a, a_k_unit, b_n_unit, vec)) {
        p = (PtlCudaGemmPlan){.kind = PTL_CUDA_GEMM_MMA, .bm = PTL_GEMM_MMA_BM,
                              .bn = PTL_GEMM_MMA_BN, .bk = PTL_GEMM_MMA_BK, .tm = 0, .tn = 0,
                              .threads = PTL_GEMM_MMA_THREADS, .vec = vec};
    }
    else if (half) {
        p = (PtlCudaGemmPlan){.kind = PTL_CUDA_GEMM_TENSOR_CORE, .bm = 64, .bn = 64, .bk = 32,
                              .tm = 0, .tn = 0, .threads = 128};
    }
    else if (operands_vector_aligned(a, a_k_unit, b_n_unit, vec)) {
        p = (PtlCudaGemmPlan){.kind = PTL_CUDA_GEMM_SIMT_VECTOR, .bm = PTL_GEMM_VECTOR_BM,
                              .bn = PTL_GEMM_VECTOR_BN, .bk = PTL_GEMM_VECTOR_BK,
                              .tm = PTL_GEMM_VECTOR_TM, .tn = PTL_GEMM_VECTOR_TN,
                              .threads = 256, .vec = vec};
    }
    else if (a->dtype == PTL_DTYPE_FLOAT32 &&
             ceil_div(a->m, 128) * ceil_div(a->n, 64) * a->batch >= sms) {
        p = (PtlCudaGemmPlan){.kind = PTL_CUDA_GEMM_SIMT_LARGE, .bm = 128, .bn = 64, .bk = 16,
                              .tm = 8, .tn = 4, .threads = 256};
    }
    else {
        p = (PtlCudaGemmPlan){.kind = PTL_CUDA_GEMM_SIMT_SMALL, .bm = 64, .bn = 64, .bk = 16,
                              .tm = 4, .tn = 4, .threads = 256};
    }
    p.a_k_unit = a_k_unit;
    p.b_n_unit = b_n_unit;
    p.grid_x = ceil_div(a->n, p.bn);
    p.grid_y = ceil_div(a->m, p.bm) < max_grid_yz ? ceil_div(a->m, p.bm) : max_grid_yz;
    p.grid_z = a->batch < max_grid_yz ? a->batch : max_grid_yz;
    return p;
}

static void
store(char *base, int dt, int64_t off, double v)
{
    switch (dt) {
    case PTL_DTYPE_FLOAT16: ((ptl_half *)base)[off] = ptl_f_to_half((float)v); break;
    case PTL_DTYPE_BFLOAT16: ((ptl_bf16 *)base)[off] = ptl_f_to_bf16((float)v); break;
    case PTL_DTYPE_FLOAT32: ((float *)base)[off] = (float)v; break;
    default: ((double *)base)[off] = v; break;
    }
}

static double
load(const char *base, int dt, int64_t off)
{
    return off < 0 ? 0.0 : ptl_load_double(base + off * (int64_t)ptl_dtype_itemsize(dt),
                                           (PtlDtype)dt);
}

/* The block's tiles and accumulators, in host memory (the kernels' shared memory and
 * registers): ta[kk bm + r], tb[kk bn + cn], acc[r bn + c]; the mma kernel's shared tiles
 * sa, sb laid out as ptl_gemm_mma_smem_index; how many times each element of the tiles was
 * loaded (ca, cb) and of the block's C written (cc). */
typedef struct EmuBlock {
    double *ta, *tb, *acc, *sa, *sb;
    int *ca, *cb, *cc;
} EmuBlock;

/* one k-step's loads of block (z, y, x) by the strided kernels: every thread's elements of
 * both tiles */
static void
emu_load(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p, EmuBlock *blk, int64_t z,
         int64_t row0, int64_t col0, int64_t k0)
{
    const int64_t abo = ptl_gemm_batch_offset(a, a->a_bs, z);
    const int64_t bbo = ptl_gemm_batch_offset(a, a->b_bs, z);
    for (int tid = 0; tid < p->threads; tid++) {
        for (int e = tid; e < p->bm * p->bk; e += p->threads) {
            int r, kk;
            ptl_gemm_tile_a(p, e, &r, &kk);
            blk->ta[kk * p->bm + r] = load(a->a, a->dtype, ptl_gemm_a_at(a, abo, row0 + r, k0 + kk));
            blk->ca[kk * p->bm + r]++;
        }
        for (int e = tid; e < p->bk * p->bn; e += p->threads) {
            int kk, cn;
            ptl_gemm_tile_b(p, e, &kk, &cn);
            blk->tb[kk * p->bn + cn] = load(a->b, a->dtype, ptl_gemm_b_at(a, bbo, k0 + kk, col0 + cn));
            blk->cb[kk * p->bn + cn]++;
        }
    }
}

/* One operand's tile of one k-step as the fast paths load it: thread tid's vectors tid,
 * tid + threads, ... (ptl_gemm_tile_vector), the elements past the edges zero.  is_b: B's
 * tile (rows of n), else A's (rows of m); into the logical tile t[kk mn_tile + mn] or, for
 * the mma kernel, the shared tile s. */
static void
emu_load_vectors(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p, int is_b, int64_t boff,
                 int64_t mn0, int64_t k0, double *t, double *s, int *count)
{
    const int k_unit = is_b ? !p->b_n_unit : p->a_k_unit;
    const int mn_tile = is_b ? p->bn : p->bm;
    const int64_t mn_size = is_b ? a->n : a->m;
    for (int tid = 0; tid < p->threads; tid++) {
        for (int v = tid; v < mn_tile * p->bk / p->vec; v += p->threads) {
            int mn, kk;
            ptl_gemm_tile_vector(v, k_unit, mn_tile, p->bk, p->vec, &mn, &kk);
            const int valid = ptl_gemm_vector_valid(mn0 + mn, k0 + kk, k_unit, mn_size, a->k,
                                                    p->vec);
            int64_t off = -1;
            if (valid > 0) {
                off = is_b ? ptl_gemm_b_at(a, boff, k0 + kk, mn0 + mn)
                           : ptl_gemm_a_at(a, boff, mn0 + mn, k0 + kk);
            }
            for (int e = 0; e < p->vec; e++) {
                const int emn = mn + (k_unit ? 0 : e), ekk = kk + (k_unit ? e : 0);
                const double x = e < valid ? load(is_b ? a->b : a->a, a->dtype, off + e) : 0.0;
                if (s != NULL) {
                    s[ptl_gemm_mma_smem_index(k_unit, emn, ekk)] = x;
                }
                else {
                    t[ekk * mn_tile + emn] = x;
                }
                count[ekk * mn_tile + emn]++;
            }
        }
    }
}

/* ldmatrix.x4 on the shared tile s: lane l supplies the start of row l % 8 of matrix l / 8;
 * lane t receives in register q the two elements of matrix q's row t / 4 at columns
 * 2 (t % 4), 2 (t % 4) + 1, or with trans those of its column t / 4 at rows 2 (t % 4) and
 * 2 (t % 4) + 1.  The PTX ISA's definition, with the matrix rows as shared indices. */
static void
emu_ldmatrix_x4(const double *s, const int starts[32], int trans, double regs[32][4][2])
{
    for (int t = 0; t < 32; t++) {
        for (int q = 0; q < 4; q++) {
            for (int h = 0; h < 2; h++) {
                regs[t][q][h] = trans ? s[starts[q * 8 + 2 * (t % 4) + h] + t / 4]
                                      : s[starts[q * 8 + t / 4] + 2 * (t % 4) + h];
            }
        }
    }
}

/* one k-step's products of the mma kernel: each warp's ldmatrix loads, the fragments as the
 * PTX ISA lays them out, and the m16n8k16 products summed in float into the accumulators of
 * the C elements the lanes own */
static void
emu_mma_products(const PtlCudaGemmPlan *p, EmuBlock *blk)
{
    const int a_k_unit = p->a_k_unit, b_k_unit = !p->b_n_unit;
    double regs[32][4][2], fa[4][16][16], fb[4][16][8];
    int starts[32];
    for (int w = 0; w < p->threads / 32; w++) {
        const int wr = ptl_gemm_mma_warp_row(w), wc = ptl_gemm_mma_warp_col(w);
        for (int ks = 0; ks < p->bk; ks += 16) {
            for (int mi = 0; mi < 4; mi++) {
                for (int lane = 0; lane < 32; lane++) {
                    int m, kk;
                    ptl_gemm_ldmatrix_a(lane, a_k_unit, wr + mi * 16, ks, &m, &kk);
                    starts[lane] = ptl_gemm_mma_smem_index(a_k_unit, m, kk);
                }
                emu_ldmatrix_x4(blk->sa, starts, !a_k_unit, regs);
                for (int lane = 0; lane < 32; lane++) {
                    for (int reg = 0; reg < 4; reg++) {
                        for (int h = 0; h < 2; h++) {
                            int r, kk;
                            ptl_gemm_mma_a_elem(lane, reg, h, &r, &kk);
                            fa[mi][r][kk] = regs[lane][reg][h];
                        }
                    }
                }
            }
            for (int pair = 0; pair < 2; pair++) {
                for (int lane = 0; lane < 32; lane++) {
                    int n, kk;
                    ptl_gemm_ldmatrix_b(lane, b_k_unit, wc + pair * 16, ks, &n, &kk);
                    starts[lane] = ptl_gemm_mma_smem_index(b_k_unit, n, kk);
                }
                emu_ldmatrix_x4(blk->sb, starts, !b_k_unit, regs);
                for (int lane = 0; lane < 32; lane++) {
                    for (int reg = 0; reg < 2; reg++) {
                        for (int h = 0; h < 2; h++) {
                            int kk, c;
                            ptl_gemm_mma_b_elem(lane, reg, h, &kk, &c);
                            fb[2 * pair][kk][c] = regs[lane][reg][h];
                            fb[2 * pair + 1][kk][c] = regs[lane][2 + reg][h];
                        }
                    }
                }
            }
            for (int f = 0; f < 16; f++) {
                const int mi = f / 4, ni = f % 4;
                for (int lane = 0; lane < 32; lane++) {
                    for (int reg = 0; reg < 4; reg++) {
                        int r, c;
                        ptl_gemm_mma_c_elem(lane, reg, &r, &c);
                        double *acc = &blk->acc[(wr + mi * 16 + r) * p->bn + wc + ni * 8 + c];
                        float sum = (float)*acc;
                        for (int kk = 0; kk < 16; kk++) {
                            sum += (float)fa[mi][r][kk] * (float)fb[ni][kk][c];
                        }
                        *acc = sum;
                    }
                }
            }
        }
    }
}

/* one k-step's products: each SIMT thread's micro-tile, or each warp's 16 x 16 fragments */
static void
emu_products(const PtlCudaGemmPlan *p, EmuBlock *blk)
{
    if (p->kind == PTL_CUDA_GEMM_MMA) {
        emu_mma_products(p, blk);
        return;
    }
    if (p->kind != PTL_CUDA_GEMM_TENSOR_CORE) {
        const int quads = p->kind == PTL_CUDA_GEMM_SIMT_VECTOR;
        for (int tid = 0; tid < p->threads; tid++) {
            for (int i = 0; i < p->tm; i++) {
                for (int j = 0; j < p->tn; j++) {
                    int r = quads ? ptl_gemm_quad_row(p, tid, i) : ptl_gemm_thread_row(p, tid, i);
                    int c = quads ? ptl_gemm_quad_col(p, tid, j) : ptl_gemm_thread_col(p, tid, j);
                    for (int kk = 0; kk < p->bk; kk++) {
                        blk->acc[r * p->bn + c] +=
                            blk->ta[kk * p->bm + r] * blk->tb[kk * p->bn + c];
                    }
                }
            }
        }
        return;
    }
    for (int w = 0; w < p->threads / 32; w++) {
        for (int f = 0; f < 4; f++) {
            int r0 = ptl_gemm_warp_row(w, f / 2), c0 = ptl_gemm_warp_col(w, f % 2);
            for (int r = r0; r < r0 + 16; r++) {
                for (int c = c0; c < c0 + 16; c++) {
                    float s = (float)blk->acc[r * p->bn + c];
                    for (int kk = 0; kk < p->bk; kk++) {
                        s += (float)blk->ta[kk * p->bm + r] * (float)blk->tb[kk * p->bn + c];
                    }
                    blk->acc[r * p->bn + c] = s;
                }
            }
        }
    }
}

/* C's element (row0 + r, col0 + c) of batch z from the block's accumulator, inside m x n */
static void
emu_write(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p, EmuBlock *blk, int64_t z,
          int64_t row0, int64_t col0, int r, int c)
{
    blk->cc[r * p->bn + c]++;
    if (row0 + r >= a->m || col0 + c >= a->n) {
        return;
    }
    const int64_t cbo = ptl_gemm_batch_offset(a, a->c_bs, z);
    const int64_t sbo = ptl_gemm_batch_offset(a, a->s_bs, z);
    double s = a->beta == 0 ? 0.0
                            : load(a->s, a->dtype, sbo + (row0 + r) * a->srs + (col0 + c) * a->scs);
    store(a->c, a->dtype, cbo + (row0 + r) * a->crs + (col0 + c) * a->ccs,
          ptl_gemm_result(a, blk->acc[r * p->bn + c], s));
}

/* -1 with an error unless each of the n counts is 1 (what is loaded or owned once) */
static int
check_once(const int *count, int n, const char *what)
{
    for (int i = 0; i < n; i++) {
        if (count[i] != 1) {
            return ptl_error_set(PTL_ERR_RUNTIME, "gemm emulation: %s element %d taken %d times",
                                 what, i, count[i]);
        }
    }
    return 0;
}

/* every thread's (or lane's) C elements of the block, through the kernel's ownership */
static void
emu_epilogue(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p, EmuBlock *blk, int64_t z,
             int64_t row0, int64_t col0)
{
    if (p->kind == PTL_CUDA_GEMM_MMA) {
        for (int w = 0; w < p->threads / 32; w++) {
            for (int f = 0; f < 16; f++) {
                for (int lane = 0; lane < 32; lane++) {
                    for (int reg = 0; reg < 4; reg++) {
                        int r, c;
                        ptl_gemm_mma_c_elem(lane, reg, &r, &c);
                        emu_write(a, p, blk, z, row0, col0,
                                  ptl_gemm_mma_warp_row(w) + (f / 4) * 16 + r,
                                  ptl_gemm_mma_warp_col(w) + (f % 4) * 8 + c);
                    }
                }
            }
        }
        return;
    }
    for (int tid = 0; tid < p->threads; tid++) {
        if (p->kind == PTL_CUDA_GEMM_TENSOR_CORE) {
            for (int e = tid; e < p->bm * p->bn; e += p->threads) {
                emu_write(a, p, blk, z, row0, col0, e / p->bn, e % p->bn);
            }
            continue;
        }
        for (int i = 0; i < p->tm; i++) {
            for (int j = 0; j < p->tn; j++) {
                if (p->kind == PTL_CUDA_GEMM_SIMT_VECTOR) {
                    emu_write(a, p, blk, z, row0, col0, ptl_gemm_quad_row(p, tid, i),
                              ptl_gemm_quad_col(p, tid, j));
                }
                else {
                    emu_write(a, p, blk, z, row0, col0, ptl_gemm_thread_row(p, tid, i),
                              ptl_gemm_thread_col(p, tid, j));
                }
            }
        }
    }
}

static int
emu_block(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p, EmuBlock *blk, int64_t z,
          int64_t by, int64_t bx)
{
    const int64_t row0 = by * p->bm, col0 = bx * p->bn;
    const int mma = p->kind == PTL_CUDA_GEMM_MMA;
    memset(blk->acc, 0, sizeof(double) * (size_t)(p->bm * p->bn));
    for (int64_t k0 = 0; k0 < a->k; k0 += p->bk) {
        memset(blk->ca, 0, sizeof(int) * (size_t)(p->bm * p->bk));
        memset(blk->cb, 0, sizeof(int) * (size_t)(p->bk * p->bn));
        if (p->vec > 0) {
            emu_load_vectors(a, p, 0, ptl_gemm_batch_offset(a, a->a_bs, z), row0, k0, blk->ta,
                             mma ? blk->sa : NULL, blk->ca);
            emu_load_vectors(a, p, 1, ptl_gemm_batch_offset(a, a->b_bs, z), col0, k0, blk->tb,
                             mma ? blk->sb : NULL, blk->cb);
        }
        else {
            emu_load(a, p, blk, z, row0, col0, k0);
        }
        if (check_once(blk->ca, p->bm * p->bk, "A tile") < 0 ||
            check_once(blk->cb, p->bk * p->bn, "B tile") < 0) {
            return -1;
        }
        emu_products(p, blk);
    }
    memset(blk->cc, 0, sizeof(int) * (size_t)(p->bm * p->bn));
    emu_epilogue(a, p, blk, z, row0, col0);
    return check_once(blk->cc, p->bm * p->bn, "C");
}

static void
emu_block_free(EmuBlock *blk)
{
    free(blk->ta);
    free(blk->tb);
    free(blk->acc);
    free(blk->sa);
    free(blk->sb);
    free(blk->ca);
    free(blk->cb);
    free(blk->cc);
}

/* the kernels' grid: block (x, y, z) of the launch loops y and z by the grid's size */
static int
emulate(const PtlDeviceGemmArgs *a, const PtlCudaGemmPlan *p)
{
    const size_t tile_a = (size_t)(p->bm * p->bk), tile_b = (size_t)(p->bk * p->bn);
    const size_t tile_c = (size_t)(p->bm * p->bn);
    const size_t smem = (size_t)PTL_GEMM_MMA_TILE_ELEMS(1) > (size_t)PTL_GEMM_MMA_TILE_ELEMS(0)
                            ? (size_t)PTL_GEMM_MMA_TILE_ELEMS(1)
                            : (size_t)PTL_GEMM_MMA_TILE_ELEMS(0);
    EmuBlock blk = {calloc(tile_a, sizeof(double)), calloc(tile_b, sizeof(double)),
                    calloc(tile_c, sizeof(double)), calloc(smem, sizeof(double)),
                    calloc(smem, sizeof(double)), calloc(tile_a, sizeof(int)),
                    calloc(tile_b, sizeof(int)), calloc(tile_c, sizeof(int))};
    if (blk.ta == NULL || blk.tb == NULL || blk.acc == NULL || blk.sa == NULL ||
        blk.sb == NULL || blk.ca == NULL || blk.cb == NULL || blk.cc == NULL) {
        emu_block_free(&blk);
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    for (int64_t gz = 0; gz < p->grid_z; gz++) {
        for (int64_t gy = 0; gy < p->grid_y; gy++) {
            for (int64_t x = 0; x < p->grid_x; x++) {
                for (int64_t z = gz; z < a->batch; z += p->grid_z) {
                    for (int64_t y = gy; y * p->bm < a->m; y += p->grid_y) {
                        if (emu_block(a, p, &blk, z, y, x) < 0) {
                            emu_block_free(&blk);
                            return -1;
                        }
                    }
                }
            }
        }
    }
    emulation_counts[p->kind]++;
    emu_block_free(&blk);
    return 0;
}

int
ptl_cuda_gemm(const PtlDeviceGemmArgs *a)
{
    if (a->dtype != PTL_DTYPE_FLOAT32 && a->dtype != PTL_DTYPE_FLOAT64 &&
        a->dtype != PTL_DTYPE_FLOAT16 && a->dtype != PTL_DTYPE_BFLOAT16) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"addmm_cuda\" not implemented for '%s'",
                             ptl_dtype_legacy_name((PtlDtype)a->dtype));
    }
    if (ptl_device_gemm_emulation) {
        PtlCudaGemmPlan p = ptl_cuda_gemm_plan(a, emulation_sms, emulation_max_grid);
        return emulate(a, &p);
    }
    /* the reductions' tuning knows the device's SM count (a quarter of its target blocks) */
    PtlCudaGemmPlan p = ptl_cuda_gemm_plan(a, ptl_cuda_reduce_tuning().target_blocks / 4,
                                           PTL_CUDA_GEMM_MAX_GRID_YZ);
    return ptl_cuda_gemm_launch(a, &p);
}
