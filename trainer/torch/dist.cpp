//go:build cgo && !ltshim && !ltlazy

// dist.cpp: c10d process groups for data-parallel training (see shim.h).
// Rendezvous through a TCPStore hosted by rank 0, collectives through Gloo
// (CPU tensors) or NCCL (CUDA tensors; builds compiled with LT_NCCL, which
// build-shim.sh sets where it finds a CUDA libtorch and nccl.h).
//
// Gloo's headers are not part of every libtorch: Debian's come from
// libgloo-dev, pip wheels ship none. Without them this file still compiles
// (the TCPStore, NCCL and the rest need no Gloo), and asking for the gloo
// backend fails with the reason; lt_has_dist tells which backends exist
// (-DLT_NO_GLOO builds that form where the headers exist, for its test).
#include "compat.hpp"

#if !defined(LT_NO_GLOO) && __has_include(<gloo/algorithm.h>)
#define LT_GLOO 1
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#else
#define LT_GLOO 0
#endif
#ifdef LT_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#if LT_C10D_BACKEND
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist.hpp"
#include "errors.hpp"
#include "shim.h"

#if LT_C10D_BACKEND
using lt_transport = c10d::Backend;
#else
using lt_transport = c10d::ProcessGroup;
#endif

// lt_pg is a process group with a watchdog. Gloo does not fail a
// collective that is already waiting when its peer's process dies (only the
// next one), so collectives are waited for in slices, and the wait ends
// early when the group is aborted: by lt_pg_abort (the caller's
// cancellation, e.g. a launcher's SIGTERM), or by the heartbeat thread when
// a peer stops beating (its process died or hangs) or rank 0's store goes
// away (rank 0 died).
struct lt_pg {
	c10::intrusive_ptr<c10d::Store> store;
	c10::intrusive_ptr<lt_transport> pg; // Gloo or NCCL
	int rank = 0, size = 1;
	std::chrono::milliseconds timeout{0};

	std::mutex mu;
	std::string aborted; // why, once aborted
	std::atomic<bool> is_aborted{false};
	std::atomic<bool> broken{false}; // a collective failed: Gloo state unusable
	std::thread heartbeat;
	std::mutex hb_mu;
	std::condition_variable hb_cv;
	bool hb_stop = false;
	bool hb_done = false; // the heartbeat thread has returned
	// When the heartbeat thread last heard from the store (steady clock, ns).
	// A store whose machine vanished (no reset, no answer) blocks the thread
	// in a read, so the collectives' waits watch this instead.
	std::atomic<int64_t> hb_ok{0};

	void abort(const std::string &why) {
		std::lock_guard<std::mutex> l(mu);
		if (!is_aborted) aborted = why;
		is_aborted = true;
	}
	std::string why() {
		std::lock_guard<std::mutex> l(mu);
		return aborted;
	}
};

