/* unary_f8_erf.h -- the float64 vector formulas of unary.c's erf, erfc and erfinv, in double
 * lanes of kind S (pd, pd512): DEFINE_UNARY_VEC_ERF_D(S) defines ptl_vm_erfd_S, ptl_vm_erfcd_S,
 * ptl_vm_erfinvd_S and their maps for unary.c's vector loop tables, from vec_math.h's double
 * log and exp pieces (the macro expands where unary.c instantiates its double formulas, after
 * vec_math.h).  unary.c's and special.c's (ndtr, log_ndtr, erfcx through the vector erfc). */
#ifndef PTL_ATEN_NATIVE_UNARY_F8_ERF_H
#define PTL_ATEN_NATIVE_UNARY_F8_ERF_H

/* Note [Vector float64 erf, erfc, erfinv]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * libm's erf and erfc per element and ptl_erfinv_d (a float32 start and two Newton steps on
 * libm) made these 0.18-0.53x and 0.05-0.07x PyTorch's loops (1e6 float64, one thread).  The
 * fits below are Chebyshev interpolants (mpmath, 40 digits) converted to powers of a local
 * variable; "ulp" errors are against mpmath (tests/aten/test_vec_erf_f64.py).
 *
 * erf (erfd): |x| < 1: x + x P(x^2 - 1/2) (P of degree 12, 1.1e-17 absolute), one FMA.
 * 1 <= |x|: 1 - erfc(|x|), x's sign put back, |x| clamped at 6 (erf rounds to +-1 from 5.93),
 * erfc from ptl_erf_table_coef: 15 intervals of width 1/3 on [1, 6), the lane's interval i =
 * floor(3 (a - 1)), d = a - its centre (exact: both within a factor 2), a degree-15
 * polynomial (relative error 8e-16 below 5, 6e-14 above, where erfc < 1.5e-12 and only its
 * absolute value counts); P is the table's 16th column, so each lane runs one polynomial with
 * its own coefficients.  A coefficient per lane: a two-register permute (AVX-512); on AVX2
 * two coefficients a 16-byte load from the table by interval and a 4x2 transpose (four scalar
 * loads a coefficient took 1.55x as long on Zen 3, a gather 2.5x; a gather took 8x the four
 * loads' time on Zen 4).
 * Measured 0.82 ulp.
 *
 * erfc (erfcd): |x| < 1/2: 1 - (x + x P), from x = 1/4 on as 1/2 - ((x - 1/2) + x P) (x - 1/2
 * exact), so that the rounding of erf's sum is that of a number below 1/4.  x >= 1/2:
 * e^(-x^2) erfcx(x), erfcx on [1/2, 8) by 16 intervals [2^k (1 + j/4), 2^k (1 + (j + 1)/4))
 * (the index is the exponent and the top two mantissa bits, the centre sets the third: d
 * exact), degree 13, c0 as a double plus its rest; on [8, 27.5] as H(1/x^2 - 0.0085) / x, H
 * = x erfcx(x) of degree 9.  e^(-x^2): x^2 = h + l exactly (FMA), n = round(-h log2(e)), rh
 * = -h - n ln2_hi exact (ln2_hi has 32 bits), rl = -l - n ln2_lo, e^(rh + rl) = 1 + rh + m
 * with m = rl + r^2 P(r) (Note [Vector exp]'s Taylor terms).  Then (c0 + t)(1 + rh + m) =
 * c0 + c0 rh + (c0 m + t (1 + rh + m)) with c0 rh exact (FMA) and its sum with c0 a fast
 * two-sum: the only rounding of the result's size is the last addition (and, above 8, the
 * division by x).  2^n in two steps (n reaches -1091: subnormal results round once).  x <=
 * -1/2: 2 - erfc(-x).  x is clamped at 27.5 (0 from 27.23 on): inf gives 0, -inf 2, NaN
 * NaN.  Measured 1.45 ulp (near 8: the division), subnormal results included.
 *
 * erfinv (erfinvd): a = |y|, erfinv(a) = a F(w), w = -log((1 - a)(1 + a)) by the double log
 * (ptl_vm_log_normal, under an ulp; (1 - a) is exact from a = 1/2, and below it the product's
 * rounding moves F by less than 3e-17 relative), F analytic in w and fitted in four pieces
 * (tools/fit_erfinv_f64.py): powers of w below w = 1.5 (degree 14), of w - 3.875 up to 6.25
 * (20), then of r - 3.25 up to r = sqrt(w) = 4 and of r - 5 up to r = 6.01 (a = 1 - 2^-53
 * gives 6.0035; 20 each), r carried with its rounding error (w - r^2) / 2r.  Each piece is c0
 * + t Q(t) + c0's rest: t Q(t) an exact product summed with c0 by a fast two-sum, then a s +
 * a e, so that the only rounding of the result's size is the last.  No erf, no table and no
 * exp: the start and Halley step on erf this replaced (a float64 log to 1.3e-10, a start to
 * 4e-9, erf(x0) from ptl_erf_table_coef's per-lane coefficients, e^(x0^2)) ran 0.49-0.56x
 * PyTorch's time on AVX2 (Zen 3), where each coefficient of a lane's interval is four scalar
 * loads; now 0.60-0.72 (tanh(3 randn)) and 0.86-0.98 (uniform) of PyTorch's time, and the
 * double log alone is 40% of it.  Each lane runs the pieces its vector needs (a branch per
 * piece; picking coefficients per lane by blends was 10-40% slower).  +-1 gives +-inf,
 * |y| > 1 and NaN NaN, -0 -0.  Measured 1.02 ulp (before: 1.33).
 *
 * AVX2 and AVX-512 give the same bits.  Strided data and PTL_CPU_CAPABILITY=default take the
 * portable loops: libm's erf and erfc, and scalar_math.h's ptl_erfinv_d for erfinv. */
