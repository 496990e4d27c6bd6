#!/bin/sh
# GEMM 4096^3 f32 and attention (seq 4096, head_dim 128) through wgc and
# through PyTorch (fp32, TF32 off) on the same GPU, side by side, and wgc's
# x W^T with W stored f32, f16, bf16, Q8_0 and Q4_0 (m = 1 and 8).
# Meant for a machine with a GPU that reaches no package registry: build
# here with `make bench-gpu-build`, then carry build/gpu_bench and build/lib
# (and .gl, the Vulkan loader packages, where the machine lacks a loader;
# bench/README.md says how to fetch them) and run `sh bench/gpu.sh DIR`.
# Writes DIR/gpu_wgc.json and DIR/gpu.json (default DIR: $OUT, else
# build/bench). Extra arguments go to gpu_bench (e.g. --n 1024 --seq 512
# for a quick run on a software adapter).
set -eu
out=${1:-${OUT:-build/bench}}
[ $# -gt 0 ] && shift
mkdir -p "$out"

# The Vulkan loader: unpacked from carried packages when none is installed.
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 '; then
  for f in .gl/*.deb; do
    [ -f "$f" ] && dpkg -x "$f" /
  done
  ldconfig
fi
# NVIDIA's Vulkan driver, where the machine mounts it outside the loader's
# search path.
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$nv" ]; then
  export VK_DRIVER_FILES="$nv"
fi

build/gpu_bench "$@" "$out/gpu_wgc.json"
python3 bench/gpu/torch_bench.py "$out/gpu_wgc.json" "$out/gpu.json"
