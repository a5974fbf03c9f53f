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
#include <unistd.h>

static pthread_once_t lazy_once = PTHREAD_ONCE_INIT;
static void *lazy_lib;
static void **lazy_fns;
static char lazy_err[PATH_MAX + 256];
static char lazy_path[PATH_MAX];

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