#include "../special_tables.h"
#include "vec_math.h"

#ifdef PTL_HAVE_AVX2_KERNELS
/* ptl_erf_small_coef, ptl_erfcx_coef, ptl_erfcx_far_coef and PTL_ERFCX_FAR_C0_HI / _LO:
 * special_tables.h's (special_fast_math.h's scalar twin ptl_sp_erfc_d reads them too) */
/* erfc(a) on the 15 intervals [1 + i / 3, 1 + (i + 1) / 3), i = 0..14, as sum c_k d^k,
 * d = a - the interval's centre (i / 3 + 7 / 6 in doubles, by an FMA), degree 15, and (column 15)
 * ptl_erf_small_coef's polynomial: row r holds c_(15 - r) of every column */
static const double ptl_erf_table_coef[16][16] = {
    {7.547610742848554e-06, -5.561743374801916e-07, -2.750208538141678e-06, 4.991792637703495e-07,
     6.390767626674853e-07, -1.077182417270613e-07, -1.0479109567943185e-07,
     5.255753077486441e-09, 1.1375536860901795e-08, 1.4524179768575997e-09,
     -4.551587466377329e-10, -1.8654860784523416e-10, -3.1721795835289765e-11,
     -3.303410971834606e-12, -2.3393710640972644e-13, 0.0},
    {-5.941304857954414e-06, 1.3922892292432279e-05, 8.555370565459032e-07, -4.2695499419517e-06,
     -2.0110860971015493e-07, 8.30170793005705e-07, 1.0657801912927345e-07, -9.13920278556034e-08,
     -2.6768489015795264e-08, 1.8352568002320696e-09, 2.2234893204725468e-09,
     5.296166411822571e-10, 7.1350212587306e-11, 6.364709526344053e-12, 4.0004513252526523e-13,
     0.0},
    {-5.429412931077811e-05, -1.7957183808262703e-05, 2.082060676615477e-05,
     5.883820235151962e-06, -4.690834862046384e-06, -1.6529651276126923e-06,
     4.946398267294989e-07, 3.016929306776552e-07, 1.7363375347968614e-08, -2.014913134225824e-08,
     -7.051324968247133e-09, -1.2285261827744393e-09, -1.3698024081565014e-10,
     -1.0607144074333741e-11, -5.936206071346468e-13, 0.0},
    {0.0001133332281567511, -7.768238108763086e-05, -4.739288380277595e-05, 1.887260051074846e-05,
     1.408090226919919e-05, -1.2712432402780211e-06, -2.480630734688919e-06,
     -4.438157408319732e-07, 1.2892662930998058e-07, 7.62157176383607e-08, 1.751090015349106e-08,
     2.459345899533589e-09, 2.358853659101069e-10, 1.6223212421230366e-11, 8.220870439331332e-13,
     5.958930743134941e-11},
    {0.00024078664992308995, 0.00025444844239186864, -5.286427214842675e-05,
     -8.632789537347422e-05, -5.1370073547584455e-06, 1.564995270606365e-05,
     5.061472350060727e-06, -4.4470433059563133e-07, -6.622126776097115e-07,
     -2.0355014205288096e-07, -3.596432977684406e-08, -4.257098133872947e-09,
     -3.5840653176700147e-10, -2.2145541506596808e-11, -1.023696007281617e-12,
     -7.798543850549947e-10},
    {-0.001056995347615222, 9.291410902471235e-05, 0.0004193850874338301, 8.117697224244284e-05,
     -7.880134975758621e-05, -4.038353709199095e-05, -1.25959410741431e-06, 4.641018691744798e-06,
     1.9414914355385447e-06, 4.2994654726214836e-07, 6.245160329126259e-08, 6.400203093350257e-09,
     4.796977053371347e-10, 2.685671925083559e-11, 1.13883941583337e-12, 9.387629307975112e-09},
    {-0.00010129558231298338, -0.0017098195523052367, -0.0005312432166553182,
     0.00033213328579229865, 0.00025028538635129416, 3.149476431536118e-05,
     -2.6499302010152094e-05, -1.533076825495869e-05, -4.222461475710112e-06,
     -7.465759836395581e-07, -9.247595608323626e-08, -8.355836699857592e-09,
     -5.635533165052619e-10, -2.878999513903001e-11, -1.1254055034216754e-12,
     -1.0420369433085271e-07},
    {0.006078549011819118, 0.0023626776230725646, -0.001263351630646233, -0.0012661951122754278,
     -0.0002606701736238899, 0.0001267677959523625, 0.00010148899952998085,
     3.4259175409613204e-05, 7.288474245186773e-06, 1.0811249512217277e-06,
     1.1686925691607853e-07, 9.433753426710161e-09, 5.773621266591677e-10, 2.707006294649487e-11,
     9.795840837371242e-13, 1.0536449530022297e-06},
    {-0.00758378329719968, 0.004743053201186443, 0.005379130431761849, 0.0014272262370694467,
     -0.0005424100613282426, -0.0005724592700991579, -0.00023101139765445476,
     -5.8192750619272015e-05, -1.0214942419220486e-05, -1.3086804197287567e-06,
     -1.254512619813537e-07, -9.137382905235589e-09, -5.109117582108909e-10,
     -2.209185698632872e-11, -7.427614309102005e-13, -9.614808686849139e-06},
    {-0.0180441903421583, -0.01932617199885628, -0.005609721373164655, 0.002301199755425947,
     0.0027984901570484396, 0.0013007128732484949, 0.00037984344331980886, 7.774424639057391e-05,
     1.1670612691766456e-05, 1.3163911638236525e-06, 1.1322925981796145e-07,
     7.500503915023381e-09, 3.853058643202603e-10, 1.5429110959168804e-11, 4.835109039527544e-13,
     7.829649525455366e-05},
    {0.05711375632719496, 0.014866286152953646, -0.010250960792410472, -0.011977469559800134,
     -0.006117348213573858, -0.002018094834628191, -0.0004731572144653096, -8.211628223939324e-05,
     -1.0782060221531471e-05, -1.0854980562861055e-06, -8.454270269154224e-08,
     -5.1259145025796255e-09, -2.430669737783416e-10, -9.046332926076602e-12,
     -2.64978312950155e-13, -0.0005611894221159944},
    {-0.01562518086074896, 0.04459885845886107, 0.044528240298663056, 0.023809480974959506,
     0.008622375078479483, 0.002269745931290597, 0.00044850106147708316, 6.771781083303383e-05,
     7.899240967285966e-06, 7.171688454452485e-07, 5.094297832243201e-08, 2.842177107154177e-09,
     1.2491054827939412e-10, 4.334372832133273e-12, 1.189676471506634e-13, 0.0034802744966656173},
    {-0.1660733508628179, -0.13875200409423427, -0.07467694031091933, -0.02885804650610479,
     -0.008350089549685387, -0.0018476129583371748, -0.0003164804335744349,
     -4.2295509756180796e-05, -4.4336975388006416e-06, -3.659445092975778e-07,
     -2.3848860962797743e-08, -1.2298707930716217e-09, -5.027164222124749e-11,
     -1.6309576823105782e-12, -4.2042879136218124e-14, -0.018283884489152906},
    {0.33750390659217827, 0.17839543383544407, 0.07177686495903897, 0.02236020821996199,
     0.005445710575881774, 0.0010431172790612093, 0.00015777887504731303, 1.8897993720846738e-05,
     1.7960379462460525e-06, 1.3564664677422568e-07, 8.150876531589104e-09, 3.90031928300966e-10,
     1.4873582375109702e-11, 4.5228238248953664e-13, 1.0972250975901566e-14, 0.07940998675593483},
    {-0.28928906279329564, -0.11893028922362937, -0.03915101725038489, -0.01032009610152092,
     -0.0021782842303527095, -0.00036815903966866214, -4.98249079096778e-05,
     -5.399426777384783e-06, -4.6853163815114423e-07, -3.2555195225814175e-08,
     -1.81130589590869e-09, -8.069626102778555e-11, -2.8787578790533738e-12,
     -8.223316045262916e-14, -1.8809573101534948e-15, -0.2810721780454342},
    {0.0989601540194058, 0.033894853524689274, 0.009521891184098836, 0.0021830447373622545,
     0.0004069520174449589, 6.151089035272801e-05, 7.522468307632629e-06, 7.430983723414128e-07,
     5.921618510425537e-08, 3.802659887259368e-09, 1.9661604415428876e-10, 8.179618113006672e-12,
     2.7364020317558555e-13, 7.357847917974381e-15, 1.5895335000276766e-16, -0.03453126133013269}};
