/* pointwise_program.h -- runs a chain of elementwise operators in one pass over the data: the
 * kernel of the JIT's prim::FusionGroup (pytorchlite/jit/passes.py, fuse_pointwise).  Mirrors
 * the role of torch/csrc/jit/tensorexpr's generated loops, as an interpreter of a tiny
 * register program instead of generated code.
 *
 * Note [Pointwise programs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * Registers 0..ntensors-1 hold the input tensors (contiguous, one dtype: float32 or float64,
 * the same number of elements), registers ntensors..ntensors+nscalars-1 hold scalars, and
 * instruction i writes register ntensors+nscalars+i; the last instruction's register is the
 * output.  The data is walked in blocks of PTL_PROGRAM_BLOCK elements: each instruction runs
 * over a block held in a stack buffer, so every input is read once and the output written
 * once, whatever the length of the chain.  The arithmetic is the input dtype's, in the
 * order the chain wrote it; float32 exp, sigmoid and tanh use eager mode's AVX2 formulas
 * (native/vec_math.h), so float32 results equal eager mode's element by element, and float64
 * ones agree within an ulp (eager's float64 exp and sigmoid are vectorized differently). */
#ifndef PTL_ATEN_POINTWISE_PROGRAM_H
#define PTL_ATEN_POINTWISE_PROGRAM_H

#include <stdint.h>

#include "../c10/tensor_impl.h"

#define PTL_PROGRAM_BLOCK 256
#define PTL_PROGRAM_MAX_REGS 32

/* ORDER PROGRAM_OP: pytorchlite/jit/passes.py _PROGRAM_OPS lists the same names. */
#define PTL_FORALL_PROGRAM_OPS(_) \
    _(ADD, "add", 2)              \
    _(SUB, "sub", 2)              \
    _(MUL, "mul", 2)              \
    _(DIV, "div", 2)              \
    _(MAXIMUM, "maximum", 2)      \
    _(MINIMUM, "minimum", 2)      \
    _(NEG, "neg", 1)              \
    _(ABS, "abs", 1)              \
    _(EXP, "exp", 1)              \
    _(LOG, "log", 1)              \
    _(SQRT, "sqrt", 1)            \
    _(RSQRT, "rsqrt", 1)          \
    _(SIN, "sin", 1)              \
    _(COS, "cos", 1)              \
    _(TANH, "tanh", 1)            \
    _(SIGMOID, "sigmoid", 1)      \
    _(RELU, "relu", 1)            \
    _(RECIPROCAL, "reciprocal", 1)\
    _(SQUARE, "square", 1)

typedef enum PtlProgramOp {
#define PTL_PROGRAM_ENUM(E, NAME, ARITY) PTL_PROGRAM_##E,
    PTL_FORALL_PROGRAM_OPS(PTL_PROGRAM_ENUM)
#undef PTL_PROGRAM_ENUM
    PTL_PROGRAM_OP_COUNT
} PtlProgramOp;

typedef struct PtlProgramInstr {
    int op;   /* PtlProgramOp */
    int a, b; /* source registers (b unused by unary ops) */
} PtlProgramInstr;

/* Whether the tensors can feed one program: CPU, contiguous, all float32 or all float64, one
 * shape. */
int ptl_pointwise_program_accepts(PtlTensorImpl *const *ts, int n);

/* Runs the program (Note [Pointwise programs]) and returns its output, a new contiguous
 * tensor shaped like inputs[0] (new ref), or NULL with the error set.  Inputs are borrowed;
 * the caller has checked them (same dtype, contiguous, same numel). */
PtlTensorImpl *ptl_pointwise_program_run(const PtlProgramInstr *prog, int ninstr,
                                         PtlTensorImpl *const *inputs, int ntensors,
                                         const double *scalars, int nscalars);

#endif
