#!/usr/bin/env bash
# Usage: check_deb.sh BUILD_DIR CONSUMER_SOURCE WORK_DIR
# Makes the Debian package (cpack -G DEB), checks what it holds and what it
# depends on, installs it with apt, builds the outside project in
# CONSUMER_SOURCE against it both ways (find_package(Tarantella) and
# pkg-config), runs it on 2 ranks through the installed launcher, and removes
# the package again. Where the package cannot be installed (not root, no apt,
# or a tarantella package already installed that this test must not touch),
# it says why and unpacks the package into WORK_DIR instead.
set -euo pipefail
build=$1; consumer=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

(cd "$build" && cpack -G DEB -B "$work/package" > "$work/cpack.log" 2>&1) \
  || { cat "$work/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(ls "$work"/package/tarantella_*.deb)
echo "package: $(basename "$deb") ($(du -h "$deb" | cut -f1))"

contents=$(dpkg-deb --contents "$deb" | awk '{print $NF}')
for f in ./usr/bin/tarantella ./usr/include/tarantella/tarantella.h \
         ./usr/include/tarantella/version.h ./usr/lib/cmake/Tarantella/TarantellaConfig.cmake \
         ./usr/lib/cmake/Tarantella/TarantellaTargets.cmake ./usr/lib/pkgconfig/tarantella.pc; do
  grep -qxF "$f" <<<"$contents" || fail "$f is not in the package"
done
grep -qE '^\./usr/lib/libtarantella\.so\.' <<<"$contents" || fail "libtarantella.so is not in the package"
depends=$(dpkg-deb --field "$deb" Depends)
echo "Depends: $depends"
for d in libtorch-dev openmpi-bin nlohmann-json3-dev libtorch; do
  grep -q "$d" <<<"$depends" || fail "the package does not depend on $d"
done

installed=false
why=""
if [ "$(id -u)" -ne 0 ]; then why="not root"
elif ! command -v apt-get >/dev/null; then why="no apt-get"
elif dpkg-query -W -f='${Status}' tarantella 2>/dev/null | grep -q "install ok installed"; then
  why="a tarantella package is already installed on this machine (left alone)"
fi
if [ -z "$why" ]; then
  trap 'apt-get remove -y -q tarantella > "$work/remove.log" 2>&1 || true' EXIT
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$deb" \
    > "$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install of the package failed"; }
  installed=true
  prefix=/usr
  echo "installed with apt-get"
else
  echo "NOTE: not installing the package ($why): unpacking it into $work/root instead"
  dpkg-deb -x "$deb" "$work/root"
  prefix=$work/root/usr
  export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
fi
launcher=$prefix/bin/tarantella
[ -x "$launcher" ] || fail "no launcher at $launcher"

# Compiles go through ccache where the machine has it, as the tree's own do:
# the consumer's compile (all of LibTorch's headers, about 16 CPU-s each
# way) runs again only when a packaged header or a flag changed; linking
# and running happen every time. Paths are hashed relative to the checkout
# (as the tree's own compiles), so another clone's run hits too.
cxx=(g++)
cmake_args=(-DCMAKE_BUILD_TYPE=Release)
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd) CCACHE_NOHASHDIR=1
  cxx=(ccache g++)
  cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# 1. CMake: find_package(Tarantella). Installed under /usr it needs no hint.
$installed || cmake_args+=(-DCMAKE_PREFIX_PATH="$prefix")
cmake -S "$consumer" -B "$work/cmake" "${cmake_args[@]}" > "$work/cmake-configure.log" 2>&1 \
  || { cat "$work/cmake-configure.log"; fail "find_package(Tarantella) against the package failed"; }
if $installed; then
  grep -q "/usr/lib/cmake/Tarantella" "$work/cmake/CMakeCache.txt" \
    || fail "CMake did not find the installed package under /usr/lib/cmake/Tarantella"
fi
cmake --build "$work/cmake" -j2 > "$work/cmake-build.log" 2>&1 \
  || { cat "$work/cmake-build.log"; fail "building with find_package failed"; }

# 2. pkg-config.
pkg-config --exists tarantella || fail "pkg-config does not know tarantella"
[ "$(pkg-config --modversion tarantella)" = "$(dpkg-deb --field "$deb" Version)" ] \
  || fail "pkg-config version differs from the package's"
# shellcheck disable=SC2046
"${cxx[@]}" -O1 -c -o "$work/consumer-pc.o" "$consumer/main.cpp" $(pkg-config --cflags tarantella) \
  > "$work/pc-build.log" 2>&1 || { cat "$work/pc-build.log"; fail "compiling with pkg-config's flags failed"; }
# shellcheck disable=SC2046
g++ -o "$work/consumer-pc" "$work/consumer-pc.o" $(pkg-config --libs tarantella) \
  > "$work/pc-link.log" 2>&1 || { cat "$work/pc-link.log"; fail "linking with pkg-config's libs failed"; }

# 3. Both binaries at 2 ranks through the installed launcher.
for exe in "$work/cmake/consumer" "$work/consumer-pc"; do
  out=$("$launcher" -n 2 -- "$exe" 2>&1) || { echo "$out"; fail "$exe failed at 2 ranks"; }
  grep -q "2 rank(s), allreduce ok" <<<"$out" || { echo "$out"; fail "$exe: unexpected output"; }
  echo "$(basename "$exe"): $out"
done

if $installed; then
  apt-get remove -y -q tarantella > "$work/remove.log" 2>&1 || { cat "$work/remove.log"; fail "apt-get remove failed"; }
  trap - EXIT
  [ ! -e /usr/bin/tarantella ] || fail "/usr/bin/tarantella is still there after removal"
  echo "removed"
fi
echo "PASS: the Debian package installs, builds an outside project both ways and runs at 2 ranks"
