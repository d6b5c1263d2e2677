#!/bin/sh
# SPDX-License-Identifier: MIT
# An installed libminimp runs: the build is installed into a temporary
# tree (meson install --destdir), ring.c is compiled there with minimpcc
# and with pkg-config, mpi_ring.c with minimpicc and pkg-config, and all
# run under the installed minimprun with no environment set. The pkg-config build has no run path, so it finds the
# library only through minimprun, which points its ranks at the library
# beside it; run alone it must fail to load, or the check proves nothing.
#   test_install.sh BUILD_DIR SOURCE_DIR [EXTRA_CFLAGS]
set -eu
build=$1
src=$2
extra=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_install: $*" >&2; exit 1; }

meson install -C "$build" --destdir "$tmp/root" --no-rebuild --quiet >/dev/null
prefix=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json, sys
print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
root="$tmp/root$prefix"
bin="$root/bin"
[ -x "$bin/minimpcc" ] || fail "minimpcc is not installed in $bin"
# minimp-bench and the manual pages come with the library.
[ -x "$bin/minimp-bench" ] || fail "minimp-bench is not installed in $bin"
env -u LD_LIBRARY_PATH "$bin/minimp-bench" --version | grep -q '^minimp-bench ' ||
  fail "the installed minimp-bench does not run (its run path?)"
for page in minimprun.1 minimp-bench.1 minimpcc.1; do
  [ -f "$root/share/man/man1/$page" ] || fail "man page $page is not installed"
done

# The wrapper: include path, library and run path, wherever the tree is.
case " $(env -u MINIMP_CC CC=cc "$bin/minimpcc" --showme x.c) " in
  " cc x.c "*" -Wl,-rpath,$root/"*) ;;
  *) fail "minimpcc --showme does not start with the compiler or has no run path into $root" ;;
esac
"$bin/minimpcc" --help | grep -q '^Usage: minimpcc' || fail "minimpcc --help"
"$bin/minimpcc" $extra "$src/examples/ring.c" -o "$tmp/ring_w"
"$bin/minimprun" -n 3 "$tmp/ring_w" 5 | grep -q correct ||
  fail "the minimpcc build did not run under the installed minimprun"

# pkg-config: no run path; minimprun's LD_LIBRARY_PATH finds the library.
pc=$(find "$root" -name libminimp.pc | head -1)
[ -n "$pc" ] || fail "libminimp.pc is not installed"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$root" \
  --cflags --libs libminimp)
${CC:-cc} $extra "$src/examples/ring.c" -o "$tmp/ring_p" $flags
if env -u LD_LIBRARY_PATH "$tmp/ring_p" >/dev/null 2>&1; then
  fail "ring built with pkg-config found libminimp without minimprun"
fi
env -u LD_LIBRARY_PATH "$bin/minimprun" -n 3 "$tmp/ring_p" 5 |
  grep -q correct || fail "the pkg-config build did not run under minimprun"

# The MPI face: minimpicc beside minimpcc, its flags, and pkg-config.
[ -x "$bin/minimpicc" ] || fail "minimpicc is not installed in $bin"
case " $("$bin/minimpicc" --showme:compile) " in
  *" -I$root/include/minimp-mpi "*) ;;
  *) fail "minimpicc --showme:compile has no -I into $root/include/minimp-mpi" ;;
esac
case " $("$bin/minimpicc" --showme:link) " in
  *" -lminimp-mpi -lminimp "*) ;;
  *) fail "minimpicc --showme:link does not link libminimp-mpi" ;;
esac
"$bin/minimpicc" $extra "$src/examples/mpi_ring.c" -o "$tmp/mpi_ring_w"
"$bin/minimprun" -n 3 "$tmp/mpi_ring_w" 5 | grep -q correct ||
  fail "the minimpicc build of mpi_ring did not run under minimprun"
pc=$(find "$root" -name libminimp-mpi.pc | head -1)
[ -n "$pc" ] || fail "libminimp-mpi.pc is not installed"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config \
  --define-variable=prefix="$root" --cflags --libs libminimp-mpi)
${CC:-cc} $extra "$src/examples/mpi_ring.c" -o "$tmp/mpi_ring_p" $flags
env -u LD_LIBRARY_PATH "$bin/minimprun" -n 3 "$tmp/mpi_ring_p" 5 |
  grep -q correct || fail "the pkg-config build of mpi_ring did not run"
echo "installed tree: minimpcc, minimpicc and pkg-config builds all run"