namespace {

// DDP's default bucket size.
constexpr int64_t kBucketBytes = 25 << 20;

std::string clean(const char *what) {
	std::string s = what ? what : "";
	// c10::Error messages carry a C++ backtrace after the first line.
	auto nl = s.find("\nException raised from");
	if (nl != std::string::npos) s.resize(nl);
	return s;
}

[[noreturn]] void fail(lt_pg *g, const char *op, const std::string &why) {
	throw std::runtime_error("rank " + std::to_string(g->rank) + " of " + std::to_string(g->size) + ": " + op +
	                         " failed (a peer process exited, or stalled past the " +
	                         std::to_string(g->timeout.count() / 1000) + " s timeout): " + why);
}

// Heartbeats: every rank adds 1 to its counter in the store every period,
// through its own store connection, and watches the others' counters.
constexpr auto kBeat = std::chrono::milliseconds(500);
constexpr auto kDeadAfter = std::chrono::seconds(5);

int64_t now_ns() {
	return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
	    .count();
}

void wait(lt_pg *g, c10::intrusive_ptr<c10d::Work> w, const char *op) {
	auto start = std::chrono::steady_clock::now();
	auto nap = std::chrono::microseconds(20);
	while (!w->isCompleted()) {
		int64_t ok = g->hb_ok;
		if (ok != 0 && now_ns() - ok > std::chrono::nanoseconds(kDeadAfter).count())
			g->abort("no answer from the rendezvous store for " + std::to_string((now_ns() - ok) / 1000000000) +
			         " s (the machine of rank 0 or of the launcher hosting it is down or unreachable?)");
		if (g->is_aborted) {
			g->broken = true;
			fail(g, op, g->why());
		}
		if (std::chrono::steady_clock::now() - start > g->timeout) {
			g->broken = true;
			fail(g, op, "timed out");
		}
		std::this_thread::sleep_for(nap);
		nap = std::min(nap * 2, std::chrono::microseconds(5000));
	}
	try {
		w->wait(g->timeout);
	} catch (const c10::Error &e) {
		g->broken = true;
		fail(g, op, clean(e.what_without_backtrace()));
	} catch (const std::exception &e) {
		g->broken = true;
		fail(g, op, clean(e.what()));
	}
}

void heartbeat(lt_pg *g, std::string addr, int port, std::string prefix) {
	struct done_guard {
		lt_pg *g;
		~done_guard() {
			std::lock_guard<std::mutex> l(g->hb_mu);
			g->hb_done = true;
			g->hb_cv.notify_all();
		}
	} done{g};
	try {
		c10d::TCPStoreOptions so;
		so.port = (uint16_t)port;
		so.isServer = false;
		so.waitWorkers = false;
		so.timeout = std::chrono::milliseconds(10000);
		lts::classic_tcpstore(so);
		auto tcp = c10::make_intrusive<c10d::TCPStore>(addr, so);
		c10d::PrefixStore st(prefix + "/heartbeat", tcp);
		g->hb_ok = now_ns();
		std::vector<int64_t> last(g->size, -1);
		std::vector<std::chrono::steady_clock::time_point> seen(g->size, std::chrono::steady_clock::now());
		for (;;) {
			{
				std::unique_lock<std::mutex> l(g->hb_mu);
				if (g->hb_cv.wait_for(l, kBeat, [g] { return g->hb_stop; })) return;
			}
			st.add(std::to_string(g->rank), 1);
			auto now = std::chrono::steady_clock::now();
			g->hb_ok = now_ns();
			for (int r = 0; r < g->size; r++) {
				if (r == g->rank) continue;
				auto v = st.add(std::to_string(r), 0);
				if (v != last[r]) {
					last[r] = v;
					seen[r] = now;
				} else if (now - seen[r] > kDeadAfter) {
					g->abort("rank " + std::to_string(r) + " sent no heartbeat for " +
					         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - seen[r]).count()) +
					         " s (its process died or hangs)");
					return;
				}
			}
		}
	} catch (const std::exception &e) {
		std::string msg = clean(e.what());
		if (g->rank == 0) g->abort("heartbeat store: " + msg);
		else g->abort("lost the rendezvous store hosted by rank 0 (rank 0 died?): " + msg);
	}
}

// buckets groups tensors of one dtype and device, in order, up to kBucketBytes.
std::vector<std::vector<at::Tensor>> buckets(const std::vector<at::Tensor> &ts) {
	std::vector<std::vector<at::Tensor>> out;
	int64_t bytes = 0;
	for (auto &t : ts) {
		int64_t b = t.numel() * (int64_t)t.element_size();
		if (out.empty() || bytes + b > kBucketBytes || out.back()[0].scalar_type() != t.scalar_type() ||
		    out.back()[0].device() != t.device()) {
			out.emplace_back();
			bytes = 0;
		}
		out.back().push_back(t);
		bytes += b;
	}
	return out;
}

enum class Op { AllReduce, Broadcast };

void collective(lt_pg *g, const std::vector<at::Tensor> &ts, Op op, const char *what) {
	for (auto &bucket : buckets(ts)) {
		std::vector<at::Tensor> flat;
		for (auto &t : bucket) flat.push_back(t.detach().reshape({-1}));
		std::vector<at::Tensor> one{at::cat(flat)};
		c10::intrusive_ptr<c10d::Work> w;
		try {
			if (op == Op::AllReduce) {
				c10d::AllreduceOptions o;
				o.timeout = g->timeout;
				w = g->pg->allreduce(one, o);
			} else {
				c10d::BroadcastOptions o;
				o.rootRank = 0;
				o.timeout = g->timeout;
				w = g->pg->broadcast(one, o);
			}
		} catch (const c10::Error &e) {
			fail(g, what, clean(e.what_without_backtrace()));
		}
		wait(g, w, what);
		int64_t off = 0;
		at::NoGradGuard ng;
		for (auto &t : bucket) {
			auto n = t.numel();
			t.detach().copy_(one[0].narrow(0, off, n).view(t.sizes()));
			off += n;
		}
	}
}