/* The coefficient of each lane's interval (in 0..15, PTL_ERF_IDX) from a row of 16: four
 * loads (AVX2: the gather took 8x their time on AMD Zen 4), a two-table permute (AVX-512, the
 * row in two registers) */
typedef struct PtlErfIdx {
    long long i[4];
} PtlErfIdx;
PTL_AVX2 static inline PtlErfIdx
ptl_erf_idx_pd(__m256i v)
{
    PtlErfIdx r;
    _mm256_storeu_si256((__m256i *)r.i, v);
    return r;
}
PTL_AVX512 static inline __m512i
ptl_erf_idx_pd512(__m512i v)
{
    return v;
}
#define PTL_ERF_IDX(S) PTL_ERF_IDX_##S
#define PTL_ERF_IDX_pd PtlErfIdx
#define PTL_ERF_IDX_pd512 __m512i
/* ptl_vm_poly_split_S(t, c, n) = sum c[k] t^(n-1-k) as two Horner chains in t^2 (even and
 * odd powers: half the latency), for these formulas and the includer's own polynomials;
 * instantiated by the includer per kind before DEFINE_UNARY_VEC_ERF_D */
#define DEFINE_VM_POLY_SPLIT(S)                                                           \
    PTL_VATTR(S) static inline PTL_VT(S)                                                  \
        ptl_vm_poly_split_##S(PTL_VT(S) t, const double *c, size_t n)                     \
    {                                                                                     \
        PTL_VT(S) t2 = PTL_V(S, mul)(t, t);                                               \
        PTL_VT(S) a = PTL_V(S, set1)(c[0]), b = PTL_V(S, set1)(c[1]);                     \
        for (size_t i = 2; i + 1 < n; i += 2) {                                           \
            a = PTL_V(S, fmadd)(a, t2, PTL_V(S, set1)(c[i]));                             \
            b = PTL_V(S, fmadd)(b, t2, PTL_V(S, set1)(c[i + 1]));                         \
        }                                                                                 \
        if (n % 2 == 1) {   /* c[n - 1] ends the even chain */                            \
            return PTL_V(S, fmadd)(b, t, PTL_V(S, fmadd)(a, t2, PTL_V(S, set1)(c[n - 1]))); \
        }                                                                                 \
        return PTL_V(S, fmadd)(a, t, b);                                                  \
    }
