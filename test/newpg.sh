#!/usr/bin/env bash
# test/newpg.sh — the newest PostgreSQL major version that Debian's unstable
# suite carries as a source package (postgresql-NN), built from its upstream
# tarball into a private prefix, for dp_pg's suites on a second version.
#
#   bash test/newpg.sh             prints the prefix's bin directory (last line)
#   bash test/newpg.sh --packages  prints the Debian packages the build needs
#
# The machine's apt setup is left alone: a private sources list (deb-src of
# unstable), private package lists and a private download directory live
# under DP_NEWPG_CACHE (default /var/tmp/dp_pg-newpg).  The newest
# postgresql-NN is found in that list (so the script follows the next major
# version), its source package is downloaded with `apt-get source
# --download-only`, the upstream tarball (postgresql-NN_X.Y.orig.tar.*) is
# unpacked and built with
#
#   ./configure --prefix=$DP_NEWPG_CACHE/pg-X.Y --enable-tap-tests --enable-debug
#               --with-icu --with-openssl --without-readline
#
# (ICU: the suites use nondeterministic ICU collations; no readline, no
# documentation), make -j with every core, and installed with pg_regress,
# pg_isolation_regress, the TAP modules and the contrib modules (as Debian's
# packages have them).  A build is reused while the newest version and this
# recipe stay the same (the stamp file pg-X.Y/.dp_pg-built holds the recipe's
# version).  Needs root for the build dependencies (bison, flex, ICU, zlib,
# OpenSSL and IPC::Run).  The unstable list is asked again at most every
# DP_NEWPG_REFRESH_HOURS hours (default 12) while its newest version is built,
# and a build present is used when apt cannot be reached.
# DP_NEWPG_OFFLINE=1 reuses the newest build present without asking apt.
# DP_NEWPG_SANITIZE=1 builds (into pg-X.Y-san) a server compiled with
# AddressSanitizer and UndefinedBehaviorSanitizer, for test/all.sh's newest
# leg and test/sanitize.sh.  One prefix is never built twice at once (a lock
# file beside it): a second caller waits and reuses the first one's build.
set -euo pipefail

CACHE=${DP_NEWPG_CACHE:-/var/tmp/dp_pg-newpg}
RECIPE=2	# bump when the build below changes: older builds are rebuilt
PACKAGES="bison flex libicu-dev pkg-config zlib1g-dev libssl-dev libipc-run-perl make gcc perl xz-utils bzip2 ca-certificates"
if [ "${1:-}" = --packages ]; then
	echo "$PACKAGES"
	exit 0
fi
SAN=${DP_NEWPG_SANITIZE:-0}
suffix=""
[ "$SAN" = 1 ] && suffix="-san"
mkdir -p "$CACHE/lists/partial" "$CACHE/archives/partial" "$CACHE/src" "$CACHE/none"

log() { echo "newpg: $*" >&2; }

# The newest build of this kind present (its prefix); fails if there is none.
present_build() {
	local p
	for p in $(ls -d "$CACHE"/pg-* 2>/dev/null | sort -rV); do
		case $p in *.lock) continue ;; *-san) [ "$SAN" = 1 ] || continue ;; *) [ "$SAN" = 0 ] || continue ;; esac
		[ "$(cat "$p/.dp_pg-built" 2>/dev/null)" = "$RECIPE" ] && { echo "$p"; return 0; }
	done
	return 1
}

if [ "${DP_NEWPG_OFFLINE:-0}" = 1 ]; then
	prefix=$(present_build) || { log "no build in $CACHE"; exit 1; }
	echo "$prefix/bin"
	exit 0
fi

# build dependencies (only the missing ones)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
DP_BASE_PACKAGES="" dp_install_deps $PACKAGES >&2

echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian unstable main" \
	>"$CACHE/sources.list"
APT_OPTS=(-o "Dir::Etc::SourceList=$CACHE/sources.list" -o "Dir::Etc::SourceParts=$CACHE/none"
	-o "Dir::State::Lists=$CACHE/lists" -o "Dir::Cache::Archives=$CACHE/archives"
	-o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Sandbox::User=root"
	-o "Acquire::Check-Valid-Until=false")
# (Check-Valid-Until: a mirror may serve unstable's index after the date its
# Release file names, seen here three weeks after it; the signature is still
# checked, and only a source tarball for a throw-away test server comes from it)

