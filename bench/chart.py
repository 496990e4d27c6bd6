#!/usr/bin/python3
"""Draws a bench JSON (bench.json or bench-web.json) as a PNG: one panel per
adapter and group, a bar per system in each case, the value in the case's
unit (GFLOP/s, GB/s, tokens/s: higher is better; us/op, ms: lower is
better).
    chart.py IN.json OUT.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"wgc": "#1f77b4", "wgc-js": "#1f77b4", "openblas": "#7f7f7f",
          "wgc-cpu": "#aec7e8", "tile4x4": "#ff7f0e", "naive": "#ffbb78",
          "unfused": "#ff7f0e", "raw": "#2ca02c", "tfjs": "#d62728"}
EXTRA = ["#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#c5b0d5"]


def main(src, dst):
    with open(src) as f:
        data = json.load(f)
    panels = {}
    for case in data["cases"]:
        panels.setdefault((case["adapter"], case["group"]), []).append(case)
    systems = []
    for case in data["cases"]:
        for r in case["results"]:
            if r["system"] not in systems:
                systems.append(r["system"])
    extra = iter(EXTRA * 4)
    color = {s: COLORS.get(s) or next(extra) for s in systems}

    cols = min(4, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 5.2 * rows),
                             squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, ((adapter, group), cases) in zip(axes.flat, panels.items()):
        unit = cases[0]["unit"]
        present = [s for s in systems
                   if any(r["system"] == s for c in cases for r in c["results"])]
        width = 0.8 / len(present)
        for k, s in enumerate(present):
            xs, ys = [], []
            for i, c in enumerate(cases):
                for r in c["results"]:
                    if r["system"] == s:
                        xs.append(i - 0.4 + width * (k + 0.5))
                        ys.append(r["value"])
            ax.bar(xs, ys, width, label=s, color=color[s])
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels([c["name"] for c in cases], rotation=30, ha="right",
                           fontsize=7)
        ax.set_yscale("log")
        better = "lower is better" if unit in ("us/op", "ms") else "higher is better"
        ax.set_ylabel(f"{unit} ({better}, log scale)", fontsize=8)
        ax.set_title(f"{group} on {adapter}", fontsize=10)
        ax.legend(fontsize=7)
        ax.grid(axis="y", which="both", alpha=0.3)
    fig.suptitle(f"wgc bench {data.get('date', '')}: median of timed runs, "
                 "every system measured in the same run", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(dst, dpi=72)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: chart.py IN.json OUT.png")
    main(sys.argv[1], sys.argv[2])