#define PTL_ERF_POLY2(S, t, coef) ptl_vm_poly_split_##S(t, coef, PTL_VM_COUNT(coef))
#define PTL_ERF_PICK(S, row, idx) PTL_ERF_PICK_##S(row, idx)
#define PTL_ERF_PICK_pd(row, ix)                                                          \
    _mm256_set_pd((row)[(ix).i[3]], (row)[(ix).i[2]], (row)[(ix).i[1]], (row)[(ix).i[0]])
#define PTL_ERF_PICK_pd512(row, idx)                                                      \
    _mm512_permutex2var_pd(_mm512_loadu_pd(row), idx, _mm512_loadu_pd((row) + 8))
/* ptl_erf_table_coef by interval: row i holds interval i's column (c15 first), so that an
 * AVX2 lane takes two coefficients of its interval by one 16-byte load.  Filled from
 * ptl_erf_table_coef by unary.c's registration (ptl_erf_by_interval_fill), before any kernel
 * runs. */
extern double ptl_erf_by_interval[16][16];
/* *co, *ce = rows r and r + 1 (r even) of ptl_erf_table_coef at each lane's interval: AVX2
 * transposes the lanes' 16-byte pairs (two loads and two shuffles a coefficient, where four
 * scalar loads took five instructions: erf 1e6 float64 5.7 -> 3.7 ms on Zen 3); AVX-512
 * permutes the rows */
PTL_AVX2 static inline void
ptl_erf_pick_pair_pd(int r, PtlErfIdx ix, __m256d *co, __m256d *ce)
{
    __m256d t0 = _mm256_insertf128_pd(
        _mm256_castpd128_pd256(_mm_loadu_pd(&ptl_erf_by_interval[ix.i[0]][r])),
        _mm_loadu_pd(&ptl_erf_by_interval[ix.i[2]][r]), 1);
    __m256d t1 = _mm256_insertf128_pd(
        _mm256_castpd128_pd256(_mm_loadu_pd(&ptl_erf_by_interval[ix.i[1]][r])),
        _mm_loadu_pd(&ptl_erf_by_interval[ix.i[3]][r]), 1);
    *co = _mm256_unpacklo_pd(t0, t1);
    *ce = _mm256_unpackhi_pd(t0, t1);
}
PTL_AVX512 static inline void
ptl_erf_pick_pair_pd512(int r, __m512i idx, __m512d *co, __m512d *ce)
{
    *co = PTL_ERF_PICK_pd512(ptl_erf_table_coef[r], idx);
    *ce = PTL_ERF_PICK_pd512(ptl_erf_table_coef[r + 1], idx);
}
#define PTL_ERF_SQRTPI_2 0.88622692545275801365
/* erfinv(a) = a F(w), w = -log((1 - a)(1 + a)), by tools/fit_erfinv_f64.py (Note [Vector
 * float64 erf, erfc, erfinv]) */
/* F(w) on [0, 1.5]: c0, its rest, then the powers 14 down to 1 of w */
static const double ptl_erfinv_small_coef[] = {
    0.886226925452758, -3.8341307457697146e-17, -1.6330418378847443e-12, 1.8993572753635846e-11,
    -3.0612062327535676e-11, -5.029964311896609e-10, 7.317096482149844e-10,
    2.2811401466777285e-08, -3.7305734506027354e-08, -1.012549754528157e-06,
    2.019987336704994e-06, 4.661144075444338e-05, -0.00012804329431555955, -0.00233510164160508,
    0.011549342038270577, 0.2320136665346545};