// The address rank 0's TCPStore server listens on (--dist-bind). TCPStore
// binds its server socket to the wildcard address (every interface) and
// has no option to name another. From PyTorch 2.1 on it takes over a socket
// bound by its caller (TCPStoreOptions::masterListenFd), and the shim binds
// one itself. libtorch 1.13 has no such option: there, while bind_to is
// set, the bind() defined below turns TCPStore's wildcard bind into that
// address. It is set only while rank 0 constructs its store (under
// bind_mu), and every other bind() of the process (Gloo's, Go's) passes
// straight through to libc's.
#if !LT_TCPSTORE_LISTEN_FD
std::mutex bind_mu;
std::atomic<const sockaddr_storage *> bind_to{nullptr};
#endif

// store_server makes rank 0's TCPStore listening on bind (an IP address;
// empty: every interface, libtorch's default).
// It does not wait for the workers: the caller marks the run first
// (check_secret), then calls waitForWorkers.
c10::intrusive_ptr<c10d::TCPStore> store_server(const std::string &addr, const std::string &bind,
                                                const c10d::TCPStoreOptions &so) {
	auto listen = so;
	listen.waitWorkers = false;
	if (bind.empty()) return c10::make_intrusive<c10d::TCPStore>(addr, listen);
	sockaddr_storage ss{};
	auto *v4 = reinterpret_cast<sockaddr_in *>(&ss);
	auto *v6 = reinterpret_cast<sockaddr_in6 *>(&ss);
	socklen_t len = 0;
	if (inet_pton(AF_INET, bind.c_str(), &v4->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		v4->sin_port = htons(so.port);
		len = sizeof *v4;
	} else if (inet_pton(AF_INET6, bind.c_str(), &v6->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		v6->sin6_port = htons(so.port);
		len = sizeof *v6;
	} else {
		throw std::invalid_argument("store bind address " + bind + " is not an IP address");
	}
	c10::intrusive_ptr<c10d::TCPStore> st;
#if LT_TCPSTORE_LISTEN_FD
	int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) throw std::runtime_error("store socket: " + std::string(std::strerror(errno)));
	int one = 1;
	::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (::bind(fd, reinterpret_cast<const sockaddr *>(&ss), len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
		std::string why = std::strerror(errno);
		::close(fd);
		throw std::runtime_error("store socket on " + bind + ":" + std::to_string(so.port) + ": " + why);
	}
	listen.masterListenFd = fd; // the store owns it from here
	st = c10::make_intrusive<c10d::TCPStore>(addr, listen);
#else
	(void)len;
	{
		std::lock_guard<std::mutex> l(bind_mu);
		bind_to = &ss;
		try {
			st = c10::make_intrusive<c10d::TCPStore>(addr, listen);
		} catch (...) {
			bind_to = nullptr;
			throw;
		}
		bind_to = nullptr;
	}
#endif
	return st;
}

// check_secret refuses a rank whose secret differs from rank 0's. The
// group's keys are under prefix, which is named after the secret
// ("lcl[/attempt_N]/<digest>"): rank 0 marks the run there and then in the
// public key next to it ("lcl[/attempt_N]/rank0"). A rank that finds the
// public mark but not its own carries another secret: it fails now instead
// of waiting out the timeout for peers it cannot see.
void check_secret(lt_pg *g, c10d::Store &tcp, const std::string &prefix) {
	auto slash = prefix.rfind('/');
	std::string pub = (slash == std::string::npos ? std::string("lcl") : prefix.substr(0, slash)) + "/rank0";
	std::string mine = prefix + "/rank0";
	if (g->rank == 0) {
		tcp.set(mine, std::vector<uint8_t>{1});
		tcp.set(pub, std::vector<uint8_t>{1});
		return;
	}
	tcp.wait({pub}, g->timeout);
	if (!tcp.check({mine}))
		throw std::invalid_argument("rank 0 there carries another $LCL_DIST_SECRET: every rank of a run must carry "
		                            "the same secret");
}

bool loopback(const std::string &addr) {
	return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

} // namespace

namespace ltdist {

int rank(lt_pg *g) { return g->rank; }
int size(lt_pg *g) { return g->size; }
void allreduce_sum(lt_pg *g, const std::vector<at::Tensor> &ts, const char *what) {
	if (g->size > 1) collective(g, ts, Op::AllReduce, what);
}
void broadcast(lt_pg *g, const std::vector<at::Tensor> &ts, const char *what) {
	if (g->size > 1) collective(g, ts, Op::Broadcast, what);
}

} // namespace ltdist

extern "C" {

#if !LT_TCPSTORE_LISTEN_FD
// lt_bind_rewrite: libtorch 1.13 only, see store_server. While rank 0
// starts its store with --dist-bind it turns a bind() of the wildcard
// address into one of that address: 1 with the address to bind in *out
// (*outlen bytes), -1 with errno set (libtorch then tries its next
// address), 0 to bind addr as asked (every other bind of the process).
// The bind() below calls it in a linked lcl; a lazy lcl (-tags ltlazy)
// opens this library RTLD_LOCAL, where a bind() of its own would come after
// libc's in libtorch's symbol lookup, so the executable defines bind() and
// calls this function through dlsym (lazy.c).
int lt_bind_rewrite(const struct sockaddr *addr, socklen_t len, struct sockaddr_storage *out, socklen_t *outlen) noexcept {
	const sockaddr_storage *to = bind_to.load();
	if (to && addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(sockaddr_in) &&
	    reinterpret_cast<const sockaddr_in *>(addr)->sin_addr.s_addr == htonl(INADDR_ANY)) {
		if (to->ss_family != AF_INET) {
			errno = EADDRNOTAVAIL; // libtorch tries its next address
			return -1;
		}
		sockaddr_in a = *reinterpret_cast<const sockaddr_in *>(addr);
		a.sin_addr = reinterpret_cast<const sockaddr_in *>(to)->sin_addr;
		std::memcpy(out, &a, sizeof a);
		*outlen = sizeof a;
		return 1;
	}
	if (to && addr && addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(sockaddr_in6) &&
	    IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6 *>(addr)->sin6_addr)) {
		sockaddr_in6 a = *reinterpret_cast<const sockaddr_in6 *>(addr);
		if (to->ss_family == AF_INET6) {
			a.sin6_addr = reinterpret_cast<const sockaddr_in6 *>(to)->sin6_addr;
		} else {
			// libtorch's dual-stack socket: the IPv4-mapped form of the
			// address takes IPv4 connections to that address only.
			std::memset(&a.sin6_addr, 0, sizeof a.sin6_addr);
			a.sin6_addr.s6_addr[10] = a.sin6_addr.s6_addr[11] = 0xff;
			std::memcpy(&a.sin6_addr.s6_addr[12], &reinterpret_cast<const sockaddr_in *>(to)->sin_addr, 4);
		}
		std::memcpy(out, &a, sizeof a);
		*outlen = sizeof a;
		return 1;
	}
	return 0;
}

// bind: libtorch 1.13 only. Defined here, in a linked executable, it comes
// before libc's in the symbol lookup of libtorch (in libltshim.so it is
// never reached: lazy.c's is).
int bind(int fd, const struct sockaddr *addr, socklen_t len) {
	using bind_fn = int (*)(int, const struct sockaddr *, socklen_t);
	static bind_fn real = reinterpret_cast<bind_fn>(dlsym(RTLD_NEXT, "bind"));
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	sockaddr_storage a;
	socklen_t alen = 0;
	switch (lt_bind_rewrite(addr, len, &a, &alen)) {
	case -1:
		return -1;
	case 1:
		return real(fd, reinterpret_cast<const sockaddr *>(&a), alen);
	}
	return real(fd, addr, len);
}
#endif

lt_pg *lt_pg_new(const char *backend, const char *addr, int32_t port, int32_t rank, int32_t size,
                 int64_t timeout_ms, const char *iface, int32_t agent_store, const char *prefix, const char *bind,
                 char **err) {
	std::string where; // names the call in its error (set first thing: building it could throw too)
	try {
		where = "process group rendezvous at " + std::string(addr ? addr : "") + ":" + std::to_string(port) +
		        " (rank " + std::to_string(rank) + " of " + std::to_string(size) + ")";
		if (size < 1 || rank < 0 || rank >= size) throw std::invalid_argument("rank out of range");
		if (port <= 0 || port > 65535) throw std::invalid_argument("port out of range");
		auto g = std::make_unique<lt_pg>();
		g->rank = rank;
		g->size = size;
		g->timeout = std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 600000);
		c10d::TCPStoreOptions so;
		so.port = (uint16_t)port;
		so.isServer = rank == 0 && !agent_store;
		so.numWorkers = size;
		so.waitWorkers = !agent_store;
		so.timeout = g->timeout;
		lts::classic_tcpstore(so);
		auto tcp = so.isServer ? store_server(std::string(addr), bind ? bind : "", so)
		                       : c10::make_intrusive<c10d::TCPStore>(std::string(addr), so);
		std::string pre = prefix && *prefix ? prefix : "lcl";
		check_secret(g.get(), *tcp, pre);
		if (so.isServer) tcp->waitForWorkers();
		g->store = c10::make_intrusive<c10d::PrefixStore>(pre, tcp);
		std::string be = backend && *backend ? backend : "gloo";
		if (be == "gloo") {
#if LT_GLOO
			auto o = c10d::ProcessGroupGloo::Options::create(g->timeout);
			std::string ifc = iface ? iface : "";
			if (!ifc.empty())
				o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifc));
			else if (loopback(addr))
				o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
			else
				o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
			o->threads = 2;
			g->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(g->store, rank, size, o);
#else
			throw std::invalid_argument(
			    "the gloo backend is not in this build: its libtorch has no Gloo headers (pip wheels ship none; "
			    "Debian's libgloo-dev or a conda libtorch have them)" +
			    std::string(lt_has_dist() & LT_DIST_NCCL ? "; use --dist-backend nccl on CUDA devices" : ""));
#endif
		} else if (be == "nccl") {
#ifdef LT_NCCL
			auto o = c10d::ProcessGroupNCCL::Options::create();
			o->timeout = g->timeout;
			g->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(g->store, rank, size, o);
#else
			throw std::invalid_argument("the nccl backend is not in this build: it needs a CUDA libtorch and NCCL's "
			                            "nccl.h when the shim is compiled (-tags cuda, or build-shim.sh)");
#endif
		} else {
			throw std::invalid_argument("unknown backend " + be + " (want gloo or nccl)");
		}
		if (size > 1) g->heartbeat = std::thread(heartbeat, g.get(), std::string(addr), (int)port, pre);
		return g.release();
	} catch (const c10::Error &e) {
		lts::set_err(err, (where + ": " + clean(e.what_without_backtrace())).c_str());
	} catch (const std::exception &e) {
		lts::set_err(err, (where + ": " + clean(e.what())).c_str());
	} catch (...) {
		lts::set_err(err, (where + ": unknown C++ exception").c_str());
	}
	return nullptr;
}

