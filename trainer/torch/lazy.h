/*
 * lazy.h: the loader of an lcl built with -tags ltlazy (lazy.c), which
 * links no libtorch: the shim library libltshim.so (and with it libtorch)
 * is opened on the first call of a shim function, by the definitions of
 * lazy_gen.c (trainer/torch/internal/lazygen). Not part of shim.h's ABI.
 */
#ifndef LCL_TORCH_LAZY_H
#define LCL_TORCH_LAZY_H

/* lt_lazy_load opens the shim library once: $LCL_SHIM, else libltshim.so
   beside the running executable. NULL when it is open, else why not. */
const char *lt_lazy_load(void);

/* lt_lazy_fn is shim function i (lt_lazy_names[i]) of the open library;
   it opens the library first. A library that did not open, or lacks the
   function, ends the process with a message: the binding checks the ABI
   version (lt_lazy_load, lt_abi_version) before any other call. */
void *lt_lazy_fn(int i);

/* lt_lazy_sym is the address of symbol name in the open library, or NULL
   when it is not open or has no such symbol: for the few functions outside
   the ABI that tests call (losscheck.h). */
void *lt_lazy_sym(const char *name);

/* The shim functions, in lazy_gen.c's order. */
extern const char *const lt_lazy_names[];
extern const int lt_lazy_count;

#endif