/* F(w) on [1.5, 6.25]: c0, its rest, then the powers 20 down to 1 of w - 3.875 */
static const double ptl_erfinv_w_coef[] = {
    1.8301223755790132, -8.391677291801761e-17, -7.013085477068784e-19, 4.132421662635714e-18,
    2.802441118135648e-17, -4.1796669996506847e-16, 1.4694972422291158e-15,
    1.1779035565931953e-14, -1.780333807609776e-13, 7.564245309277578e-13,
    4.254398488010489e-12, -7.894366720236284e-11, 3.947757332253136e-10,
    1.4224735886073606e-09, -3.528942037991534e-08, 2.116467323079332e-07,
    3.1653815596336544e-07, -1.5818178257553443e-05, 0.00012867609118700167,
    -0.0002658525861884694, -0.007133120957863165, 0.23014944138099322};
/* F on r = sqrt(w) in [2.5, 4]: c0, its rest, then the powers 20 down to 1 of r - 3.25 */
static const double ptl_erfinv_r_coef[] = {
    3.0838856104922208, -8.717498657592625e-17, 7.680200479077053e-09, -1.5305397964152548e-08,
    -2.091453334773126e-08, 1.3158663683192966e-07, -2.4549818963339823e-07,
    -2.761716223816241e-08, 1.4815977874022539e-06, -3.985705945648173e-06,
    2.93257845538535e-06, 1.2465028224217455e-05, -4.732068066544697e-05, 6.828711739251955e-05,
    2.4031512865758357e-05, -0.0003550378137852452, 0.0009532893415794137,
    -0.0016882755354488555, 0.00249144209795696, -0.0037512085082247342, 0.005370914553555033,
    1.0052589676941655};
/* F on r in [3.99, 6.01]: c0, its rest, then the powers 20 down to 1 of r - 5 */
static const double ptl_erfinv_far_coef[] = {
    4.849906401408584, -8.25220929251163e-17, -8.386079927953242e-13, 5.88490133757229e-12,
    -1.6210012527392883e-11, 1.469872389278344e-11, 6.066972996359728e-11,
    -3.8067824604214605e-10, 1.3265490517350083e-09, -3.534296025905102e-09,
    7.813797701443031e-09, -1.521353320494232e-08, 2.9022106408937218e-08,
    -6.757279877137549e-08, 2.2905185526440073e-07, -9.930254796537954e-07,
    4.5260526812513625e-06, -1.96817711977443e-05, 7.599527808399826e-05,
    -0.00021503011979910516, -0.00013871931837973613, 1.0103004648645448};
