#!/usr/bin/python3
"""scripts/plot_sweep's series: which runs share a line, and the line's label. Runs with the
rows of a sweep like configs/sweeps/scaling.yaml's (the scale series beside f1 and f100, whose
256 leaves equal leaves-0256's). Usage: test_series.py SOURCE_DIR."""

import importlib.machinery
import importlib.util
import os
import sys

root = sys.argv[1]
loader = importlib.machinery.SourceFileLoader("plot_sweep",
                                              os.path.join(root, "scripts", "plot_sweep"))
spec = importlib.util.spec_from_loader("plot_sweep", loader)
plot_sweep = importlib.util.module_from_spec(spec)
loader.exec_module(plot_sweep)


def row(config, leaves, policy):
    return {"config": config, "leaves": str(leaves), "policy": policy, "batch": "1",
            "mode": "timing", "overrides": ""}


def labels(rows):
    return [(label, [r["config"] for r in rs]) for label, rs in plot_sweep.series_of(rows)]


failures = []


def expect(name, got, want):
    if got != want:
        failures.append(f"{name}:\n  got  {got}\n  want {want}")


scale = ["../scale/leaves-0256.yaml", "../scale/leaves-0001.yaml", "../scale/leaves-0016.yaml"]
rows = [row(c, int(c[-9:-5]), p) for p in ("halving", "search") for c in scale]
expect("distinct leaves: one line per policy, sorted by leaves", labels(rows), [
    ("policy halving", [scale[1], scale[2], scale[0]]),
    ("policy search", [scale[1], scale[2], scale[0]]),
])

rows += [row("../f100.yaml", 256, p) for p in ("halving", "search")]
rows += [row("../f1.yaml", 32, p) for p in ("halving", "search")]
expect("f100 has leaves-0256's leaves: the scale folder apart from f1 and f100", labels(rows), [
    ("policy halving, scale/", [scale[1], scale[2], scale[0]]),
    ("policy halving, f1 and f100", ["../f1.yaml", "../f100.yaml"]),
    ("policy search, scale/", [scale[1], scale[2], scale[0]]),
    ("policy search, f1 and f100", ["../f1.yaml", "../f100.yaml"]),
])

rows = [row("a/m1.yaml", 4, "search"), row("a/m2.yaml", 4, "search"),
        row("a/m3.yaml", 16, "search")]
expect("two machines of one folder with as many leaves: a line per config", labels(rows), [
    ("m1", ["a/m1.yaml"]), ("m2", ["a/m2.yaml"]), ("m3", ["a/m3.yaml"]),
])

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok: 3 cases")
