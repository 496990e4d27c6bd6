"""The PyTorch side of bench/gpu.sh, and the side-by-side table.

Runs the shapes wgc ran (read from its JSON) through PyTorch in fp32 with
TF32 off, then prints both with their ratios and writes the combined JSON.
Where PyTorch or CUDA is missing the table holds wgc's figures alone.
usage: torch_bench.py WGC_JSON OUT_JSON
"""
import json
import statistics
import sys


def median_ms(torch, fn, reps):
    fn()  # warm-up: kernels chosen and loaded
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def torch_figures(w):
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed"
    if not torch.cuda.is_available():
        return None, "PyTorch sees no CUDA device"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cuda")
    reps = w["reps"]
    n = w["gemm"]["n"]
    a = torch.rand(n, n, device=dev) * 2 - 1
    b = torch.rand(n, n, device=dev) * 2 - 1
    gemm_ms = median_ms(torch, lambda: torch.mm(a, b), reps)
    at = w["attention"]
    shape = (1, at["heads"], at["seq"], at["head_dim"])
    q, k, v = (torch.rand(shape, device=dev) * 2 - 1 for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    attn_ms = median_ms(torch, lambda: sdpa(q, k, v), reps)
    causal_ms = median_ms(torch, lambda: sdpa(q, k, v, is_causal=True), reps)
    return {
        "device": torch.cuda.get_device_name(0),
        "version": torch.__version__,
        "gemm": {"ms": gemm_ms, "tflops": 2.0 * n**3 / gemm_ms * 1e-9},
        "attention": {"ms": attn_ms, "causal_ms": causal_ms},
    }, None


def main():
    with open(sys.argv[1]) as f:
        w = json.load(f)
    t, why = torch_figures(w)
    out = {"wgc": w, "torch": t}
    rows = [
        ("GEMM %d^3 f32, ms" % w["gemm"]["n"], w["gemm"]["ms"], t and t["gemm"]["ms"]),
        ("attention, ms", w["attention"]["ms"], t and t["attention"]["ms"]),
        ("attention causal, ms", w["attention"]["causal_ms"],
         t and t["attention"]["causal_ms"]),
    ]
    print("%-28s %12s %12s %14s" % ("", "wgc", "PyTorch", "PyTorch/wgc"))
    for name, mine, theirs in rows:
        if theirs:
            print("%-28s %12.3f %12.3f %14.3f" % (name, mine, theirs, theirs / mine))
        else:
            print("%-28s %12.3f %12s %14s" % (name, mine, "-", "-"))
    f32 = {r["m"]: r["ms"] for r in w.get("weights", []) if r["type"] == "f32"}
    for r in w.get("weights", []):
        print("%-28s %12.3f %12s %14s" % ("%dx%d^2 W %s, ms" % (r["m"], r["n"], r["type"]),
                                        r["ms"], "-", "f32/type %.2f" % (f32[r["m"]] / r["ms"])))
    if t:
        out["ratios"] = {
            "gemm_speed_vs_torch": t["gemm"]["ms"] / w["gemm"]["ms"],
            "attention_speed_vs_torch": t["attention"]["ms"] / w["attention"]["ms"],
            "attention_causal_speed_vs_torch":
                t["attention"]["causal_ms"] / w["attention"]["causal_ms"],
        }
    else:
        out["torch_missing"] = why
        print("no PyTorch figures: %s" % why)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
