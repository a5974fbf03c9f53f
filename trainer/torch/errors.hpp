// errors.hpp: shim.h's error convention for every C++ file of the shim
// (shim.cpp, dist.cpp, dist_stub.cpp): a C ABI function's body runs between
// LT_TRY and LT_CATCH(err, ret), which turn any C++ exception into the
// failure value ret and a malloc'd message in *err. Light on purpose (c10's
// exception type only): dist.cpp and dist_stub.cpp do not include torch.h.
#pragma once

#include <c10/util/Exception.h>

#include <cstring>
#include <exception>

namespace lts {

// set_err stores a copy of msg in *err (when err is not NULL), for the
// caller to free().
inline void set_err(char **err, const char *msg) {
	if (err) *err = strdup(msg ? msg : "unknown error");
}

} // namespace lts

#define LT_TRY try {
// LT_TRY_SYNCED is LT_TRY for an entry that runs libtorch kernels: it first
// brings the calling OS thread to the intra-op thread count last set
// (lts::sync_threads in common.hpp; only files that include torch use it).
#define LT_TRY_SYNCED \
	try {             \
		::lts::sync_threads();
#define LT_CATCH(err, ret)                                         \
	}                                                              \
	catch (const c10::Error &e) {                                  \
		::lts::set_err(err, e.what_without_backtrace());           \
		return ret;                                                \
	}                                                              \
	catch (const std::exception &e) {                              \
		::lts::set_err(err, e.what());                             \
		return ret;                                                \
	}                                                              \
	catch (...) {                                                  \
		::lts::set_err(err, "unknown C++ exception");              \
		return ret;                                                \
	}
