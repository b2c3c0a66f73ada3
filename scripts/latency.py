#!/usr/bin/env python3
"""How well a device calibrated on the shipped models predicts others.

What it does
------------
1. Profiles, with onnxruntime on this machine (the CPU provider unless
   ``--provider`` says otherwise, ``--threads`` intra-op threads, the default
   graph optimizations), the models ``examples/onnx`` ships and the
   held-out ones given (``--heldout DIR``: every ``*.onnx`` in it, as
   ``scripts/heldout_models.py`` writes them), each held-out model at every
   ``--batches`` size: ``--rounds`` rounds over all of them in turn, each
   of ``--runs`` runs, keeping of each the round whose median run is the
   median (``c3.calibrate.measure``: one burst of load on the machine falls
   on one round, and calibration and held-out runs share the same
   minutes).
2. Joins each profile to c3's report (``c3 estimate --profile``) and fits a
   device to the shipped models' reports alone (``c3 calibrate``).
3. Predicts each held-out run with the fitted pack (``c3 estimate --rules
   PACK --device NAME``) and compares the predicted total with the measured
   ``model_run``; prints a Markdown table (model, batch, measured,
   predicted, error, the bound on the fitted device's roofline, the share
   of kernel time joined) and the median and worst |error|, and writes
   them to ``OUT/latency.json``.

How to run
----------
With the c3 package (``pip install ./python``), onnxruntime and numpy::

    python3 scripts/heldout_models.py --out /tmp/c3-heldout
    python3 scripts/latency.py --heldout /tmp/c3-heldout --out /tmp/c3-latency

It takes about ten minutes on a 2-core machine for 28 held-out models.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys

import c3
import c3.calibrate as cal


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--heldout", required=True, help="a folder of held-out .onnx models")
    p.add_argument("--out", default="/tmp/c3-latency", help="work folder (default /tmp/c3-latency)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--provider", default="cpu")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", default="1,4", help="held-out batch sizes (default 1,4)")
    p.add_argument("--sequence", type=int, default=cal.DEFAULT_SEQUENCE)
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    batches = [int(b) for b in a.batches.split(",")]
    shipped = [(m, cal.bindings(m, 1, a.sequence, dict(cal.SHIPPED_SIZES.get(os.path.basename(m), {}))))
               for m in cal.shipped_models()]
    heldout = []
    for m in sorted(glob.glob(os.path.join(a.heldout, "*.onnx"))):
        for b in batches:
            bound = cal.bindings(m, b, a.sequence, {})
            if b > 1 and not any("batch" in k.lower() for k in bound):
                continue  # the batch is fixed in the file
            heldout.append((m, bound))
    models = shipped + heldout
    print(f"{len(shipped)} shipped and {len(heldout)} held-out runs, {a.rounds} rounds of {a.runs}",
          file=sys.stderr)
    measured = cal.measure(models, a.out, a.threads, a.provider, a.runs, a.rounds, log=sys.stderr,
                           seconds=a.seconds)
    reports = []
    for i, (model, bound, path, _) in enumerate(measured[: len(shipped)]):
        out = os.path.join(a.out, f"{i:03d}_{os.path.splitext(os.path.basename(model))[0]}.report.json")
        cal.report(model, path, bound, out)
        reports.append(out)
    pack = os.path.join(a.out, "pack")
    ort = cal._import_ort()
    fit = c3._c3.cli(["calibrate", "-o", pack, "--name", "here", "--force",
                      "--runtime", f"onnxruntime {ort.__version__}", "--threads", str(a.threads)] + reports)
    print(fit.splitlines()[0], file=sys.stderr)
    rows = []
    for i, (model, bound, path, run_s) in enumerate(measured[len(shipped):]):
        name = os.path.splitext(os.path.basename(model))[0]
        out = os.path.join(a.out, f"h{i:03d}_{name}.report.json")
        joined = cal.report(model, path, bound, out, rules=[pack], device="here")
        t = joined["total"]
        rows.append({
            "model": name,
            "batch": next((v for k, v in bound.items() if "batch" in k.lower()), 1),
            "measured_s": t["measured_s"], "predicted_s": t["predicted_s"], "bound_s": t["bound_s"],
            "error": t["predicted_s"] / t["measured_s"] - 1,
            "joined": joined["profile"]["joined_share"],
        })
    print("| model | batch | measured (ms) | predicted (ms) | error | bound (ms) | joined |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        print(f"| {r['model']} | {r['batch']} | {r['measured_s'] * 1e3:.2f} | {r['predicted_s'] * 1e3:.2f} "
              f"| {100 * r['error']:+.1f}% | {r['bound_s'] * 1e3:.2f} | {100 * r['joined']:.1f}% |")
    errs = [abs(r["error"]) for r in rows]
    summary = {"median": statistics.median(errs), "worst": max(errs), "runs": len(rows)}
    print(f"\nmedian |error| {100 * summary['median']:.1f}%, worst {100 * summary['worst']:.1f}% "
          f"over {len(rows)} held-out runs")
    with open(os.path.join(a.out, "latency.json"), "w", encoding="utf-8") as f:
        json.dump({"summary": summary, "rows": rows, "fit": fit}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
