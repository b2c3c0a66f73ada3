#!/usr/bin/env python3
"""Runs the shipped ``examples/onnx/light_*.onnx`` models with PyTorch, so
that ``scripts/gpu_latency.py --shipped`` can time the very files c3
costs on a GPU.

The light models keep every weight of more than 64 elements as a
``ConstantOfShape`` of its shape (filled with 0.02); here each becomes a
tensor of that shape and value when the model is loaded, and every node
whose inputs are all constants (the weights' ``Unsqueeze``, ``Mul``,
``Add``) is computed then too, as c3 folds it. What is left runs in
order through ``torch.nn.functional``, one call per node, with the ONNX
semantics of opset 9 (the opset these files declare). Only the
operators the nine files use are known; any other raises.

    python3 scripts/onnx_torch.py            # checks each model runs (CPU)
"""

from __future__ import annotations

import math
import os
import sys
from typing import Dict, List

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples", "onnx")


def attrs(node) -> Dict[str, object]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def pads2d(x: torch.Tensor, pads, value: float) -> tuple[torch.Tensor, List[int]]:
    """Symmetric padding as the op's own argument, or the tensor padded."""
    top, left, bottom, right = pads if pads else (0, 0, 0, 0)
    if top == bottom and left == right:
        return x, [top, left]
    return F.pad(x, (left, right, top, bottom), value=value), [0, 0]


def run_node(op: str, a: Dict[str, object], xs: List[torch.Tensor]) -> List[torch.Tensor]:
    if op == "Conv":
        x, pad = pads2d(xs[0], a.get("pads"), 0.0)
        b = xs[2] if len(xs) > 2 else None
        return [F.conv2d(x, xs[1], b, stride=a.get("strides", [1, 1]), padding=pad,
                         dilation=a.get("dilations", [1, 1]), groups=a.get("group", 1))]
    if op == "Relu":
        return [F.relu(xs[0])]
    if op == "LRN":
        return [F.local_response_norm(xs[0], a["size"], alpha=a.get("alpha", 1e-4),
                                      beta=a.get("beta", 0.75), k=a.get("bias", 1.0))]
    if op == "MaxPool":
        x, pad = pads2d(xs[0], a.get("pads"), -math.inf)
        return [F.max_pool2d(x, a["kernel_shape"], stride=a.get("strides", [1, 1]), padding=pad)]
    if op == "AveragePool":
        include = bool(a.get("count_include_pad", 0))
        x, pad = pads2d(xs[0], a.get("pads"), 0.0)
        return [F.avg_pool2d(x, a["kernel_shape"], stride=a.get("strides", [1, 1]), padding=pad,
                             count_include_pad=include)]
    if op == "GlobalAveragePool":
        return [xs[0].mean(dim=(2, 3), keepdim=True)]
    if op == "Gemm":
        A = xs[0].transpose(0, 1) if a.get("transA", 0) else xs[0]
        B = xs[1].transpose(0, 1) if a.get("transB", 0) else xs[1]
        y = a.get("alpha", 1.0) * (A @ B)
        if len(xs) > 2:
            y = y + a.get("beta", 1.0) * xs[2]
        return [y]
    if op == "Dropout":
        return [xs[0]]
    if op == "Softmax":
        axis = a.get("axis", 1)
        shape = xs[0].shape
        flat = xs[0].reshape(math.prod(shape[:axis]), -1)
        return [flat.softmax(dim=1).reshape(shape)]
    if op == "Concat":
        return [torch.cat(xs, dim=a["axis"])]
    if op == "BatchNormalization":
        x, scale, bias, mean, var = xs[:5]
        return [F.batch_norm(x, mean, var, scale, bias, training=False,
                             eps=a.get("epsilon", 1e-5))]
    if op == "Sum":
        y = xs[0]
        for t in xs[1:]:
            y = y + t
        return [y]
    if op in ("Add", "Mul"):
        return [xs[0] + xs[1] if op == "Add" else xs[0] * xs[1]]
    if op == "Reshape":
        shape = [int(d) for d in xs[1].tolist()]
        shape = [xs[0].shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return [xs[0].reshape(shape)]
    if op == "Transpose":
        return [xs[0].permute(*a["perm"])]
    if op == "Unsqueeze":
        y = xs[0]
        for axis in sorted(a["axes"]):
            y = y.unsqueeze(axis)
        return [y]
    raise NotImplementedError(op)


class OnnxModule(torch.nn.Module):
    """An ONNX graph of the operators above, its constants folded."""

    def __init__(self, path: str):
        super().__init__()
        m = onnx.load(path)
        g = m.graph
        consts: Dict[str, torch.Tensor] = {
            t.name: torch.from_numpy(np.array(numpy_helper.to_array(t))) for t in g.initializer
        }
        self.steps = []
        for n in g.node:
            a = attrs(n)
            if n.op_type == "ConstantOfShape" and n.input[0] in consts:
                value = numpy_helper.to_array(a["value"]).reshape(-1)[0] if "value" in a else 0.0
                shape = [int(d) for d in consts[n.input[0]].tolist()]
                consts[n.output[0]] = torch.full(shape, float(value), dtype=torch.float32)
            elif all(i in consts for i in n.input if i):
                outs = run_node(n.op_type, a, [consts[i] for i in n.input if i])
                consts.update(zip(n.output, outs))
            else:
                self.steps.append((n.op_type, a, list(n.input), list(n.output)))
        used = {i for _, _, ins, _ in self.steps for i in ins}
        self.consts = {k: v for k, v in consts.items() if k in used}
        self.input = next(i.name for i in g.input if i.name not in consts)
        self.output = g.output[0].name
        self.input_shape = [d.dim_value for d in next(
            i for i in g.input if i.name == self.input).type.tensor_type.shape.dim]

    def to(self, device):
        # The constants are plain tensors, not parameters. Integer ones
        # (Reshape's shapes) stay on the CPU: they are read as numbers.
        self.consts = {
            k: v.to(device) if v.is_floating_point() else v for k, v in self.consts.items()
        }
        return self

    def half(self):
        self.consts = {k: v.half() if v.is_floating_point() else v for k, v in self.consts.items()}
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values = dict(self.consts)
        values[self.input] = x
        for op, a, ins, outs in self.steps:
            ys = run_node(op, a, [values[i] for i in ins if i])
            values.update(zip(outs, ys))
        return values[self.output]


def shipped() -> List[str]:
    return sorted(
        os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES)
        if f.startswith("light_") and f.endswith(".onnx")
    )


def main() -> int:
    torch.manual_seed(0)
    for path in shipped():
        model = OnnxModule(path).eval()
        x = torch.randn(*model.input_shape)
        with torch.inference_mode():
            y = model(x)
        print(os.path.basename(path), tuple(y.shape), f"{float(y.float().sum()):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