void lt_pg_free(lt_pg *g) noexcept {
	if (!g) return;
	bool hb_running = false;
	try {
		if (g->heartbeat.joinable()) {
			bool done;
			{
				std::unique_lock<std::mutex> l(g->hb_mu);
				g->hb_stop = true;
				g->hb_cv.notify_all();
				int64_t ok = g->hb_ok;
				bool stuck = ok != 0 && now_ns() - ok > std::chrono::nanoseconds(kDeadAfter).count();
				done = g->hb_done || (!stuck && g->hb_cv.wait_for(l, std::chrono::seconds(2), [g] { return g->hb_done; }));
			}
			if (!done) {
				// Blocked reading from a store that does not answer (its
				// machine vanished): it may never return.
				g->heartbeat.detach();
				throw std::runtime_error("heartbeat thread stuck");
			}
			g->heartbeat.join();
		}
	} catch (...) {
		// join failed (std::system_error) or the heartbeat thread is stuck:
		// it may still use g.
		hb_running = true;
	}
	if (!hb_running && !g->broken) {
		delete g;
		return;
	}
	// Freed on a thread of its own, which waits as long as that takes: for
	// a heartbeat thread stuck reading from a store that does not answer to
	// return (its store calls time out after 10 s, and hb_stop ends its
	// loop), then, in a broken group, for Gloo's worker threads, which may
	// wait on a dead peer (its destructor joins them: at most the group's
	// timeout). Not leaked: a leaked TCPStore keeps its client's background
	// thread, which in libtorch 1.13 spins at full speed once the store's
	// host is gone.
	std::thread([g, hb_running] {
		if (hb_running) {
			{
				std::unique_lock<std::mutex> l(g->hb_mu);
				g->hb_cv.wait(l, [g] { return g->hb_done; });
			}
			if (g->heartbeat.joinable()) g->heartbeat.detach(); // a failed join: it has returned
		}
		g->pg.reset();
		g->store.reset();
		delete g;
	}).detach();
}

int32_t lt_has_dist(void) noexcept {
	int32_t b = 0;
#if LT_GLOO
	b |= LT_DIST_GLOO;
#endif
#ifdef LT_NCCL
	b |= LT_DIST_NCCL;
#endif
	return b;
}

int32_t lt_pg_abort(lt_pg *g, const char *why, char **err) {
	LT_TRY
	g->abort(why && *why ? why : "aborted");
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_pg_allreduce_f64(lt_pg *g, double *v, int64_t n, char **err) {
	LT_TRY
	if (n > 0) ltdist::allreduce_sum(g, {at::from_blob(v, {n}, at::kDouble)}, "all-reduce");
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_pg_broadcast_bytes(lt_pg *g, void *buf, int64_t n, char **err) {
	LT_TRY
	if (n > 0) ltdist::broadcast(g, {at::from_blob(buf, {n}, at::kByte)}, "broadcast");
	return 0;
	LT_CATCH(err, -1)
}

} // extern "C"
