#!/usr/bin/env python3
"""Export a small GPT-2-style decoder from PyTorch to ONNX, as users do.

What it is
----------
A decoder-only transformer written the way PyTorch users write one (no
``nn.MultiheadAttention``, no fused attention): token embedding plus a
learned position embedding; ``LAYERS`` pre-LayerNorm blocks, each with causal
multi-head self-attention (q/k/v ``nn.Linear`` projections, ``view`` and
``transpose`` into heads, ``q @ k.transpose(-2, -1) * scale``, a causal mask
from ``torch.tril`` applied with ``masked_fill``, softmax, ``@ v``, heads
merged back, output ``nn.Linear``) and a GELU MLP (d -> 4d -> d); a final
LayerNorm and an LM head (``nn.Linear`` without bias).

Dimensions: vocabulary 512, d_model 64, 4 heads of 16, 2 layers
(``--layers``), context 32.
Weights are random with ``torch.manual_seed(0)``; the input is
``input_ids`` int64 ``[batch, seq]``, the output ``logits`` float32
``[batch, seq, 512]``, both axes dynamic.

What is written (``--out``, default ``examples/onnx``)
-----------------------------------------------------
- ``gpt_decoder_torchscript.onnx``: ``torch.onnx.export(..., dynamo=False,
  opset_version=17)``, the TorchScript exporter. Dynamic axes are named
  ``batch`` and ``seq``.
- ``gpt_decoder_dynamo.onnx``: ``torch.onnx.export(..., dynamo=True)``, the
  torch.export-based exporter (it needs ``onnxscript``), opset 20, weights
  inlined into the file. Its dynamic axes are named ``batch`` and ``seq``
  too (``dynamic_shapes`` with ``torch.export.Dim``). Skipped with a message
  when that exporter fails.

The committed files in examples/onnx were made with torch 2.15.0+cu132 (the
PyPI wheel, run on the CPU), onnx 1.23.2 and onnxscript 0.7.2; two runs give
the same bytes. The dynamo export's node metadata quotes this script's path
and line numbers, so a copy made since the script last changed differs from
the committed one in those bytes only (its graph is the same). The script
checks each export with ``onnx.checker`` and, when onnxruntime is
installed, compares its logits with PyTorch's on a [2, 7] input
(onnxruntime 1.32.0: largest difference 4.8e-07 for the TorchScript export,
7.2e-07 for the dynamo one).

How to run
----------
From the repository root (the PyPI torch wheel pulls CUDA libraries, a few
GB; the export runs on the CPU)::

    python3 -m venv /tmp/venv-torch
    /tmp/venv-torch/bin/pip install torch onnx==1.23.2 onnxscript numpy
    /tmp/venv-torch/bin/pip install onnxruntime     # optional: the output check
    /tmp/venv-torch/bin/python scripts/gpt_decoder.py

A large export to time (``scripts/bench.sh``; not committed), 100 blocks, its
symbolic sizes bound for c3 and onnx-tool::

    /tmp/venv-torch/bin/python scripts/gpt_decoder.py --layers 100 --out /tmp/exports
    DIMS="batch=1 seq=32" MODELS="/tmp/exports/gpt_decoder_torchscript.onnx
      /tmp/exports/gpt_decoder_dynamo.onnx" scripts/bench.sh
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings

import torch
from torch import nn
from torch.nn import functional as F

VOCAB = 512
D_MODEL = 64
HEADS = 4
LAYERS = 2
CONTEXT = 32


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int, context: int):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.out = nn.Linear(d, d)
        # The mask is a buffer: the exporter writes it as a constant and
        # slices the [seq, seq] corner out of it for the actual length.
        mask = torch.tril(torch.ones(context, context, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, context, context), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        dh = d // self.heads
        q = self.q(x).view(b, s, self.heads, dh).transpose(1, 2)
        k = self.k(x).view(b, s, self.heads, dh).transpose(1, 2)
        v = self.v(x).view(b, s, self.heads, dh).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        scores = scores.masked_fill(~self.mask[:, :, :s, :s], float("-inf"))
        probs = F.softmax(scores, dim=-1)
        y = (probs @ v).transpose(1, 2).contiguous().view(b, s, d)
        return self.out(y)


class Block(nn.Module):
    def __init__(self, d: int, heads: int, context: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, context)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.proj(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, layers: int = LAYERS):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Embedding(CONTEXT, D_MODEL)
        self.blocks = nn.ModuleList(Block(D_MODEL, HEADS, CONTEXT) for _ in range(layers))
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        s = input_ids.shape[1]
        pos = torch.arange(s, device=input_ids.device)
        x = self.tok(input_ids) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def check(path: str, model: GPT, ids: torch.Tensor) -> None:
    import onnx

    onnx.checker.check_model(onnx.load(path), full_check=True)
    ops: dict[str, int] = {}
    for n in onnx.load(path).graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    size = os.path.getsize(path)
    print(f"{path}: {size} bytes; {sum(ops.values())} nodes: {dict(sorted(ops.items()))}")
    try:
        import onnxruntime as ort
    except ImportError:
        print("  (onnxruntime not installed: outputs not compared)")
        return
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: ids.numpy()})[0]
    want = model(ids).detach().numpy()
    print(f"  onnxruntime vs torch: max |diff| {abs(got - want).max():.2e}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="examples/onnx")
    ap.add_argument(
        "--layers",
        type=int,
        default=LAYERS,
        help="decoder blocks (the committed exports have 2; more make a large export to time)",
    )
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print(f"torch {torch.__version__}")

    torch.manual_seed(0)
    model = GPT(args.layers).eval()
    ids = torch.randint(0, VOCAB, (2, 7))

    path = os.path.join(args.out, "gpt_decoder_torchscript.onnx")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (ids,),
            path,
            dynamo=False,
            opset_version=17,
            input_names=["input_ids"],
            output_names=["logits"],
            dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
        )
    check(path, model, ids)

    path = os.path.join(args.out, "gpt_decoder_dynamo.onnx")
    try:
        batch = torch.export.Dim("batch", min=1, max=1024)
        seq = torch.export.Dim("seq", min=1, max=CONTEXT)
        with torch.no_grad():
            program = torch.onnx.export(
                model,
                (ids,),
                dynamo=True,
                input_names=["input_ids"],
                output_names=["logits"],
                dynamic_shapes={"input_ids": {0: batch, 1: seq}},
                external_data=False,
            )
        program.save(path, external_data=False)
    except Exception as e:  # the dynamo exporter is optional: say why it failed
        print(f"dynamo export failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 0
    check(path, model, ids)
    return 0


if __name__ == "__main__":
    sys.exit(main())
