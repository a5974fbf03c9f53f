//go:build cgo && ltlazy

// lazy.c: the shim library opened on first use (lazy.h).

#define _GNU_SOURCE
#include "lazy.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static pthread_once_t lazy_once = PTHREAD_ONCE_INIT;
static void *lazy_lib;
static void **lazy_fns;
static char lazy_err[PATH_MAX + 256];
static char lazy_path[PATH_MAX];

/* The shim's lt_bind_rewrite (dist.cpp), set when the library opens; only
   a shim built against libtorch 1.13 has one. */
typedef int (*lazy_rewrite_fn)(const struct sockaddr *, socklen_t, struct sockaddr_storage *, socklen_t *);
static lazy_rewrite_fn lazy_bind_rewrite;

static void lazy_open(void) {
	const char *path = getenv("LCL_SHIM");
	if (!path || !*path) {
		const char *name = "libltshim.so";
		ssize_t n = readlink("/proc/self/exe", lazy_path, sizeof lazy_path - strlen(name) - 1);
		if (n <= 0) {
			snprintf(lazy_err, sizeof lazy_err, "cannot find the lcl executable to look for %s beside it: %s", name,
			         strerror(errno));
			return;
		}
		lazy_path[n] = 0;
		char *slash = strrchr(lazy_path, '/');
		strcpy(slash ? slash + 1 : lazy_path, name);
		path = lazy_path;
	}
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();
		snprintf(lazy_err, sizeof lazy_err, "%s", e ? e : path);
		return;
	}
	void **fns = calloc((size_t)lt_lazy_count, sizeof *fns);
	if (!fns) {
		snprintf(lazy_err, sizeof lazy_err, "out of memory");
		return;
	}
	/* A function an older shim lacks stays NULL: lt_abi_version, which
	   every shim has, tells the binding first. */
	for (int i = 0; i < lt_lazy_count; i++) fns[i] = dlsym(lib, lt_lazy_names[i]);
	__atomic_store_n(&lazy_bind_rewrite, (lazy_rewrite_fn)dlsym(lib, "lt_bind_rewrite"), __ATOMIC_RELEASE);
	lazy_fns = fns;
	lazy_lib = lib;
}

const char *lt_lazy_load(void) {
	pthread_once(&lazy_once, lazy_open);
	return lazy_lib ? NULL : lazy_err;
}

void *lt_lazy_fn(int i) {
	const char *err = lt_lazy_load();
	if (err) {
		fprintf(stderr, "lcl: the shim library did not open: %s\n", err);
		abort();
	}
	if (i < 0 || i >= lt_lazy_count || !lazy_fns[i]) {
		fprintf(stderr, "lcl: the shim library has no %s: it belongs to another lcl\n",
		        i >= 0 && i < lt_lazy_count ? lt_lazy_names[i] : "such function");
		abort();
	}
	return lazy_fns[i];
}

void *lt_lazy_sym(const char *name) {
	if (lt_lazy_load()) return NULL;
	return dlsym(lazy_lib, name);
}

/* bind: libtorch 1.13's TCPStore binds its server to the wildcard address,
   and --dist-bind narrows it by interposing bind() (dist.cpp,
   store_server). The shim library is opened RTLD_LOCAL, so its own bind()
   comes after libc's in libtorch's symbol lookup and is never called; the
   executable's comes first (exported by -Wl,--export-dynamic-symbol=bind,
   load_lazy.go). Until the shim opens, and with a shim of libtorch 2.1 or
   later (which hands TCPStore a socket it bound itself), every bind()
   goes straight to libc's. Go's own sockets make the system call
   directly and never come here. */
__attribute__((visibility("default"))) int bind(int fd, const struct sockaddr *addr, socklen_t len) {
	static int (*real)(int, const struct sockaddr *, socklen_t);
	int (*r)(int, const struct sockaddr *, socklen_t) = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
	if (!r) {
		r = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
		if (!r) {
			errno = ENOSYS;
			return -1;
		}
		__atomic_store_n(&real, r, __ATOMIC_RELEASE);
	}
	lazy_rewrite_fn rewrite = __atomic_load_n(&lazy_bind_rewrite, __ATOMIC_ACQUIRE);
	if (rewrite) {
		struct sockaddr_storage a;
		socklen_t alen = 0;
		switch (rewrite(addr, len, &a, &alen)) {
		case -1:
			return -1;
		case 1:
			return r(fd, (const struct sockaddr *)&a, alen);
		}
	}
	return r(fd, addr, len);
}
