"""Calibrate c3 to this machine: profile models with onnxruntime, fit a device.

::

    python -m c3.calibrate -o mypack --name my-cpu --threads 1
    c3 estimate model.onnx --rules mypack --device my-cpu

Each model (by default the ones the repository ships in ``examples/onnx``,
found from the working folder or beside the package; ``--models`` adds
others, ``--no-shipped`` leaves the shipped ones out) is run with
onnxruntime's profiler on, at the thread count and execution provider given,
with the session's default graph optimizations, on random inputs: ``--runs``
runs a round at least, and as many as fill ``--seconds`` (the first is
dropped as a warm-up when the profile is read),
``--rounds`` rounds over all the models (in a new order each round), and of each model the
round whose median run is the median is kept, so that a burst of load on the
machine weighs on one round only. Each profile is joined to c3's report of
the model (``c3 estimate MODEL --profile FILE --format json``), and the
reports are fitted by ``c3 calibrate``, which writes ``DIR/devices.yaml``.

onnxruntime is an optional dependency: ``pip install onnxruntime`` (or
``onnxruntime-gpu`` for ``--provider cuda``).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import statistics
import sys
import time
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _c3

#: Runs one profile takes at most, whatever ``--seconds`` asks.
MAX_RUNS = 1000

#: What symbolic sizes are bound to when the command line does not say.
DEFAULT_BATCH = 1
DEFAULT_SEQUENCE = 128

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}

#: Sizes of the shipped models that differ from the defaults: the GPT-style
#: decoders' context is 32 tokens (examples/onnx/README.md).
SHIPPED_SIZES = {
    "gpt_decoder_dynamo.onnx": {"seq": 32},
    "gpt_decoder_torchscript.onnx": {"seq": 32},
}


def shipped_models() -> List[str]:
    """The ``examples/onnx`` models: under the working folder, else the
    repository the package was installed from."""
    here = os.path.dirname(os.path.abspath(__file__))
    for root in (os.getcwd(), os.path.join(here, "..", "..")):
        found = sorted(glob.glob(os.path.join(root, "examples", "onnx", "*.onnx")))
        if found:
            return found
    return []


def _import_ort() -> Any:
    try:
        import onnxruntime
    except ImportError:  # pragma: no cover - depends on the environment
        raise SystemExit(
            "c3.calibrate needs onnxruntime: pip install onnxruntime (or onnxruntime-gpu)"
        ) from None
    return onnxruntime


def bindings(model: str, batch: int, sequence: int, dims: Dict[str, int]) -> Dict[str, int]:
    """Values for the model's symbolic input sizes: those in ``dims``, else
    ``batch`` for a name with ``batch`` in it and ``sequence`` for the others."""
    ort = _import_ort()
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    out: Dict[str, int] = {}
    for i in sess.get_inputs():
        for d in i.shape:
            if isinstance(d, str) and d not in out:
                out[d] = dims.get(d, batch if "batch" in d.lower() else sequence)
    return out


def _inputs(sess: Any, bound: Dict[str, int]) -> Dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else bound.get(str(d), 1) for d in i.shape]
        t = i.type
        if "float16" in t:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float16)
        elif "float" in t or "double" in t:
            dtype = np.float64 if "double" in t else np.float32
            feeds[i.name] = rng.standard_normal(shape).astype(dtype)
        elif "bool" in t:
            feeds[i.name] = np.ones(shape, dtype=bool)
        elif "int" in t:
            dtype = np.int32 if "int32" in t else np.int64
            if "mask" in i.name.lower():
                feeds[i.name] = np.ones(shape, dtype=dtype)
            else:
                feeds[i.name] = rng.integers(0, 100, shape).astype(dtype)
        else:
            raise ValueError(f"{i.name}: input type {t} is not one c3.calibrate makes")
    return feeds


def profile(model: str, prefix: str, bound: Dict[str, int], threads: int = 1,
            provider: str = "cpu", runs: int = 10, seconds: float = 0.0) -> Tuple[str, float]:
    """Runs ``model`` with onnxruntime's profiler on, ``runs`` times or
    until ``seconds`` have passed, whichever is longer (a small model's
    runs then span as long as a large one's: one burst of load on the
    machine does not make them all); returns the profile's path and the
    median of its runs after the first (s)."""
    ort = _import_ort()
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = prefix
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    sess = ort.InferenceSession(model, so, providers=[PROVIDERS.get(provider, provider)])
    feeds = _inputs(sess, bound)
    start = time.perf_counter()
    done = 0
    while done < max(runs, 2) or (time.perf_counter() - start < seconds and done < MAX_RUNS):
        sess.run(None, feeds)
        done += 1
    path = sess.end_profiling()
    with open(path, encoding="utf-8") as f:
        events = json.load(f)
    times = sorted(e["dur"] for e in events if e.get("name") == "model_run")[1:]
    return path, statistics.median(times) / 1e6


def report(model: str, profile_path: str, bound: Dict[str, int], out: str,
           rules: Sequence[str] = (), device: Optional[str] = None) -> Dict[str, Any]:
    """c3's JSON report of ``model`` joined to a profile, written to ``out``."""
    args = ["estimate", model, "--profile", profile_path, "--format", "json", "-o", out, "--force"]
    for k, v in bound.items():
        args += ["--dim", f"{k}={v}"]
    for r in rules:
        args += ["--rules", r]
    if device:
        args += ["--device", device]
    _c3.cli(args)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def measure(models: Sequence[Tuple[str, Dict[str, int]]], work: str, threads: int,
            provider: str, runs: int, rounds: int, log: Any = None,
            seconds: float = 0.0) -> List[Tuple[str, Dict[str, int], str, float]]:
    """Profiles each model ``rounds`` times, the models in a new order each
    round (a seeded shuffle: no model always runs after the same ones, or
    late in a round); returns per model its bindings, the profile of its
    median round and that round's median run."""
    kept: Dict[int, List[Tuple[float, str]]] = {i: [] for i in range(len(models))}
    for r in range(rounds):
        order = list(range(len(models)))
        random.Random(r).shuffle(order)
        for i in order:
            model, bound = models[i]
            name = os.path.splitext(os.path.basename(model))[0]
            prefix = os.path.join(work, f"{i:03d}_{name}_r{r}")
            path, run_s = profile(model, prefix, bound, threads, provider, runs, seconds)
            kept[i].append((run_s, path))
            if log:
                print(f"  round {r + 1}/{rounds}: {name} {run_s * 1e3:.2f} ms", file=log, flush=True)
    out = []
    for i, (model, bound) in enumerate(models):
        ordered = sorted(kept[i])
        run_s, path = ordered[len(ordered) // 2]
        out.append((model, bound, path, run_s))
    return out


def _parse_model(text: str) -> Tuple[str, Dict[str, int]]:
    """``model.onnx`` or ``model.onnx:batch=4,seq=64``."""
    path, _, spec = text.partition(":")
    dims: Dict[str, int] = {}
    if spec:
        for part in spec.split(","):
            k, _, v = part.partition("=")
            if not k or not v.isdigit():
                raise SystemExit(f"{text}: sizes are NAME=N, comma-separated (model.onnx:batch=4)")
            dims[k] = int(v)
    return path, dims


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m c3.calibrate",
        description="Profile models with onnxruntime on this machine and fit a c3 device to them.",
    )
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="the pack folder to write (DIR/devices.yaml)")
    p.add_argument("--name", required=True, help="the device's name (what --device takes)")
    p.add_argument("--threads", type=int, default=1, help="onnxruntime's intra-op threads (default 1)")
    p.add_argument("--provider", default="cpu",
                   help="execution provider: cpu, cuda, or an onnxruntime provider name (default cpu)")
    p.add_argument("--runs", type=int, default=10, help="runs a round at least, the first a warm-up (default 10)")
    p.add_argument("--seconds", type=float, default=1.0,
                   help="a round runs a model for at least this long (default 1)")
    p.add_argument("--rounds", type=int, default=3, help="rounds over all the models (default 3)")
    p.add_argument("--batch", type=int, default=DEFAULT_BATCH,
                   help="size of a symbolic input dimension named batch (default 1)")
    p.add_argument("--sequence", type=int, default=DEFAULT_SEQUENCE,
                   help="size of the other symbolic input dimensions (default 128)")
    p.add_argument("--models", nargs="*", default=[], metavar="MODEL",
                   help="more models to profile (model.onnx or model.onnx:batch=4,seq=64)")
    p.add_argument("--no-shipped", action="store_true", help="leave out the shipped examples/onnx models")
    p.add_argument("--keep", metavar="DIR", help="keep the profiles and reports in DIR")
    p.add_argument("--force", action="store_true", help="replace a devices.yaml c3 calibrate did not write")
    a = p.parse_args(argv)
    if a.threads < 1 or a.runs < 2 or a.rounds < 1 or a.batch < 1 or a.sequence < 1:
        p.error("--threads, --batch and --sequence must be at least 1, --runs at least 2, --rounds at least 1")
    ort = _import_ort()
    listed = [] if a.no_shipped else [
        (m, dict(SHIPPED_SIZES.get(os.path.basename(m), {}))) for m in shipped_models()
    ]
    listed += [_parse_model(m) for m in a.models]
    if not listed:
        p.error("no models: the shipped examples/onnx were not found and --models names none")
    for m, _ in listed:
        if not os.path.isfile(m):
            p.error(f"{m}: no such file")
    models = [(m, bindings(m, a.batch, a.sequence, dims)) for m, dims in listed]
    work = a.keep or tempfile.mkdtemp(prefix="c3-calibrate-")
    os.makedirs(work, exist_ok=True)
    print(f"profiling {len(models)} models, {a.rounds} round(s) of {a.runs} runs, "
          f"{a.threads} thread(s), {a.provider}; files in {work}", file=sys.stderr)
    measured = measure(models, work, a.threads, a.provider, a.runs, a.rounds, log=sys.stderr,
                       seconds=a.seconds)
    reports = []
    for i, (model, bound, path, run_s) in enumerate(measured):
        out = os.path.join(work, f"{i:03d}_{os.path.splitext(os.path.basename(model))[0]}.report.json")
        r = report(model, path, bound, out)
        share = r["profile"]["joined_share"] or 0.0
        print(f"{os.path.basename(model)}: {run_s * 1e3:.2f} ms, {100 * share:.1f}% of kernel time joined",
              file=sys.stderr)
        reports.append(out)
    args = ["calibrate", "-o", a.output, "--name", a.name,
            "--runtime", f"onnxruntime {ort.__version__}", "--threads", str(a.threads)]
    if a.force:
        args.append("--force")
    print(_c3.cli(args + reports), end="")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
