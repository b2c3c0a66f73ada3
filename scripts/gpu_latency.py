#!/usr/bin/env python3
"""Measured forward-pass latencies on a CUDA GPU, to set beside c3's
roofline bounds (``c3 estimate MODEL --device h100 --measured TIME``).

What it measures
----------------
PyTorch, random weights (``torch.manual_seed(0)``), inference
(``torch.inference_mode``), ``cudnn.benchmark`` on, each forward pass run two
ways: eagerly (``eager_ms``: a small batch waits on Python and kernel
launches) and replayed from a CUDA graph captured once (``graph_ms``: the
GPU's own time, which is what a roofline bounds). For each model and batch
size: 20 warm-up runs, then 100 runs each timed with CUDA events; the
medians are printed, in milliseconds. Two precisions:

- ``fp32``: float32 with TF32 turned off for convolutions and matmuls, so
  the GPU's plain FP32 peak (the one c3's catalog lists) is the ceiling;
- ``fp16``: the model and input in float16 (tensor cores).

Models: torchvision's ResNet-50, VGG-19 and DenseNet-121 at 224x224, and the
GPT-style decoder of ``scripts/gpt_decoder.py`` (the architecture of the
shipped ``examples/onnx/gpt_decoder_*.onnx``) on 32 tokens. c3 costs the
same architectures: the torchvision ones exported with
``torch.onnx.export(model, x, path, dynamo=False, dynamic_axes=...)`` (a
``batch`` axis), the decoder from the shipped file with ``--dim``.

With ``--shipped`` it times the shipped ``examples/onnx/light_*.onnx``
files themselves instead, at the batch size of 1 they fix, run through
``scripts/onnx_torch.py`` (one PyTorch call per ONNX node, the weights
made from their shapes as c3 reads them); c3 costs the same files with
``c3 estimate examples/onnx/light_NAME.onnx --device DEVICE``.

How to run
----------
On a machine with a CUDA GPU and torch + torchvision installed::

    python3 scripts/gpu_latency.py            # prints one JSON line per run
    python3 scripts/gpu_latency.py --shipped  # the shipped light_*.onnx
"""

from __future__ import annotations

import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def median_ms(run, warm: int = 20, runs: int = 100) -> float:
    """The median of `runs` timed calls of `run`, in milliseconds."""
    for _ in range(warm):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def timings(model: torch.nn.Module, x: torch.Tensor) -> tuple[float, float]:
    """Eager and CUDA-graph medians of `model(x)`, in milliseconds."""
    with torch.inference_mode():
        eager = median_ms(lambda: model(x))
        # Capture on a side stream after warming up, as torch.cuda.graphs
        # asks; replays then launch the whole pass at once.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(x)
        replay = median_ms(graph.replay)
    return eager, replay


def models():
    """(name, constructor, input maker) for each architecture."""
    import torchvision

    def image(batch: int) -> torch.Tensor:
        return torch.randn(batch, 3, 224, 224)

    def tokens(batch: int) -> torch.Tensor:
        return torch.randint(0, 512, (batch, 32))

    import gpt_decoder

    return [
        ("resnet50", lambda: torchvision.models.resnet50(), image),
        ("vgg19", lambda: torchvision.models.vgg19(), image),
        ("densenet121", lambda: torchvision.models.densenet121(), image),
        ("gpt_decoder", lambda: gpt_decoder.GPT(), tokens),
    ]


def shipped_models():
    """(name, constructor, input maker) for each shipped light model."""
    import onnx_torch

    def entry(path):
        def image(batch: int) -> torch.Tensor:
            # Each takes one [1, 3, 224, 224] image (examples/onnx/README.md).
            return torch.randn(batch, 3, 224, 224)

        def make():
            return onnx_torch.OnnxModule(path)

        name = os.path.basename(path)[: -len(".onnx")]
        return (name, make, image)

    return [entry(p) for p in onnx_torch.shipped()]


def main() -> None:
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device("cuda")
    gpu = torch.cuda.get_device_name(0)
    shipped = "--shipped" in sys.argv[1:]
    for name, make, sample in shipped_models() if shipped else models():
        for precision in ("fp32", "fp16"):
            model = make().eval().to(device)
            if precision == "fp16":
                model = model.half()
            # The light models fix their batch at 1.
            for batch in (1,) if shipped else (1, 32):
                x = sample(batch).to(device)
                if precision == "fp16" and x.is_floating_point():
                    x = x.half()
                eager, graph = timings(model, x)
                row = {
                    "gpu": gpu,
                    "model": name,
                    "precision": precision,
                    "batch": batch,
                    "eager_ms": round(eager, 4),
                    "graph_ms": round(graph, 4),
                }
                print(json.dumps(row), flush=True)
            del model
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
