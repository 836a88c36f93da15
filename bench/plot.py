"""Draw the scaling figure: CPU time (log scale) against size, one panel per family, one line per
engine (and per run, to compare before/after), from the JSON files `bench/scaling.py --json`
writes; a size that passed an engine's cap is an x on the cap line. Needs matplotlib (not a dependency of ptxmc: `pip install matplotlib`).

    python bench/plot.py LABEL=FILE.json [LABEL=FILE.json ...] -o bench/scaling.png
"""
from __future__ import annotations

import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="LABEL=FILE.json (scaling.py --json output)")
    ap.add_argument("-o", "--output", default="bench/scaling.png")
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = []
    for spec in args.runs:
        label, _, path = spec.partition("=")
        with open(path) as f:
            runs.append((label, json.load(f)))
    families = []
    for _, data in runs:
        families += [r["family"] for r in data["results"] if r["family"] not in families]
    fig, axes = plt.subplots(1, len(families), figsize=(3.2 * len(families), 3.0), squeeze=False)
    styles = {"z3": "-", "brute": ":"}
    for ax, fam in zip(axes[0], families):
        for i, (label, data) in enumerate(runs):
            for res in data["results"]:
                if res["family"] != fam:
                    continue
                for eng, style in styles.items():
                    pts = [(row["n"], row[eng]["cpu"]) for row in res["rows"]
                           if row.get(eng) and row[eng].get("cpu") is not None and row[eng]["status"] != "cap"]
                    if pts:
                        xs, ys = zip(*pts)
                        ax.plot(xs, ys, style, marker="o", markersize=3, color=f"C{i}", label=f"{label} {eng}")
                    cap = res.get("caps", data.get("caps", {})).get(eng)   # per family if given
                    over = [row["n"] for row in res["rows"] if row.get(eng) and row[eng]["status"] == "cap"]
                    if cap and over:       # passed the cap: an x on the cap line
                        ax.plot(over, [cap] * len(over), "x", color=f"C{i}", markersize=6)
                        ax.axhline(cap, color="grey", linewidth=0.5)
        ax.set_yscale("log")
        ax.set_title(fam, fontsize=9)
        ax.set_xlabel("size", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("CPU s (log)", fontsize=8)
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(args.output, dpi=80)
    return 0


if __name__ == "__main__":
    sys.exit(main())