#define DEFINE_UNARY_VEC_ERF_D(S)                                                         \
    /* (erf(x) - x) / x for |x| <= 1 */                                                   \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erf_small_d_##S(PTL_VT(S) x)              \
    {                                                                                     \
        PTL_VT(S) d = PTL_V(S, fmsub)(x, x, PTL_V(S, set1)(0.5));                         \
        return PTL_ERF_POLY2(S, d, ptl_erf_small_coef);                                     \
    }                                                                                     \
    /* erfcx(a) = *c0 + *t for a in [0.5, 8) (*c0 the interval's c0, *t the rest) */      \
    PTL_VATTR(S) static inline void                                                       \
        ptl_vm_erfcx_near_##S(PTL_VT(S) a, PTL_VT(S) *c0, PTL_VT(S) *t)                   \
    {                                                                                     \
        PTL_VIT(S) bits = PTL_VTOI(S, a);                                                 \
        PTL_ERF_IDX(S) idx = ptl_erf_idx_##S(                                             \
            PTL_VI(S, sub)(PTL_VI(S, srli)(bits, 50), PTL_VI_SET1(S)(4088)));             \
        PTL_VIT(S) cb = PTL_VSI(S, or)(PTL_VSI(S, and)(bits, PTL_VI_SET1(S)(-(1LL << 50))), \
                                       PTL_VI_SET1(S)(1LL << 49));                        \
        PTL_VT(S) d = PTL_V(S, sub)(a, PTL_VFROMI(S, cb));                                \
        PTL_VT(S) p = PTL_ERF_PICK(S, ptl_erfcx_coef[0], idx);                            \
        for (int r = 1; r < 13; r++) {                                                    \
            p = PTL_V(S, fmadd)(p, d, PTL_ERF_PICK(S, ptl_erfcx_coef[r], idx));           \
        }                                                                                 \
        *t = PTL_V(S, fmadd)(p, d, PTL_ERF_PICK(S, ptl_erfcx_coef[14], idx));             \
        *c0 = PTL_ERF_PICK(S, ptl_erfcx_coef[13], idx);                                   \
    }                                                                                     \
    /* for a in [0, 6]: (erf(a) - a) / a below 1, erfc(a) from 1 on (to 8e-16 relative   \
     * below 5, 6e-14 above), by ptl_erf_table_coef (no exp) */                           \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erf_table_##S(PTL_VT(S) a)                \
    {                                                                                     \
        const PTL_VT(S) magic = PTL_V(S, set1)(PTL_VM_MAGIC_pd), one = PTL_V(S, set1)(1.0); \
        PTL_VMT(S) small = PTL_VCMP(S, a, one, _CMP_LT_OQ);                               \
        PTL_VT(S) i = PTL_V(S, mul)(PTL_V(S, sub)(a, one), PTL_V(S, set1)(3.0));          \
        i = PTL_V(S, min)(PTL_VFLOOR(S, i), PTL_V(S, set1)(14.0));                        \
        i = PTL_VSEL(S, small, i, PTL_V(S, set1)(15.0));                                  \
        PTL_ERF_IDX(S) idx = ptl_erf_idx_##S(PTL_VI(S, sub)(                              \
            PTL_VTOI(S, PTL_V(S, add)(i, magic)), PTL_VTOI(S, magic)));                   \
        PTL_VT(S) c = PTL_V(S, fmadd)(i, PTL_V(S, set1)(1.0 / 3), PTL_V(S, set1)(7.0 / 6)); \
        PTL_VT(S) d = PTL_VSEL(S, small, PTL_V(S, sub)(a, c),                             \
                               PTL_V(S, fmsub)(a, a, PTL_V(S, set1)(0.5)));               \
        /* two Horner chains in d^2 (odd and even powers): half the latency */            \
        PTL_VT(S) d2 = PTL_V(S, mul)(d, d);                                               \
        PTL_VT(S) po, pe, co, ce;                                                         \
        ptl_erf_pick_pair_##S(0, idx, &po, &pe);                                          \
        for (int r = 2; r < 16; r += 2) {                                                 \
            ptl_erf_pick_pair_##S(r, idx, &co, &ce);                                      \
            po = PTL_V(S, fmadd)(po, d2, co);                                             \
            pe = PTL_V(S, fmadd)(pe, d2, ce);                                             \
        }                                                                                 \
        return PTL_V(S, fmadd)(po, d, pe);                                                \
    }                                                                                     \
    /* erfc(a) for a in [0.5, 27.5]: e^(-a^2) (c0 + t), e^(-a^2) = 2^n (1 + rh + m) */    \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erfc_big_##S(PTL_VT(S) a)                 \
    {                                                                                     \
        const PTL_VT(S) magic = PTL_V(S, set1)(PTL_VM_MAGIC_pd);                          \
        const PTL_VT(S) eight = PTL_V(S, set1)(8.0), one = PTL_V(S, set1)(1.0);           \
        PTL_VT(S) c0, t;                                                                  \
        a = PTL_V(S, max)(a, PTL_V(S, set1)(0.5));                                        \
        ptl_vm_erfcx_near_##S(PTL_V(S, min)(a, PTL_V(S, set1)(0x1.fffffffffffffp2)), &c0, &t); \
        PTL_VMT(S) far = PTL_VCMP(S, a, eight, _CMP_GE_OQ);                               \
        int any_far = PTL_VBITS(S, far) != 0;                                             \
        if (any_far) {                                                                    \
            PTL_VT(S) af = PTL_V(S, max)(a, eight);                                       \
            PTL_VT(S) u = PTL_V(S, div)(one, PTL_V(S, mul)(af, af));                      \
            PTL_VT(S) du = PTL_V(S, sub)(u, PTL_V(S, set1)(0.0085));                      \
            PTL_VT(S) q = PTL_VM_POLY(S, du, ptl_erfcx_far_coef);                         \
            q = PTL_V(S, fmadd)(q, du, PTL_V(S, set1)(PTL_ERFCX_FAR_C0_LO));              \
            c0 = PTL_VSEL(S, far, c0, PTL_V(S, set1)(PTL_ERFCX_FAR_C0_HI));               \
            t = PTL_VSEL(S, far, t, q);                                                   \
        }                                                                                 \
        PTL_VT(S) h = PTL_V(S, mul)(a, a), l = PTL_V(S, fmsub)(a, a, h);                  \
        PTL_VT(S) k = PTL_V(S, fnmadd)(h, PTL_V(S, set1)(PTL_VM_LOG2E_pd), magic);        \
        PTL_VT(S) n = PTL_V(S, sub)(k, magic);                                            \
        PTL_VT(S) rh = PTL_V(S, fnmsub)(n, PTL_V(S, set1)(PTL_VM_LN2_HI_pd), h);          \
        PTL_VT(S) rl = PTL_V(S, fnmsub)(n, PTL_V(S, set1)(PTL_VM_LN2_LO_pd), l);          \
        PTL_VT(S) r = PTL_V(S, add)(rh, rl);                                              \
        PTL_VT(S) m = PTL_V(S, fmadd)(ptl_vm_exp_pair_poly_##S(r), PTL_V(S, mul)(r, r), rl); \
        /* (c0 + t)(1 + rh + m) = c0 + c0 rh + (c0 m + t (1 + rh + m)), c0 rh and its sum \
         * with c0 (|c0 rh| < c0) kept exact */                                           \
        PTL_VT(S) ah = PTL_V(S, mul)(c0, rh), al = PTL_V(S, fmsub)(c0, rh, ah);           \
        PTL_VT(S) sh = PTL_V(S, add)(c0, ah);                                             \
        PTL_VT(S) se = PTL_V(S, add)(PTL_V(S, sub)(c0, sh), ah);                          \
        PTL_VT(S) rest = PTL_V(S, fmadd)(t, PTL_V(S, add)(rh, m), t);                     \
        rest = PTL_V(S, add)(PTL_V(S, fmadd)(c0, m, al), rest);                           \
        PTL_VT(S) y = PTL_V(S, add)(sh, PTL_V(S, add)(se, rest));                         \
        if (any_far) {                                                                    \
            y = PTL_V(S, div)(y, PTL_VSEL(S, far, one, a));                               \
        }                                                                                 \
        /* 2^n in two steps where it leaves the normal range (n down to -1076) */         \
        PTL_VT(S) n1 = PTL_VFLOOR(S, PTL_V(S, mul)(n, PTL_V(S, set1)(0.5)));              \
        y = PTL_V(S, mul)(y, ptl_vm_pow2i_##S(n1));                                       \
        return PTL_V(S, mul)(y, ptl_vm_pow2i_##S(PTL_V(S, sub)(n, n1)));                  \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erfd_##S(PTL_VT(S) x)                     \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0), one = PTL_V(S, set1)(1.0);           \
        PTL_VT(S) a = PTL_V(S, andnot)(sign, x);                                          \
        PTL_VT(S) q = ptl_vm_erf_table_##S(PTL_V(S, min)(a, PTL_V(S, set1)(6.0)));        \
        PTL_VT(S) y = PTL_V(S, or)(PTL_V(S, sub)(one, q), PTL_V(S, and)(sign, x));        \
        y = PTL_VSEL(S, PTL_VCMP(S, a, one, _CMP_LT_OQ), y, PTL_V(S, fmadd)(x, q, x));    \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erfcd_##S(PTL_VT(S) x)                    \
    {                                                                                     \
        const PTL_VT(S) half = PTL_V(S, set1)(0.5), one = PTL_V(S, set1)(1.0);            \
        const PTL_VT(S) zero = PTL_V(S, setzero)();                                       \
        PTL_VT(S) a = PTL_V(S, andnot)(PTL_V(S, set1)(-0.0), x);                          \
        /* 1 - erf(x) below 1/2, as 1/2 - ((x - 1/2) + x P) from 1/4 on (x - 1/2 exact) */ \
        PTL_VT(S) c = PTL_VSEL(S, PTL_VCMP(S, x, PTL_V(S, set1)(0.25), _CMP_GE_OQ), zero, half); \
        PTL_VT(S) v = PTL_V(S, fmadd)(x, ptl_vm_erf_small_d_##S(PTL_V(S, min)(a, half)),  \
                                      PTL_V(S, sub)(x, c));                               \
        PTL_VT(S) y = PTL_V(S, sub)(PTL_V(S, sub)(one, c), v);                            \
        PTL_VMT(S) big = PTL_VCMP(S, a, half, _CMP_GE_OQ);                                \
        if (PTL_VBITS(S, big) != 0) {                                                     \
            PTL_VT(S) e = ptl_vm_erfc_big_##S(PTL_V(S, min)(a, PTL_V(S, set1)(27.5)));     \
            PTL_VMT(S) neg = PTL_VCMP(S, x, zero, _CMP_LT_OQ);                            \
            e = PTL_VSEL(S, neg, e, PTL_V(S, sub)(PTL_V(S, set1)(2.0), e));               \
            y = PTL_VSEL(S, big, y, e);                                                   \
        }                                                                                 \
        return PTL_VSEL(S, PTL_VCMP(S, x, x, _CMP_UNORD_Q), y, x);                        \
    }                                                                                     \
    /* a F on the lanes of `on`, acc elsewhere: t the variable less the piece's centre,   \
     * coef = {c0, its rest, the other terms highest power first}, n of them.  F = c0 +   \
     * t Q(t) + rest as s + e, t Q(t) an exact product and s its sum with c0 (|t Q| < c0, \
     * a fast two-sum), then a s + a e: one rounding of the result's size */              \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erfinv_piece_##S(                          \
        PTL_VT(S) a, PTL_VT(S) t, const double *coef, size_t n, PTL_VMT(S) on,            \
        PTL_VT(S) acc)                                                                    \
    {                                                                                     \
        const PTL_VT(S) c0 = PTL_V(S, set1)(coef[0]);                                     \
        PTL_VT(S) q = ptl_vm_poly_split_##S(t, coef + 2, n - 2);                          \
        PTL_VT(S) ph = PTL_V(S, mul)(t, q), pl = PTL_V(S, fmsub)(t, q, ph);               \
        PTL_VT(S) s = PTL_V(S, add)(c0, ph);                                              \
        PTL_VT(S) e = PTL_V(S, add)(PTL_V(S, add)(PTL_V(S, sub)(c0, s), ph),              \
                                    PTL_V(S, add)(pl, PTL_V(S, set1)(coef[1])));          \
        PTL_VT(S) r = PTL_V(S, fmadd)(a, s, PTL_V(S, mul)(a, e));                         \
        return PTL_VSEL(S, on, acc, r);                                                   \
    }                                                                                     \
    /* the piece of lanes on whose variable is r = sqrt(w) (+ its rounding error dr)      \
     * less centre c, r - c exact */                                                     \
    PTL_VATTR(S) static inline PTL_VT(S) ptl_vm_erfinv_root_piece_##S(                     \
        PTL_VT(S) a, PTL_VT(S) r, PTL_VT(S) dr, double c, const double *coef, size_t n,   \
        PTL_VMT(S) on, PTL_VT(S) acc)                                                     \
    {                                                                                     \
        PTL_VT(S) t = PTL_V(S, add)(PTL_V(S, sub)(r, PTL_V(S, set1)(c)), dr);             \
        return ptl_vm_erfinv_piece_##S(a, t, coef, n, on, acc);                           \
    }                                                                                     \
    PTL_VATTR(S) __attribute__((always_inline)) static inline PTL_VT(S)                   \
        ptl_vm_erfinvd_##S(PTL_VT(S) y)                                                   \
    {                                                                                     \
        const PTL_VT(S) sign = PTL_V(S, set1)(-0.0), one = PTL_V(S, set1)(1.0);           \
        const PTL_VT(S) zero = PTL_V(S, setzero)(), four = PTL_V(S, set1)(4.0);           \
        PTL_VT(S) a = PTL_V(S, andnot)(sign, y);                                          \
        PTL_VT(S) v = PTL_V(S, mul)(PTL_V(S, sub)(one, a), PTL_V(S, add)(one, a));        \
        PTL_VT(S) w = PTL_V(S, sub)(                                                      \
            zero, ptl_vm_log_normal_##S(PTL_V(S, max)(v, PTL_V(S, set1)(DBL_MIN))));      \
        PTL_VT(S) x = zero;                                                               \
        PTL_VMT(S) small = PTL_VCMP(S, w, PTL_V(S, set1)(1.5), _CMP_LT_OQ);               \
        PTL_VMT(S) mid = PTL_VCMP(S, w, PTL_V(S, set1)(6.25), _CMP_LT_OQ);                \
        if (PTL_VBITS(S, small) != 0) {                                                   \
            x = ptl_vm_erfinv_piece_##S(a, w, ptl_erfinv_small_coef,                      \
                                        PTL_VM_COUNT(ptl_erfinv_small_coef), small, x);   \
        }                                                                                 \
        if (PTL_VBITS(S, mid) != PTL_VBITS(S, small)) {                                   \
            mid = PTL_VMAND(S, mid, PTL_VCMP(S, w, PTL_V(S, set1)(1.5), _CMP_GE_OQ));     \
            x = ptl_vm_erfinv_piece_##S(a, PTL_V(S, sub)(w, PTL_V(S, set1)(3.875)),       \
                                        ptl_erfinv_w_coef, PTL_VM_COUNT(ptl_erfinv_w_coef), \
                                        mid, x);                                          \
        }                                                                                 \
        PTL_VMT(S) big = PTL_VCMP(S, w, PTL_V(S, set1)(6.25), _CMP_GE_OQ);                \
        if (PTL_VBITS(S, big) != 0) {                                                     \
            /* dr = (w - r^2) / 2r to a fifth (1/2r at the centres 3.25 and 5): dr is     \
             * below half an ulp of r */                                                  \
            PTL_VT(S) r = PTL_V(S, sqrt)(w), e = PTL_V(S, fnmadd)(r, r, w);               \
            PTL_VMT(S) far = PTL_VCMP(S, r, four, _CMP_GE_OQ);                            \
            PTL_VMT(S) near = PTL_VMAND(S, PTL_VCMP(S, r, four, _CMP_LT_OQ), big);        \
            if (PTL_VBITS(S, near) != 0) {                                                \
                x = ptl_vm_erfinv_root_piece_##S(a, r, PTL_V(S, mul)(e, PTL_V(S, set1)(1.0 / 6.5)), \
                                                 3.25, ptl_erfinv_r_coef,                 \
                                                 PTL_VM_COUNT(ptl_erfinv_r_coef), near, x); \
            }                                                                             \
            if (PTL_VBITS(S, far) != 0) {                                                 \
                x = ptl_vm_erfinv_root_piece_##S(a, r, PTL_V(S, mul)(e, PTL_V(S, set1)(0.1)), \
                                                 5.0, ptl_erfinv_far_coef,                \
                                                 PTL_VM_COUNT(ptl_erfinv_far_coef), far, x); \
            }                                                                             \
        }                                                                                 \
        x = PTL_VSEL(S, PTL_VCMP(S, a, one, _CMP_EQ_OQ), x, PTL_V(S, set1)(INFINITY));    \
        x = PTL_VSEL(S, PTL_VCMP(S, a, one, _CMP_NLE_UQ), x, PTL_V(S, set1)(NAN));        \
        return PTL_V(S, or)(x, PTL_V(S, and)(sign, y));                                   \
    }                                                                                     \
    PTL_VM_DEFINE_MAP(erfd, S)                                                            \
    PTL_VM_DEFINE_MAP(erfcd, S)                                                           \
    PTL_VM_DEFINE_MAP(erfinvd, S)

#endif

#endif
