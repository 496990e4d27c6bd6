#!/usr/bin/env bash
# Installs wgc into a temporary prefix and builds a program against it with
# pkg-config (shared and static), then runs both with a clean environment:
# the installed library must find its WebGPU runtime and driver by itself.
set -uo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
pass=0 fail=0
check() { # name command...
  local name=$1
  shift
  if out=$("$@" 2>&1); then
    echo "ok   $name"
    pass=$((pass + 1))
  else
    echo "FAIL $name: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
    fail=$((fail + 1))
  fi
}
check "install PREFIX=tmp" make --no-print-directory -s install PREFIX="$prefix"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
check "pkg-config shared build" \
  sh -c "cc -std=c11 -Wall -Werror -o '$prefix/hello' examples/hello.c \$(pkg-config --cflags --libs wgc)"
# -l:libwgc.a picks the static library where both are installed.
check "pkg-config static build" \
  sh -c "cc -std=c11 -Wall -Werror -o '$prefix/hello_static' examples/hello.c \$(pkg-config --cflags wgc) \$(pkg-config --static --libs wgc | sed 's/-lwgc/-l:libwgc.a/')"
check "static program does not load libwgc.so" \
  sh -c "! ldd '$prefix/hello_static' | grep -q libwgc"
check "installed shared program runs on webgpu" \
  env -i PATH=/usr/bin:/bin WGC_BACKEND=webgpu "$prefix/hello"
check "installed static program runs on webgpu" \
  env -i PATH=/usr/bin:/bin WGC_BACKEND=webgpu "$prefix/hello_static"
# One version: the installed wgc.pc says the number the library reports.
check "wgc.pc's version is the library's" \
  sh -c "env -i PATH=/usr/bin:/bin WGC_BACKEND=cpu '$prefix/hello' | grep -q \"^wgc \$(pkg-config --modversion wgc),\""
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
