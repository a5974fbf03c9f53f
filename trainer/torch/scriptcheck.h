/* scriptcheck.h: the C ABI of the checked TorchScript modules
   (scriptcheck.hpp, compiled into shim.cpp): part of the shim's ABI
   (LT_ABI_VERSION), in a header of its own beside shim.h. */
#ifndef LT_SCRIPTCHECK_H
#define LT_SCRIPTCHECK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "shim.h"

/* lt_script is a TorchScript module loaded and checked once by
   lt_script_load, kept on the CPU: lt_model_from_script builds each of the
   run's models from a copy of it, so the file is opened (and the module's
   __setstate__ run) once, and the module trained is the module checked. */
typedef struct lt_script lt_script;

/* lt_script_load loads the TorchScript module at path on the CPU and
   checks it before lcl trains or evaluates it: unless trust_ops, that no
   function of its compilation unit calls an operator that reaches the file
   system, the network or the terminal (aten::from_file, aten::save, RPC,
   c10d, prim::Print, or an operator outside libtorch's own namespaces), and
   that its forward gives [N, classes] logits for N zero images of
   in_c x in_h x in_w, in evaluation mode (N = 1) and in training mode
   (N = 2, on a copy: the module's batch-norm statistics stay the file's).
   On failure it returns NULL and sets *err (free with free()) to a message
   naming the function and operator, or the mode and shape. The module's
   __setstate__ runs while it loads: the caller has scanned its code before
   (trainer/models). Free the result with lt_script_free. */
lt_script *lt_script_load(const char *path, int32_t in_c, int32_t in_h, int32_t in_w, int32_t classes,
                          int32_t trust_ops, char **err);
void lt_script_free(lt_script *s) LT_NOEXCEPT;

/* lt_model_from_script is lt_model_load (shim.h) on a copy of a loaded
   module instead of a file: s stays the caller's, unchanged. */
lt_model *lt_model_from_script(const lt_script *s, int32_t in_c, int32_t in_h, int32_t in_w, int32_t num_classes,
                               int32_t reinit, const char *device, char **err);

#ifdef __cplusplus
}
#endif

#endif
