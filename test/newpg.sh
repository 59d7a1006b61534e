#!/usr/bin/env bash
# test/newpg.sh — the newest PostgreSQL major version that Debian's unstable
# suite carries as a source package (postgresql-NN), built from its upstream
# tarball into a private prefix, for dp_pg's suites on a second version.
#
#   bash test/newpg.sh          prints the prefix's bin directory (last line)
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
# and installed with pg_regress, pg_isolation_regress, the TAP modules and
# the contrib modules (as Debian's packages have them).  A build is reused
# while the newest version and this recipe stay the same (the stamp file
# pg-X.Y/.dp_pg-built holds the recipe's version).  Needs root for the build
# dependencies (bison, flex, ICU, zlib, OpenSSL and IPC::Run).
# DP_NEWPG_OFFLINE=1 reuses the newest build present without asking apt.
# DP_NEWPG_SANITIZE=1 builds (into pg-X.Y-san) a server compiled with
# AddressSanitizer and UndefinedBehaviorSanitizer, for test/sanitize.sh.
set -euo pipefail

CACHE=${DP_NEWPG_CACHE:-/var/tmp/dp_pg-newpg}
RECIPE=2	# bump when the build below changes: older builds are rebuilt
mkdir -p "$CACHE/lists/partial" "$CACHE/archives/partial" "$CACHE/src"

log() { echo "newpg: $*" >&2; }

if [ "${DP_NEWPG_OFFLINE:-0}" = 1 ]; then
	if [ "${DP_NEWPG_SANITIZE:-0}" = 1 ]; then
		prefix=$(ls -d "$CACHE"/pg-*-san 2>/dev/null | sort -V | tail -1)
	else
		prefix=$(ls -d "$CACHE"/pg-* 2>/dev/null | grep -v -- '-san$' | sort -V | tail -1)
	fi
	[ -n "$prefix" ] && [ "$(cat "$prefix/.dp_pg-built" 2>/dev/null)" = "$RECIPE" ] || { log "no build in $CACHE"; exit 1; }
	echo "$prefix/bin"
	exit 0
fi

# build dependencies (only the missing ones)
missing=""
for p in bison flex libicu-dev pkg-config zlib1g-dev libssl-dev libipc-run-perl make gcc perl xz-utils bzip2 ca-certificates; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	log "installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

cat > "$CACHE/sources.list" <<EOF
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian unstable main
EOF
APT_OPTS=(-o "Dir::Etc::SourceList=$CACHE/sources.list" -o "Dir::Etc::SourceParts=$CACHE/none"
	-o "Dir::State::Lists=$CACHE/lists" -o "Dir::Cache::Archives=$CACHE/archives"
	-o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Sandbox::User=root")
mkdir -p "$CACHE/none"
log "reading the source packages of Debian unstable (private list in $CACHE)"
apt-get "${APT_OPTS[@]}" -qq update >&2

# the newest postgresql-NN source package and its version
# (apt keeps the list compressed; apt-helper reads any of its formats)
pkg=$(for f in "$CACHE"/lists/*_Sources*; do /usr/lib/apt/apt-helper cat-file "$f"; done |
	sed -n 's/^Package: \(postgresql-[0-9][0-9]*\)$/\1/p' | sort -V | tail -1 || true)
[ -n "$pkg" ] || { log "no postgresql-NN source package in unstable"; exit 1; }
ver=$(apt-cache "${APT_OPTS[@]}" showsrc "$pkg" | sed -n 's/^Version: //p' | sort -V | tail -1)
upstream=${ver#*:}
upstream=${upstream%%-*}
SAN=${DP_NEWPG_SANITIZE:-0}
suffix=""
[ "$SAN" = 1 ] && suffix="-san"
prefix="$CACHE/pg-$upstream$suffix"
if [ "$(cat "$prefix/.dp_pg-built" 2>/dev/null)" = "$RECIPE" ]; then
	log "$pkg $ver: reusing $prefix"
	echo "$prefix/bin"
	exit 0
fi

log "$pkg $ver: downloading the source package"
(cd "$CACHE/src" && apt-get "${APT_OPTS[@]}" -qq source --download-only "$pkg=$ver" >&2)
tarball=$(ls "$CACHE/src/${pkg}_${upstream}.orig.tar."* | head -1)
build="$CACHE/build-$upstream$suffix"
rm -rf "$build"
mkdir -p "$build"
tar -xf "$tarball" -C "$build" --strip-components=1

log "building PostgreSQL $upstream into $prefix (a few minutes; log: $build/build.log)"
(
	cd "$build"
	if [ "$SAN" = 1 ]; then
		# every sanitizer report fatal; PostgreSQL frees by memory context: no leak detection
		san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
		export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}	# zic runs during the install
		./configure --prefix="$prefix" --enable-tap-tests --enable-debug --with-icu --with-openssl \
			--without-readline CFLAGS="-O1 -g $san" LDFLAGS="$san"
	else
		./configure --prefix="$prefix" --enable-tap-tests --enable-debug --with-icu --with-openssl \
			--without-readline CFLAGS="-O2"
	fi
	make -j"$(nproc)"
	make -C contrib -j"$(nproc)"
	rm -rf "$prefix"
	make install
	make -C contrib install
	make -C src/test/regress install
	make -C src/test/isolation install
	make -C src/test/perl install
) > "$build/build.log" 2>&1 || { tail -30 "$build/build.log" >&2; exit 1; }
# the server runs as the postgres system user: it must reach the binaries
chmod -R a+rX "$prefix"
echo "$RECIPE" > "$prefix/.dp_pg-built"
log "PostgreSQL $upstream ready in $prefix"
echo "$prefix/bin"
