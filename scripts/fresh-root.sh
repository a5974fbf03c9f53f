#!/usr/bin/env bash
# scripts/fresh-root.sh [DIR]: scripts/fresh-times.sh in a pristine Debian 12
# root, for a machine that is no longer fresh. The root (default DIR:
# ~/.cache/lcl/fresh12, made once with debootstrap, about 3 minutes) holds
# only what a new machine of this project's kind has before anything of lcl
# is installed — Debian's minimal base, git, make, gcc/g++, curl, Node.js and
# npm — plus the host's Go (/usr/local/go, bind-mounted read-only) and the
# host's Go settings (~/.config/go/env). Each run copies that root to a
# throw-away folder first, so every run starts with no Debian package of lcl's,
# no Go module or build cache, no Python package, no Quick, Draw! and no lcl
# cache: the installs are the package manager's real downloads and unpacking.
# What it cannot make fresh: the CPU's caches and the kernel's page cache of
# this machine, and the registries' own caches.
#   usage: scripts/fresh-root.sh [DIR]   (needs root: debootstrap, chroot, mounts)
#   env: LCL_DEBIAN_MIRROR (default http://deb.debian.org/debian)
set -euo pipefail
top=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
base=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/lcl/fresh12}
mirror=${LCL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
say() { echo "fresh-root: $*" >&2; }
[ "$(id -u)" = 0 ] || { say "needs root (debootstrap, chroot, mounts)"; exit 1; }

if [ ! -e "$base/.lcl-debootstrap" ]; then
	command -v debootstrap >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null
	say "making the pristine Debian 12 root in $base (debootstrap bookworm from $mirror)"
	rm -rf "$base"
	mkdir -p "$(dirname "$base")"
	debootstrap --variant=minbase bookworm "$base" "$mirror" >"$base.log" 2>&1 || { tail -n 20 "$base.log" >&2; say "debootstrap failed (log: $base.log)"; exit 1; }
	touch "$base/.lcl-debootstrap"
fi
if [ ! -e "$base/.lcl-fresh" ]; then
	echo "deb $mirror bookworm main" >"$base/etc/apt/sources.list"
	cp -L /etc/resolv.conf "$base/etc/resolv.conf"
	# What a new machine has before the project installs anything.
	chroot "$base" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -c \
		'apt-get update -q && apt-get install -y -q --no-install-recommends git make gcc g++ libc6-dev curl ca-certificates nodejs npm' >>"$base.log" 2>&1 ||
		{ tail -n 20 "$base.log" >&2; say "installing the base tools failed (log: $base.log)"; exit 1; }
	chroot "$base" apt-get clean
	touch "$base/.lcl-fresh"
fi

run=$(mktemp -d /var/tmp/lcl-fresh-root.XXXXXX)
trap 'rm -rf "$run"' EXIT
say "copying the root to $run (every run starts from the pristine one)"
cp -a "$base/." "$run/"
cp -L /etc/resolv.conf "$run/etc/resolv.conf"
# The machine's certificate authorities (a registry proxy may sign with its
# own), where Go, git, curl and apt look for them by default.
[ ! -e /etc/ssl/certs/ca-certificates.crt ] || cp -L /etc/ssl/certs/ca-certificates.crt "$run/etc/ssl/certs/ca-certificates.crt"
mkdir -p "$run/usr/local/go" "$run/src/repo" "$run/root/.config/go"
[ ! -e "$HOME/.config/go/env" ] || cp "$HOME/.config/go/env" "$run/root/.config/go/env"
# The checkout is cloned from a read-only view of this one: its committed
# state, as git clone of the project gives.
unshare --mount --propagation private -- /bin/sh -euc '
	run=$1 top=$2
	mount -t proc proc "$run/proc"
	mount --rbind /dev "$run/dev"
	mount --rbind /sys "$run/sys"
	mount -t tmpfs -o size=50% tmpfs "$run/dev/shm"
	mount --bind /usr/local/go "$run/usr/local/go" && mount -o remount,bind,ro "$run/usr/local/go"
	mount --bind "$top" "$run/src/repo" && mount -o remount,bind,ro "$run/src/repo"
	exec chroot "$run" /usr/bin/env -i HOME=/root TERM=dumb PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/bash -c "git config --global --add safe.directory /src/repo && /src/repo/scripts/fresh-times.sh /src/repo /root/fresh/lcl"
' sh "$run" "$top" || rc=$?
# The logs outlive the throw-away root.
logs=$base-logs/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$logs" && cp -a "$run/root/fresh/logs/." "$logs/" 2>/dev/null || true
say "logs: $logs"
exit "${rc:-0}"
