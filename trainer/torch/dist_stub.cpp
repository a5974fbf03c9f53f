//go:build ignore

// dist_stub.cpp replaces dist.cpp in a libltshim.so built by build-shim.sh
// against a libtorch whose c10d headers do not compile with dist.cpp (or
// lack Gloo): every process-group call fails with the reason, so lcl runs
// everything but data parallelism. Never compiled by go build.
#include <stdexcept>
#include <string>

#include "dist.hpp"
#include "errors.hpp"
#include "shim.h"

namespace {
const char *kWhy = "this libltshim.so was built without its c10d part (dist.cpp did not compile against this "
                   "libtorch; see build-shim.sh's log): data parallelism is unavailable";
[[noreturn]] void unavailable() { throw std::runtime_error(kWhy); }
} // namespace

namespace ltdist {
int rank(lt_pg *) { return 0; }
int size(lt_pg *) { return 1; }
void allreduce_sum(lt_pg *, const std::vector<at::Tensor> &, const char *) { unavailable(); }
void broadcast(lt_pg *, const std::vector<at::Tensor> &, const char *) { unavailable(); }
} // namespace ltdist

extern "C" {

int32_t lt_has_dist(void) noexcept { return 0; }

lt_pg *lt_pg_new(const char *, const char *, int32_t, int32_t, int32_t, int64_t, const char *, int32_t, const char *,
                 const char *, char **err) {
	LT_TRY
	unavailable();
	LT_CATCH(err, nullptr)
}
void lt_pg_free(lt_pg *) noexcept {}
int32_t lt_pg_abort(lt_pg *, const char *, char **err) {
	LT_TRY
	unavailable();
	LT_CATCH(err, -1)
}
int32_t lt_pg_allreduce_f64(lt_pg *, double *, int64_t, char **err) {
	LT_TRY
	unavailable();
	LT_CATCH(err, -1)
}
int32_t lt_pg_broadcast_bytes(lt_pg *, void *, int64_t, char **err) {
	LT_TRY
	unavailable();
	LT_CATCH(err, -1)
}

} // extern "C"
