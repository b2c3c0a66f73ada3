#!/usr/bin/env python3
"""Write the small profiles the tests join (tests/fixtures/profiles/).

What is written
---------------
- ``<model>.<level>.json``: onnxruntime's profile (``SessionOptions.
  enable_profiling``) of a shipped ``examples/onnx`` model run three times on
  the CPU provider with one thread, the graph optimizations at ``all`` (the
  default, ``ORT_ENABLE_ALL``) or ``off`` (``ORT_DISABLE_ALL``), on random
  inputs (seed 0; token ids from 0 to 99), symbolic sizes bound as the
  ``SIZES`` table says. Trimmed to what c3 reads: the ``model_run`` events
  and each kernel's ``_kernel_time`` event with its ``op_name``,
  ``provider`` and output shapes (the input shapes, memory statistics and thread
  statistics dropped); nothing else is changed, times included.
- ``tiny_cnn.trace.json`` and ``tiny_cnn.torch.json``: a four-layer CNN's
  c3.torch trace and ``c3.torch.profile`` of it (batch 1, 3 x 32 x 32,
  ``torch.manual_seed(0)``, two passes each way), the profile trimmed to the
  ``c3.*`` ranges and its ``c3`` entry.

The committed files were made with onnxruntime 1.32.0 and torch 2.15.0 (CPU)
on a 2-core x86_64 machine; the times are that machine's and say nothing
else (the tests assert the joins, not the times).

How to run
----------
From the repository root, with onnxruntime, numpy, torch and the c3 Python
package installed (``pip install ./python``)::

    python3 scripts/profile_fixtures.py
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "tests", "fixtures", "profiles")

#: (model, optimization level, symbolic sizes)
SIZES = [
    ("light_resnet50", "all", {}),
    ("light_resnet50", "off", {}),
    ("light_squeezenet", "all", {}),
    ("light_inception_v2", "all", {}),
    ("calib_mobilenetv3_b1", "all", {}),
    ("calib_mobilenetv3_b1", "off", {}),
    ("calib_vit_b1", "all", {}),
    ("gpt_decoder_dynamo", "all", {"batch": 1, "seq": 32}),
]

KEPT_ARGS = ("op_name", "provider", "output_type_shape")


def trim(events):
    out = []
    for e in events:
        cat, name = e.get("cat"), e.get("name", "")
        if cat == "Session" and name == "model_run":
            out.append({k: e[k] for k in ("cat", "name", "ts", "dur", "ph")})
        elif cat == "Node" and name.endswith("_kernel_time"):
            args = {k: v for k, v in e.get("args", {}).items() if k in KEPT_ARGS}
            out.append({"cat": cat, "name": name, "ts": e["ts"], "dur": e["dur"], "ph": "X", "args": args})
    return out


def onnx_profiles() -> None:
    import onnxruntime as ort
    import numpy as np

    levels = {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL, "off": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}
    for model, level, sizes in SIZES:
        path = os.path.join(ROOT, "examples", "onnx", model + ".onnx")
        so = ort.SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(OUT, "raw")
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.graph_optimization_level = levels[level]
        so.log_severity_level = 3
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        feeds = {}
        for i in sess.get_inputs():
            shape = [d if isinstance(d, int) else sizes[d] for d in i.shape]
            if "int" in i.type:
                feeds[i.name] = rng.integers(0, 100, shape).astype(np.int64)
            else:
                feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
        for _ in range(3):
            sess.run(None, feeds)
        raw = sess.end_profiling()
        with open(raw, encoding="utf-8") as f:
            events = json.load(f)
        os.remove(raw)
        dest = os.path.join(OUT, f"{model}.{level}.json")
        with open(dest, "w", encoding="utf-8") as f:
            json.dump(trim(events), f, separators=(",", ":"))
            f.write("\n")
        print("wrote", dest, os.path.getsize(dest), "bytes")


def torch_profile() -> None:
    import torch
    import c3.torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.Flatten(), torch.nn.Linear(8 * 32 * 32, 10),
    ).eval()
    x = torch.randn(1, 3, 32, 32)
    trace = os.path.join(OUT, "tiny_cnn.trace.json")
    data = c3.torch.profile(os.path.join(OUT, "tiny_cnn.raw.json"), model, x, runs=2, trace=trace)
    os.remove(os.path.join(OUT, "tiny_cnn.raw.json"))
    kept = [
        {k: e[k] for k in ("ph", "cat", "name", "ts", "dur") if k in e}
        for e in data["traceEvents"]
        if str(e.get("name", "")).startswith("c3.")
    ]
    dest = os.path.join(OUT, "tiny_cnn.torch.json")
    with open(dest, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": kept, "c3": data["c3"]}, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", dest, "and", trace)


def main() -> int:
    os.makedirs(OUT, exist_ok=True)
    onnx_profiles()
    torch_profile()
    return 0


if __name__ == "__main__":
    sys.exit(main())
