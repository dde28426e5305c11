#!/usr/bin/env bash
# Installs the library into a scratch prefix and builds examples/hello.c the
# way a C user would, with pkg-config; then checks that the shared library
# exports exactly the functions hearth.h declares.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="$PWD/build/prefix"
rm -rf "$prefix"
make -s install PREFIX="$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# Static: the archive in place of -lhearth, plus its private requirements.
static_libs=$(pkg-config --libs --static hearth | sed "s|-lhearth|$prefix/lib/libhearth.a|")
cc -Wall -Wextra -Werror examples/hello.c $(pkg-config --cflags hearth) \
   $static_libs -o build/hello-static
cc -Wall -Wextra -Werror examples/hello.c $(pkg-config --cflags --libs hearth) \
   -Wl,-rpath,"$prefix/lib" -o build/hello-shared
# The header also compiles cleanly with clang, every pointer's nullability
# stated (a new pointer without it fails here), and as C++.
if command -v clang >/dev/null; then
  clang -std=c11 -Wall -Wextra -Werror -Wnullability-completeness \
    -Wnullability-completeness-on-arrays -fsyntax-only \
    $(pkg-config --cflags hearth) examples/hello.c
fi
c++ -x c++ -Wall -Wextra -Werror -fsyntax-only $(pkg-config --cflags hearth) examples/hello.c
out=$(build/hello-static)
echo "$out" | grep -q '^name: Ada' || { echo "hello-static printed: $out"; exit 1; }
out=$(build/hello-shared)
echo "$out" | grep -q '^value at /users/ada: {"born":1815,"name":"Ada"}' \
  || { echo "hello-shared printed: $out"; exit 1; }

# The version is the header's: in hearth.pc, the soname (its major) and at
# run time.
part() { sed -n "s/^#define HEARTH_VERSION_$1 \\([0-9]*\\)$/\\1/p" include/hearth.h; }
version="$(part MAJOR).$(part MINOR).$(part PATCH)"
[ "$(pkg-config --modversion hearth)" = "$version" ] \
  || { echo "hearth.pc says $(pkg-config --modversion hearth), hearth.h $version"; exit 1; }
soname=$(readelf -d "$prefix/lib/libhearth.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libhearth.so.$(part MAJOR)" ] \
  || { echo "soname $soname, but hearth.h's major version is $(part MAJOR)"; exit 1; }
[ -f "$prefix/lib/$soname" ] || { echo "$soname is not installed"; exit 1; }
printf '%s\n' '#include <hearth.h>' '#include <stdio.h>' \
  'int main(void) { printf("%s %x %x\n", hearth_version(), hearth_version_number(),' \
  '  (unsigned)HEARTH_VERSION_HEX); return 0; }' > build/version.c
cc -Wall -Wextra -Werror build/version.c $(pkg-config --cflags --libs hearth) \
   -Wl,-rpath,"$prefix/lib" -o build/version
hex=$(printf '%x' $(( ($(part MAJOR) << 16) | ($(part MINOR) << 8) | $(part PATCH) )))
[ "$(build/version)" = "$version $hex $hex" ] \
  || { echo "version check printed: $(build/version), expected $version $hex $hex"; exit 1; }

declared=$(grep -o 'hearth_[a-z0-9_]*(' include/hearth.h | tr -d '(' | sort -u)
exported=$(nm -D --defined-only build/libhearth.so | awk '{print $3}' \
           | grep '^hearth' | sort -u)
if [ "$declared" != "$exported" ]; then
  echo "exported symbols differ from hearth.h:"
  diff <(echo "$declared") <(echo "$exported") || true
  exit 1
fi
echo "install check: version $version ($soname) everywhere; pkg-config static and shared builds run; $(echo "$exported" | wc -l) exported symbols match hearth.h"
