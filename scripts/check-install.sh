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
out=$(build/hello-static)
echo "$out" | grep -q '^name: Ada' || { echo "hello-static printed: $out"; exit 1; }
out=$(build/hello-shared)
echo "$out" | grep -q '^value at /users/ada: {"born":1815,"name":"Ada"}' \
  || { echo "hello-shared printed: $out"; exit 1; }

declared=$(grep -o 'hearth_[a-z0-9_]*(' include/hearth.h | tr -d '(' | sort -u)
exported=$(nm -D --defined-only build/libhearth.so | awk '{print $3}' \
           | grep '^hearth' | sort -u)
if [ "$declared" != "$exported" ]; then
  echo "exported symbols differ from hearth.h:"
  diff <(echo "$declared") <(echo "$exported") || true
  exit 1
fi
echo "install check: pkg-config static and shared builds run; $(echo "$exported" | wc -l) exported symbols match hearth.h"
