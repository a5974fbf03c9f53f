// dist.hpp: the C++ interface between shim.cpp (models, the training step)
// and dist.cpp (c10d process groups), which compile separately so the
// distributed headers do not slow down or constrain the main shim.
#ifndef LCL_TORCH_DIST_HPP
#define LCL_TORCH_DIST_HPP

// The Tensor class alone, not ATen.h: dist_stub.cpp's check
// (TestDistStubCompiles) parses this header in 2.7 s instead of 6.3 s.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "shim.h"

namespace ltdist {

int rank(lt_pg *g);
int size(lt_pg *g);
// allreduce_sum sums ts over the group in place, flattened into buckets of
// at most bucket_bytes (tensors of one dtype and device per bucket).
void allreduce_sum(lt_pg *g, const std::vector<at::Tensor> &ts, const char *what);
// broadcast overwrites ts with rank 0's, bucketed like allreduce_sum.
void broadcast(lt_pg *g, const std::vector<at::Tensor> &ts, const char *what);

} // namespace ltdist

#endif
