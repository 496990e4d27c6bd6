#!/usr/bin/env bash
# The whole test suite, as `make test` runs it: the C tests on both
# backends, the same tests built with ASan+UBSan and with TSan, the
# installed-library check, the Python package's tests, and the browser tests in headless Chromium. Every section prints one line
# per case; the last line sums them up as "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
total_pass=0 total_fail=0
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
# Each section's and build's wall time, listed at the end: the suite must
# stay well inside CI's limit, and this shows which part grew.
times=""

# note_failure LINE: prints a failure the runner itself found and keeps
# it for the list at the end.
note_failure() {
  echo "$1"
  echo "  $1" >>"$log/failures"
}

# section NAME COMMAND...: runs a section, echoes its lines with the
# harness's own summary line relabelled, and adds its counts.
section() {
  local name=$1
  shift
  echo "== $name"
  local start=$SECONDS
  "$@" >"$log/$name.out" 2>&1
  local rc=$?
  times="$times $name $((SECONDS - start))s,"
  sed -E "s/^([0-9]+) passed, ([0-9]+) failed$/$name: \1 passed, \2 failed (section)/" "$log/$name.out"
  local line p f
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log/$name.out" | tail -n 1)
  if [ -n "$line" ]; then
    p=${line%% passed*}
    f=${line#*passed, }
    f=${f%% failed*}
  else
    p=0 f=1
    note_failure "FAIL $name: the section ended without a summary (exit $rc)"
  fi
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
    f=1
    note_failure "FAIL $name: exit status $rc"
  fi
  grep -E '^FAIL |^SUMMARY: |runtime error: |ERROR: AddressSanitizer|WARNING: ThreadSanitizer' \
    "$log/$name.out" | head -n 40 | sed "s/^/  $name: /" >>"$log/failures"
  total_pass=$((total_pass + p))
  total_fail=$((total_fail + f))
}

build() {
  local start=$SECONDS rc=0
  $MAKE --no-print-directory -s "$@" >"$log/build.out" 2>&1 || rc=$?
  times="$times make $* $((SECONDS - start))s,"
  if [ "$rc" != 0 ]; then
    cat "$log/build.out"
    note_failure "FAIL build: make $*"
    total_fail=$((total_fail + 1))
    return 1
  fi
}

# tally FILE WHAT: echoes FILE's lines but its summary, whose counts it
# adds to tally_p and tally_f; a FILE without one counts as WHAT failing.
tally() {
  local line
  grep -v -E '^[0-9]+ passed, [0-9]+ failed$' "$1"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1)
  if [ -z "$line" ]; then
    echo "FAIL $2: ended without a summary"
    tally_f=$((tally_f + 1))
    return
  fi
  tally_p=$((tally_p + ${line%% passed*}))
  line=${line#*passed, }
  tally_f=$((tally_f + ${line%% failed*}))
}

# sharded COMMAND...: COMMAND in two processes at once, each running every
# other test function (WGC_TEST_SHARD), their lines one after the other
# and one summary. The software adapters compile each kernel on one core
# (with an empty shader cache, a fresh machine's, compiling is most of
# the C tests' time) and valgrind runs a program's threads one at a time:
# alone, either would leave the second core idle.
sharded() {
  local k rc=0 pids=()
  for k in 0 1; do
    WGC_TEST_SHARD=$k/2 "$@" >"$log/shard$k.out" 2>&1 &
    pids+=($!)
  done
  tally_p=0 tally_f=0
  for k in 0 1; do
    wait "${pids[$k]}" || rc=1
    tally "$log/shard$k.out" "shard $k/2"
  done
  echo "$tally_p passed, $tally_f failed"
  return $rc
}

# No two files of src/ depend on each other, by calls or includes.
section layers python3 tools/check_layers.py src
if build lib build/test_wgc; then
  section c sharded build/test_wgc
  # The adapters here run on the CPU and get the kernels made for that;
  # the WebGPU cases run again with the kernels made for GPUs.
  section gpu-kernels sharded env WGC_KERNELS=gpu build/test_wgc webgpu
fi
if build build/test_wgc_asan; then
  # ASan's dlopen interceptor hides the program's rpath from the runtime
  # loader, so the WebGPU runtime is named explicitly here.
  section sanitizers sharded env WGC_WGPU_LIBRARY="$PWD/build/lib/libwgpu_native.so" \
    ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions="$PWD/tools/lsan.supp" \
    UBSAN_OPTIONS=print_stacktrace=1 build/test_wgc_asan
fi
# The cases that run threads, under ThreadSanitizer: the CPU backend's
# pool (every CPU case), the per-thread error text, contexts created, used
# and destroyed on several threads at once, and the WebGPU callback paths.
# The rest of the WebGPU cases take too long instrumented. The WebGPU
# runtime and the Vulkan driver are not instrumented; tools/tsan.supp may
# name their frames, never wgc's.
tsan_cases() {
  local rc=0 filter
  tally_p=0 tally_f=0
  for filter in "[cpu]" api_last_error_threads "soak_threads_contexts[webgpu]" \
    faults_in_callback faults_register faults_destroy faults_deep \
    "api_callbacks[webgpu]"; do
    WGC_WGPU_LIBRARY="$PWD/build/lib/libwgpu_native.so" \
      TSAN_OPTIONS="suppressions=$PWD/tools/tsan.supp halt_on_error=1 exitcode=66" \
      build/test_wgc_tsan "$filter" >"$log/tsan-one.out" 2>&1 || rc=1
    tally "$log/tsan-one.out" "tsan $filter"
  done
  echo "$tally_p passed, $tally_f failed"
  return $rc
}
if build build/test_wgc_tsan; then
  section tsan tsan_cases
fi
# The CPU backend and the front end under valgrind (the software GPU
# drivers are too slow there).
if [ -x build/test_wgc ]; then
  section valgrind sharded valgrind -q --error-exitcode=9 --leak-check=full \
    --suppressions="$PWD/tools/valgrind.supp" \
    --errors-for-leak-kinds=definite build/test_wgc "[cpu]"
fi
section install tools/check_install.sh
# The wheel installed into a fresh virtual environment, and its pytest
# suite on both backends.
if build python; then
  section python tools/test_python.sh
fi
if build wasm; then
  section browser node tests/browser/run.mjs
  # The npm package installed into a fresh project: a Vite page in
  # Chromium, Deno, Node with and without a GPU.
  if build npm; then
    section npm node tests/npm/run.mjs "$PWD/build/wgc-$(make -s --no-print-directory print-version).tgz"
  fi
fi
echo "== times:${times%,} (total ${SECONDS}s)"
# The failures again, last, where a log cut to its tail still shows them.
if [ -s "$log/failures" ]; then
  echo "== failures"
  cat "$log/failures"
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
