/* graph_exec.h -- the executor of JIT graphs: a straight-line graph lowered into a flat
 * program over a frame of IValues.  Mirrors torch/csrc/jit/runtime/interpreter.cpp (its
 * instruction list over a register file), without Python.
 *
 * Note [Graph programs]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A graph is lowered once (pytorchlite/jit/_interpreter.py through src/python/jit_exec.c):
 * every value gets a slot of the frame; the graph's inputs take slots 0..ninputs-1;
 * constants (prim::Constant, and the parameters and buffers a prim::GetAttr names, resolved
 * while lowering) are IValues the program holds; every other node is a step:
 *
 *   OP      an operator handle found once by name and overload, the slots of its arguments
 *           (-1: the schema default) and of its returns; it runs through
 *           ptl_dispatcher_call, so autograd, autocast, the profiler and the tracer see it
 *           as in eager mode
 *   LIST    prim::ListConstruct into an int, float or tensor list
 *   UNPACK  prim::ListUnpack of a tensor or int list
 *   FUSED   prim::FusionGroup: its pointwise program (Note [Pointwise programs]) when the
 *           inputs suit it and no gradient is wanted, else its subgraph's own program
 *
 * A run copies the constants into a fresh frame (borrowed), borrows the inputs, runs the
 * steps in order (each step's returns are owned by their slots) and hands the outputs back
 * as new references; every slot a step wrote is released at the end, also on failure.  A
 * program is read-only while it runs, so threads may run one at once. */
#ifndef PTL_JIT_GRAPH_EXEC_H
#define PTL_JIT_GRAPH_EXEC_H

#include "../aten/dispatcher.h"
#include "../aten/ivalue.h"
#include "../aten/pointwise_program.h"

typedef struct PtlJitProgram PtlJitProgram;

/* A program of nslots slots whose first ninputs are the inputs; NULL with the error set. */
PtlJitProgram *ptl_jit_program_new(int nslots, int ninputs);
void ptl_jit_program_free(PtlJitProgram *p);

/* The builders: 0, or -1 with a RuntimeError that says what cannot be lowered.  Slots are
 * checked against the program's size; a slot is written by at most one step or constant. */

/* Holds a copy of v in slot: a tensor is retained, a string or list copied; a Layout or
 * MemoryFormat pointer is borrowed (its owner outlives the program). */
int ptl_jit_program_set_constant(PtlJitProgram *p, int slot, PtlIValue v);
/* args[i]: the slot of argument i, or -1 for its schema default; nargs <= the schema's. */
int ptl_jit_program_add_op(PtlJitProgram *p, const PtlOperator *op, const int *args, int nargs,
                           const int *rets, int nrets);
/* tag: PTL_IV_INTLIST, PTL_IV_DOUBLELIST or PTL_IV_TENSORLIST (entries may be None). */
int ptl_jit_program_add_list(PtlJitProgram *p, int tag, const int *items, int nitems, int out);
int ptl_jit_program_add_unpack(PtlJitProgram *p, int list, const int *outs, int nouts);
/* fallback runs the nodes of the group one by one; it is borrowed and outlives p. */
int ptl_jit_program_add_fusion(PtlJitProgram *p, const PtlProgramInstr *prog, int ninstr,
                               const double *scalars, int nscalars,
                               const PtlJitProgram *fallback, const int *inputs, int ninputs,
                               int out);
int ptl_jit_program_set_outputs(PtlJitProgram *p, const int *slots, int n);

int ptl_jit_program_num_inputs(const PtlJitProgram *p);
int ptl_jit_program_num_outputs(const PtlJitProgram *p);

/* Runs p on inputs[0..ninputs) (borrowed) and writes its outputs to outputs[0..noutputs) as
 * owned values (release them with ptl_jit_value_release); 0, or -1 with the error set and
 * nothing written. */
int ptl_jit_program_run(const PtlJitProgram *p, const PtlIValue *inputs, PtlIValue *outputs);

/* Releases what an owned value holds (a tensor, a list and its tensors, a string). */
void ptl_jit_value_release(PtlIValue *v);

#endif
