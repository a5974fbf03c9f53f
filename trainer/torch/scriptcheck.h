/* scriptcheck.h: the C ABI of the TorchScript checks (scriptcheck.hpp,
   compiled into shim.cpp). Kept apart from shim.h so the checks change
   nothing of the shim's own ABI. */
#ifndef LT_SCRIPTCHECK_H
#define LT_SCRIPTCHECK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* lt_script_check loads the TorchScript module at path on the CPU and
   checks it before lcl trains or evaluates it: unless trust_ops, that no
   function of its compilation unit calls an operator that reaches the file
   system, the network or the terminal (aten::from_file, aten::save, RPC,
   c10d, prim::Print, or an operator outside libtorch's own namespaces), and
   that its forward gives [N, classes] logits for N zero images of
   in_c x in_h x in_w, in evaluation mode (N = 1) and in training mode
   (N = 2). On failure it returns -1 and sets *err (free with free()) to a
   message naming the function and operator, or the mode and shape. The
   module's __setstate__ runs while it loads: the caller has scanned its
   code before (trainer/models). */
int32_t lt_script_check(const char *path, int32_t in_c, int32_t in_h, int32_t in_w, int32_t classes,
                        int32_t trust_ops, char **err);

#ifdef __cplusplus
}
#endif

#endif