# The newest postgresql-NN source package of the private list: sets pkg, ver
# and upstream (apt keeps the list compressed; apt-helper reads any format).
newest_in_list() {
	pkg=$(for f in "$CACHE"/lists/*_Sources*; do [ -f "$f" ] && /usr/lib/apt/apt-helper cat-file "$f"; done |
		sed -n 's/^Package: \(postgresql-[0-9][0-9]*\)$/\1/p' | sort -V | tail -1 || true)
	[ -n "$pkg" ] || return 1
	ver=$(apt-cache "${APT_OPTS[@]}" showsrc "$pkg" | sed -n 's/^Version: //p' | sort -V | tail -1)
	upstream=${ver#*:}
	upstream=${upstream%%-*}
	[ -n "$ver" ]
}

# ask apt again unless the list is recent and its newest version is built
list=$(ls -t "$CACHE"/lists/*_Sources* 2>/dev/null | head -1 || true)
if [ -n "$list" ] && [ -z "$(find "$list" -mmin +$((${DP_NEWPG_REFRESH_HOURS:-12} * 60)))" ] && newest_in_list &&
	[ "$(cat "$CACHE/pg-$upstream$suffix/.dp_pg-built" 2>/dev/null)" = "$RECIPE" ]; then
	log "$pkg $ver: reusing $CACHE/pg-$upstream$suffix (list of $(date -r "$list" '+%F %H:%M'))"
	echo "$CACHE/pg-$upstream$suffix/bin"
	exit 0
fi
log "reading the source packages of Debian unstable (private list in $CACHE)"
if ! apt-get "${APT_OPTS[@]}" -qq update >&2; then
	prefix=$(present_build) || { log "apt failed and no build is present"; exit 1; }
	log "apt failed: using the build present in $prefix"
	echo "$prefix/bin"
	exit 0
fi
newest_in_list || { log "no postgresql-NN source package in unstable"; exit 1; }
prefix="$CACHE/pg-$upstream$suffix"

# one build of a prefix at a time: a second caller waits, then reuses it
exec 8>"$prefix.lock"
flock 8
if [ "$(cat "$prefix/.dp_pg-built" 2>/dev/null)" = "$RECIPE" ]; then
	log "$pkg $ver: reusing $prefix"
	echo "$prefix/bin"
	exit 0
fi

t0=$(date +%s)
log "$pkg $ver: downloading the source package"
(cd "$CACHE/src" && apt-get "${APT_OPTS[@]}" -qq source --download-only "$pkg=$ver" >&2)
tarball=$(ls "$CACHE/src/${pkg}_${upstream}.orig.tar."* | head -1)
build="$CACHE/build-$upstream$suffix"
rm -rf "$build"
mkdir -p "$build"
tar -xf "$tarball" -C "$build" --strip-components=1

jobs=$(nproc)
log "building PostgreSQL $upstream${suffix:+ with the sanitizers} into $prefix (make -j$jobs; log: $build/build.log)"
(
	cd "$build"
	args=(--prefix="$prefix" --enable-tap-tests --enable-debug --with-icu --with-openssl --without-readline)
	if [ "$SAN" = 1 ]; then
		# every sanitizer report fatal; PostgreSQL frees by memory context: no leak detection
		san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
		export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}	# zic runs during the install
		./configure "${args[@]}" CFLAGS="-O1 -g $san" LDFLAGS="$san"
	else
		./configure "${args[@]}" CFLAGS="-O2"
	fi
	echo "newpg: configure done after $(($(date +%s) - t0)) s"
	make -s -j"$jobs"
	make -s -j"$jobs" -C contrib
	echo "newpg: build done after $(($(date +%s) - t0)) s"
	rm -rf "$prefix"
	make -s install
	make -s -C contrib install
	make -s -C src/test/regress install
	make -s -C src/test/isolation install
	make -s -C src/test/perl install
) > "$build/build.log" 2>&1 || { tail -30 "$build/build.log" >&2; exit 1; }
# the server runs as the postgres system user: it must reach the binaries
chmod -R a+rX "$prefix"
echo "$RECIPE" > "$prefix/.dp_pg-built"
# the unpacked and built sources (~800 MB) are not needed any more: the log is kept
mv "$build/build.log" "$build.log" && rm -rf "$build"
log "PostgreSQL $upstream ready in $prefix after $(($(date +%s) - t0)) s ($(grep '^newpg: ' "$build.log" | sed 's/^newpg: //' | paste -sd ';' -); log: $build.log)"
echo "$prefix/bin"
