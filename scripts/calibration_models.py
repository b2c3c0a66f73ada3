#!/usr/bin/env python3
"""Export a set of ONNX models from PyTorch to calibrate a CPU latency model.

What it is
----------
Fourteen ONNX files of twelve networks written here as ``nn.Module``s, the
way torchvision and Hugging Face transformers write theirs (none of their
constructors is called), each exported at one fixed input shape and then
stripped of its weights like the shipped ``light_*.onnx`` models. They are
for timing with onnxruntime's CPU provider, to fit a latency model on c3's
per-layer figures; such a fit is judged on other models (torchvision and
transformers exports at batch 1 and 4), so between them these hold the
operators, layer sizes and patterns of those, at their real sizes:

=========================  =====  ===========  ============================
calib_<name>.onnx          batch  exporter     what it is
=========================  =====  ===========  ============================
mobilenetv3_b1, _b4        1, 4   TorchScript  MobileNetV3-Large: depthwise
                                               3x3 and 5x5, ReLU, Hardswish,
                                               SE with Hardsigmoid
mobilenetv2_b4             4      TorchScript  MobileNetV2: ReLU6 (Clip)
efficientnet_b1            1      dynamo       EfficientNet-B0: SiLU, SE
                                               with Sigmoid
regnet_b4                  4      dynamo       ResNet stem, ResNeXt (3x3
                                               groups 32) and RegNetY (group
                                               width 16, SE) bottlenecks
densenet_b1                1      dynamo       DenseNet-121's first two
                                               blocks (BatchNorm after
                                               Concat, AveragePool)
convnext_b1                1      TorchScript  ConvNeXt-T widths, depths
                                               1-1-3-1
vit_b1                     1      dynamo       ViT-S/16, 6 blocks, explicit
                                               q/k/v attention
vit_b4                     4      TorchScript  ViT-S/16, 4 blocks, through
                                               nn.MultiheadAttention
swin_b1                    1      dynamo       Swin-T widths, depths 2-2-2-2
bert_b4, bert_b1           4, 1   TorchScript, BERT-base widths, 2 layers,
                                  dynamo       128 tokens, attention mask
gpt_b1                     1      dynamo       GPT-2 style, d_model 512, 4
                                               blocks, 128 tokens, LM head
                                               over 50,257 tokens
r3d_b1                     1      TorchScript  r3d_18 sizes, one block a
                                               stage, on a 8x112x112 clip
=========================  =====  ===========  ============================

The images are 224x224. The docstrings of the classes below say what each
holds. Every input shape is fixed (no symbolic dimension). Weights are
random (``torch.manual_seed(0)`` before each model is built) and the models
are in eval mode. Both exporters fold Conv+BatchNorm pairs (only the
DenseNet keeps BatchNormalization nodes) and a gather from constants (the
Swin relative-position bias becomes a constant added to the scores), as
they do for the torchvision models.

How they are exported
---------------------
Seven by the TorchScript exporter (``torch.onnx.export(..., dynamo=False,
opset_version=17)``), seven by the torch.export-based one (``dynamo=True``,
which needs ``onnxscript``; its default opset, 20 with torch 2.15), with the
weights inlined. The export is not under ``torch.no_grad()``, as users
call it. Before stripping, each export is run once in onnxruntime on a
random input and compared with PyTorch.

Then the weights are stripped as in the ``light_*.onnx`` files: every
float initializer (and every float ``Constant``) of more than 64 elements
becomes a ``ConstantOfShape`` node whose shape is an int64 initializer
``<name>__SHAPE``; these nodes come first in the graph. The k-th stripped
weight is filled with ``0.02 * (1 + k / 4096)``: weights of one value
each, but no two alike, since onnxruntime merges computations whose
inputs are equal (its common-subexpression elimination would otherwise
run the query, key and value projections of an attention block, or the
parallel 1x1 convolutions of a block, as one).
Smaller float initializers and all integer and bool ones are kept. The
files have no external data, and each is well under 1 MB. onnxruntime
folds the ``ConstantOfShape`` nodes when it loads a file, so a stripped
file runs like the original.

What is checked
---------------
For each written file: ``onnx.checker.check_model(full_check=True)``; an
onnxruntime ``CPUExecutionProvider`` session with one intra-op thread and
the default graph optimizations, run on random inputs (two warm-up runs,
then ``--runs`` timed ones, default 10), printing the median latency and
that the outputs are finite; with ``--c3 PATH``, ``c3 estimate FILE
--strict --format json`` must succeed (every operator has a rule and
every shape is inferred), and its total FLOPs are printed.

The committed files in examples/onnx were made with torch 2.15.0+cu132
(the PyPI wheel, run on the CPU), onnx 1.23.2, onnxscript 0.7.2 and
onnxruntime 1.32.0. The dynamo exports' node metadata quote this
script's path and line numbers, so a copy made after the script changes
differs from the committed one in those bytes.

How to run
----------
From the repository root (see ``scripts/gpt_decoder.py`` for the venv;
add ``onnxruntime``, which is needed here)::

    /tmp/venv-torch/bin/python scripts/calibration_models.py --c3 target/release/c3
    /tmp/venv-torch/bin/python scripts/calibration_models.py --only vit_b1,gpt_b1

It takes about two minutes on two cores; the fourteen files run in about
one second together, one run each with one thread.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

# --------------------------------------------------------------------------
# Shared convolution pieces (torchvision's Conv2dNormActivation and friends)
# --------------------------------------------------------------------------


def make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNAct(nn.Sequential):
    """Conv (no bias), BatchNorm, then an activation (None: none)."""

    def __init__(self, cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1,
                 act: Optional[Callable[[], nn.Module]] = nn.ReLU):
        layers: List[nn.Module] = [
            nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        ]
        if act is not None:
            layers.append(act())
        super().__init__(*layers)


class SqueezeExcite(nn.Module):
    """Global average pool, 1x1 conv, act, 1x1 conv, gate, then a Mul."""

    def __init__(self, c: int, squeeze: int, act: Callable[[], nn.Module],
                 gate: Callable[[], nn.Module]):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.act = act()
        self.fc2 = nn.Conv2d(squeeze, c, 1)
        self.gate = gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gate(self.fc2(self.act(self.fc1(self.pool(x)))))


class InvertedResidual(nn.Module):
    """1x1 expand (skipped when exp == cin), depthwise kxk, optional SE, 1x1
    project without activation; a residual Add when the shapes allow."""

    def __init__(self, cin: int, k: int, exp: int, cout: int, stride: int,
                 act: Callable[[], nn.Module], se: Optional[Tuple[int, Callable, Callable]] = None):
        super().__init__()
        layers: List[nn.Module] = []
        if exp != cin:
            layers.append(ConvBNAct(cin, exp, 1, act=act))
        layers.append(ConvBNAct(exp, exp, k, stride, groups=exp, act=act))
        if se is not None:
            squeeze, se_act, se_gate = se
            layers.append(SqueezeExcite(exp, squeeze, se_act, se_gate))
        layers.append(ConvBNAct(exp, cout, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


# --------------------------------------------------------------------------
# MobileNetV3-Large, MobileNetV2, EfficientNet-B0
# --------------------------------------------------------------------------


class MobileNetV3(nn.Module):
    """MobileNetV3-Large as torchvision builds it: 3x3 stem with Hardswish,
    15 inverted residuals (ReLU or Hardswish; SE with ReLU and Hardsigmoid),
    a 1x1 conv to 960, global pool, Linear 960->1280, Hardswish, Linear."""

    # kernel, expanded, out, SE, activation (RE or HS), stride
    CONFIG = [
        (3, 16, 16, False, "RE", 1), (3, 64, 24, False, "RE", 2), (3, 72, 24, False, "RE", 1),
        (5, 72, 40, True, "RE", 2), (5, 120, 40, True, "RE", 1), (5, 120, 40, True, "RE", 1),
        (3, 240, 80, False, "HS", 2), (3, 200, 80, False, "HS", 1),
        (3, 184, 80, False, "HS", 1), (3, 184, 80, False, "HS", 1),
        (3, 480, 112, True, "HS", 1), (3, 672, 112, True, "HS", 1),
        (5, 672, 160, True, "HS", 2), (5, 960, 160, True, "HS", 1), (5, 960, 160, True, "HS", 1),
    ]

    def __init__(self):
        super().__init__()
        layers: List[nn.Module] = [ConvBNAct(3, 16, 3, 2, act=nn.Hardswish)]
        cin = 16
        for k, exp, cout, se, a, s in self.CONFIG:
            act = nn.ReLU if a == "RE" else nn.Hardswish
            se_cfg = (make_divisible(exp // 4), nn.ReLU, nn.Hardsigmoid) if se else None
            layers.append(InvertedResidual(cin, k, exp, cout, s, act, se_cfg))
            cin = cout
        layers.append(ConvBNAct(cin, 960, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(960, 1280), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(1280, 1000))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class MobileNetV2(nn.Module):
    """MobileNetV2 (width 1.0): ReLU6 (Clip) everywhere, expansion 6, no SE;
    F.adaptive_avg_pool2d to 1x1, flatten, Linear to 1000."""

    CONFIG = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
              (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self):
        super().__init__()
        layers: List[nn.Module] = [ConvBNAct(3, 32, 3, 2, act=nn.ReLU6)]
        cin = 32
        for t, c, n, s in self.CONFIG:
            for i in range(n):
                layers.append(InvertedResidual(cin, 3, cin * t, c, s if i == 0 else 1, nn.ReLU6))
                cin = c
        layers.append(ConvBNAct(cin, 1280, 1, act=nn.ReLU6))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, 1000))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


class EfficientNetB0(nn.Module):
    """EfficientNet-B0: SiLU, MBConv with SE (squeeze to a quarter of the
    block's input channels, SiLU, Sigmoid), 3x3 and 5x5 depthwise."""

    # expand ratio, kernel, stride, in, out, layers
    CONFIG = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
              (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
              (6, 3, 1, 192, 320, 1)]

    def __init__(self):
        super().__init__()
        layers: List[nn.Module] = [ConvBNAct(3, 32, 3, 2, act=nn.SiLU)]
        for e, k, s, cin, cout, n in self.CONFIG:
            for i in range(n):
                c = cin if i == 0 else cout
                se = (max(1, c // 4), nn.SiLU, nn.Sigmoid)
                layers.append(InvertedResidual(c, k, c * e, cout, s if i == 0 else 1, nn.SiLU, se))
        layers.append(ConvBNAct(320, 1280, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, 1000))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


# --------------------------------------------------------------------------
# ResNeXt and RegNetY blocks (grouped 3x3 convs)
# --------------------------------------------------------------------------


class GroupedBottleneck(nn.Module):
    """1x1 reduce, grouped 3x3 (stride here), optional SE (RegNetY: squeeze
    to a quarter of the block input, ReLU, Sigmoid), 1x1 expand without
    activation, projection shortcut when needed, Add, ReLU."""

    def __init__(self, cin: int, width: int, cout: int, groups: int, stride: int, se: bool):
        super().__init__()
        self.a = ConvBNAct(cin, width, 1)
        self.b = ConvBNAct(width, width, 3, stride, groups=groups)
        self.se = SqueezeExcite(width, cin // 4, nn.ReLU, nn.Sigmoid) if se else nn.Identity()
        self.c = ConvBNAct(width, cout, 1, act=None)
        self.proj = (ConvBNAct(cin, cout, 1, stride, act=None)
                     if stride != 1 or cin != cout else nn.Identity())
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.proj(x) + self.c(self.se(self.b(self.a(x)))))


class GroupedNet(nn.Module):
    """ResNet stem (7x7 stride 2, BN, ReLU, 3x3 MaxPool stride 2) on 224x224;
    two ResNeXt-50 32x4d bottlenecks at 56x56 (width 128, groups 32), one
    ResNeXt stride-2 bottleneck to 28x28 (width 256, groups 32), two RegNetY
    blocks (width 256 -> 368, group width 16, SE) down to 14x14; global
    pool and a Linear to 1000."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(ConvBNAct(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        self.blocks = nn.Sequential(
            GroupedBottleneck(64, 128, 256, 32, 1, se=False),
            GroupedBottleneck(256, 128, 256, 32, 1, se=False),
            GroupedBottleneck(256, 256, 512, 32, 2, se=False),
            GroupedBottleneck(512, 368, 368, 368 // 16, 2, se=True),
            GroupedBottleneck(368, 368, 368, 368 // 16, 1, se=True),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(368, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.avgpool(self.blocks(self.stem(x))), 1))


# --------------------------------------------------------------------------
# DenseNet (BatchNorm that no conv precedes, so the exporters keep it)
# --------------------------------------------------------------------------


class DenseLayer(nn.Module):
    """torchvision's _DenseLayer: Concat of all earlier features, BN, ReLU,
    1x1 conv to 4 x growth, BN, ReLU, 3x3 conv to growth."""

    def __init__(self, cin: int, growth: int = 32, bn_size: int = 4):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, features: List[torch.Tensor]) -> torch.Tensor:
        x = self.conv1(F.relu(self.norm1(torch.cat(features, 1))))
        return self.conv2(F.relu(self.norm2(x)))


class DenseBlock(nn.Module):
    def __init__(self, layers: int, cin: int, growth: int = 32):
        super().__init__()
        self.layers = nn.ModuleList(DenseLayer(cin + i * growth, growth) for i in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


class DenseNet(nn.Module):
    """DenseNet-121's first two blocks, 224x224: 7x7 stride-2 stem, BN,
    ReLU, 3x3 MaxPool; dense block of 6 layers (growth 32) at 56x56; the
    transition (BN, ReLU, 1x1 conv to half, 2x2 AveragePool); a dense block
    of 4 layers at 28x28; BN, ReLU, global pool, Linear to 1000."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.block1 = DenseBlock(6, 64)
        self.transition = nn.Sequential(nn.BatchNorm2d(256), nn.ReLU(),
                                        nn.Conv2d(256, 128, 1, bias=False), nn.AvgPool2d(2, 2))
        self.block2 = DenseBlock(4, 128)
        self.norm = nn.BatchNorm2d(256)
        self.fc = nn.Linear(256, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block2(self.transition(self.block1(self.stem(x))))
        x = F.adaptive_avg_pool2d(F.relu(self.norm(x)), (1, 1))
        return self.fc(torch.flatten(x, 1))


# --------------------------------------------------------------------------
# ConvNeXt
# --------------------------------------------------------------------------


class LayerNormChannelsFirst(nn.Module):
    """LayerNorm over the channels of NCHW, written out as the ConvNeXt
    authors (and Hugging Face's ConvNext) do: mean, pow, mean, sqrt, div."""

    def __init__(self, c: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class LayerNorm2d(nn.LayerNorm):
    """torchvision's LayerNorm2d: permute to channels-last, LayerNorm, back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7, permute to NHWC, LayerNorm, Linear 4x, GELU, Linear,
    layer scale (Mul by a per-channel gamma), permute back, residual Add."""

    def __init__(self, dim: int):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(1e-6 * torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        y = (self.gamma * y).permute(0, 3, 1, 2)
        return x + y


class ConvNeXt(nn.Module):
    """ConvNeXt-T widths (96, 192, 384, 768), depths 1-1-3-1: a 4x4 stride-4
    stem with a channels-first LayerNorm (written out); between stages a
    LayerNorm2d (permuted nn.LayerNorm) and a 2x2 stride-2 conv; global
    pool, LayerNorm, Linear to 1000."""

    DIMS = (96, 192, 384, 768)
    DEPTHS = (1, 1, 3, 1)

    def __init__(self):
        super().__init__()
        d = self.DIMS
        self.stem = nn.Sequential(nn.Conv2d(3, d[0], 4, 4), LayerNormChannelsFirst(d[0]))
        stages: List[nn.Module] = []
        for i, (dim, depth) in enumerate(zip(d, self.DEPTHS)):
            if i > 0:
                stages.append(nn.Sequential(LayerNorm2d(d[i - 1], eps=1e-6),
                                            nn.Conv2d(d[i - 1], dim, 2, 2)))
            stages.extend(ConvNeXtBlock(dim) for _ in range(depth))
        self.stages = nn.Sequential(*stages)
        self.norm = nn.LayerNorm(d[-1], eps=1e-6)
        self.head = nn.Linear(d[-1], 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(x))
        return self.head(self.norm(x.mean((-2, -1))))


# --------------------------------------------------------------------------
# ViT
# --------------------------------------------------------------------------


class ExplicitSelfAttention(nn.Module):
    """q, k, v Linear; view and transpose into heads; q @ k^T * scale;
    Softmax; @ v; heads merged back; output Linear (Hugging Face's eager
    ViTSelfAttention)."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        dh = d // self.heads
        q = self.q(x).view(b, n, self.heads, dh).transpose(1, 2)
        k = self.k(x).view(b, n, self.heads, dh).transpose(1, 2)
        v = self.v(x).view(b, n, self.heads, dh).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh)
        probs = F.softmax(scores, dim=-1)
        y = torch.matmul(probs, v).transpose(1, 2).reshape(b, n, d)
        return self.out(y)


class TorchMHA(nn.Module):
    """nn.MultiheadAttention(batch_first=True), as torchvision's ViT uses it."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.mha = nn.MultiheadAttention(d, heads, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mha(x, x, x, need_weights=False)[0]


class ViTBlock(nn.Module):
    def __init__(self, d: int, heads: int, mlp: int, attn: Callable[[int, int], nn.Module]):
        super().__init__()
        self.ln1 = nn.LayerNorm(d, eps=1e-6)
        self.attn = attn(d, heads)
        self.ln2 = nn.LayerNorm(d, eps=1e-6)
        self.fc1 = nn.Linear(d, mlp)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(mlp, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


class ViT(nn.Module):
    """ViT-S/16 at 224x224: 16x16 stride-16 patch conv to d_model 384,
    flatten and transpose to 196 tokens, a class token expanded and
    concatenated (197 tokens), a learned position embedding added; pre-
    LayerNorm blocks (6 heads, GELU (erf) MLP of 1536); final LayerNorm
    and a Linear head on the class token."""

    def __init__(self, blocks: int, attn: Callable[[int, int], nn.Module],
                 d: int = 384, heads: int = 6, mlp: int = 1536):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 16, 16)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, 197, d) * 0.02)
        self.blocks = nn.Sequential(*(ViTBlock(d, heads, mlp, attn) for _ in range(blocks)))
        self.ln = nn.LayerNorm(d, eps=1e-6)
        self.head = nn.Linear(d, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        cls = self.cls.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos
        x = self.ln(self.blocks(x))
        return self.head(x[:, 0])


# --------------------------------------------------------------------------
# Swin
# --------------------------------------------------------------------------


def window_partition(x: torch.Tensor, w: int) -> torch.Tensor:
    b, h, wd, c = x.shape
    x = x.view(b, h // w, w, wd // w, w, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, w * w, c)


def window_reverse(x: torch.Tensor, w: int, b: int, h: int, wd: int) -> torch.Tensor:
    c = x.shape[-1]
    x = x.view(b, h // w, wd // w, w, w, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(b, h, wd, c)


class WindowAttention(nn.Module):
    """Fused qkv Linear, reshape/permute into heads, q * scale @ k^T, a
    relative-position bias gathered from a (2w-1)^2 x heads table by an
    int64 index, the shifted-window mask added per window, Softmax, @ v."""

    def __init__(self, dim: int, heads: int, w: int):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.randn((2 * w - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij"))
        coords = torch.flatten(coords, 1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += w - 1
        rel[:, :, 1] += w - 1
        rel[:, :, 0] *= 2 * w - 1
        self.register_buffer("index", rel.sum(-1).flatten(), persistent=False)

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        bw, n, c = x.shape
        qkv = self.qkv(x).reshape(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.table[self.index].view(n, n, -1).permute(2, 0, 1).contiguous()
        attn = attn + bias.unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = attn.view(bw // nw, nw, self.heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.heads, n, n)
        attn = F.softmax(attn, dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(bw, n, c))


def shift_mask(h: int, wd: int, w: int, s: int) -> torch.Tensor:
    """The [windows, w*w, w*w] additive mask of a cyclic shift by s."""
    img = torch.zeros(1, h, wd, 1)
    cnt = 0
    for hs in (slice(0, -w), slice(-w, -s), slice(-s, None)):
        for ws in (slice(0, -w), slice(-w, -s), slice(-s, None)):
            img[:, hs, ws, :] = cnt
            cnt += 1
    win = window_partition(img, w).squeeze(-1)
    m = win.unsqueeze(1) - win.unsqueeze(2)
    return m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0)


class SwinBlock(nn.Module):
    """LayerNorm, cyclic shift (torch.roll) when shifted, window partition,
    window attention, window reverse, roll back, residual; LayerNorm, GELU
    MLP 4x, residual. Works on NHWC."""

    def __init__(self, dim: int, heads: int, res: int, w: int, shift: int):
        super().__init__()
        if res <= w:
            w, shift = res, 0
        self.w, self.shift = w, shift
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, heads, w)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * dim, dim)
        if shift:
            self.register_buffer("mask", shift_mask(res, res, w, shift), persistent=False)
        else:
            self.mask = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, wd, c = x.shape
        y = self.norm1(x)
        if self.shift:
            y = torch.roll(y, shifts=(-self.shift, -self.shift), dims=(1, 2))
        y = self.attn(window_partition(y, self.w), self.mask)
        y = window_reverse(y, self.w, b, h, wd)
        if self.shift:
            y = torch.roll(y, shifts=(self.shift, self.shift), dims=(1, 2))
        x = x + y
        return x + self.fc2(self.act(self.fc1(self.norm2(x))))


class PatchMerging(nn.Module):
    """Four strided slices concatenated on channels, LayerNorm, Linear 4C->2C."""

    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x0 = x[:, 0::2, 0::2, :]
        x1 = x[:, 1::2, 0::2, :]
        x2 = x[:, 0::2, 1::2, :]
        x3 = x[:, 1::2, 1::2, :]
        return self.reduction(self.norm(torch.cat([x0, x1, x2, x3], -1)))


class Swin(nn.Module):
    """Swin-T widths (96 -> 768, heads 3-6-12-24, window 7) with depths
    2-2-2-2 (each stage one plain and one shifted block; the 7x7 stage is a
    single window, so it does not shift), on 224x224."""

    def __init__(self, depths: Sequence[int] = (2, 2, 2, 2)):
        super().__init__()
        self.patch = nn.Conv2d(3, 96, 4, 4)
        self.patch_norm = nn.LayerNorm(96)
        layers: List[nn.Module] = []
        dim, res = 96, 56
        for i, depth in enumerate(depths):
            if i > 0:
                layers.append(PatchMerging(dim))
                dim, res = dim * 2, res // 2
            for j in range(depth):
                layers.append(SwinBlock(dim, dim // 32, res, 7, 0 if j % 2 == 0 else 3))
        self.layers = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_norm(self.patch(x).permute(0, 2, 3, 1))
        x = self.norm(self.layers(x)).permute(0, 3, 1, 2)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.head(x)


# --------------------------------------------------------------------------
# BERT
# --------------------------------------------------------------------------


class BertLayer(nn.Module):
    """Post-LayerNorm encoder layer as in Hugging Face's BertLayer, its
    attention through F.scaled_dot_product_attention with the additive mask
    (the "sdpa" attention transformers uses by default)."""

    def __init__(self, d: int, heads: int, inter: int):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_norm = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, inter)
        self.output = nn.Linear(inter, d)
        self.out_norm = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        dh = d // self.heads
        q = self.query(x).view(b, s, self.heads, dh).transpose(1, 2)
        k = self.key(x).view(b, s, self.heads, dh).transpose(1, 2)
        v = self.value(x).view(b, s, self.heads, dh).transpose(1, 2)
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        ctx = ctx.transpose(1, 2).reshape(b, s, d)
        x = self.attn_norm(self.attn_out(ctx) + x)
        return self.out_norm(self.output(F.gelu(self.intermediate(x))) + x)


class Bert(nn.Module):
    """BERT-base widths (vocabulary 30,522, d_model 768, 12 heads, MLP 3072),
    2 layers: word, position and token-type embeddings (Gather) summed and
    LayerNormed; the int64 attention mask turned into an additive one,
    (1 - mask) * float32 min, broadcast over heads and queries; a Tanh
    pooler on the first token. Inputs input_ids and attention_mask."""

    def __init__(self, layers: int = 2, vocab: int = 30522, d: int = 768, heads: int = 12,
                 inter: int = 3072, max_pos: int = 512):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.position = nn.Embedding(max_pos, d)
        self.token_type = nn.Embedding(2, d)
        self.emb_norm = nn.LayerNorm(d, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(1, max_pos, dtype=torch.long),
                             persistent=False)
        self.layers = nn.ModuleList(BertLayer(d, heads, inter) for _ in range(layers))
        self.pooler = nn.Linear(d, d)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor):
        b, s = input_ids.shape
        tt = self.token_type_ids[:, :s].expand(b, s)
        x = self.word(input_ids) + self.token_type(tt) + self.position(self.position_ids[:, :s])
        x = self.emb_norm(x)
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


# --------------------------------------------------------------------------
# GPT
# --------------------------------------------------------------------------


class Conv1D(nn.Module):
    """Hugging Face GPT-2's Conv1D: addmm of the flattened tokens."""

    def __init__(self, nf: int, nx: int):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape[:-1] + (self.nf,)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(shape)


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    """GPT-2's tanh approximation of GELU (transformers' NewGELUActivation)."""
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
    return 0.5 * x * (1.0 + torch.tanh(inner))


class GPTBlock(nn.Module):
    """Pre-LayerNorm GPT-2 block: fused c_attn (d -> 3d) split into q, k, v,
    F.scaled_dot_product_attention with a boolean causal mask, c_proj; MLP
    d -> 4d -> d with gelu_new."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = Conv1D(3 * d, d)
        self.attn_proj = Conv1D(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = Conv1D(4 * d, d)
        self.mlp_proj = Conv1D(d, 4 * d)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        dh = d // self.heads
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q = q.view(b, s, self.heads, dh).transpose(1, 2)
        k = k.view(b, s, self.heads, dh).transpose(1, 2)
        v = v.view(b, s, self.heads, dh).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.attn_proj(y.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp_proj(gelu_new(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    """GPT-2 style decoder: vocabulary 50,257, d_model 512, 8 heads, 4
    blocks, 1024 positions; token plus position embedding (positions from
    torch.arange); the causal mask made from arange comparisons
    (kv <= q, broadcast to [1, 1, seq, seq]), as transformers materialises
    it for SDPA when it is traced; final LayerNorm; LM head tied to the
    token embedding."""

    def __init__(self, layers: int = 4, vocab: int = 50257, d: int = 512, heads: int = 8):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(1024, d)
        self.blocks = nn.ModuleList(GPTBlock(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        idx = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(idx.unsqueeze(0))
        mask = (idx[None, :] <= idx[:, None])[None, None]
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.ln_f(x))


# --------------------------------------------------------------------------
# 3-D convolutions (torchvision's video ResNets)
# --------------------------------------------------------------------------


class ConvBNReLU3d(nn.Sequential):
    def __init__(self, cin: int, cout: int, k, stride=1, pad=None, relu: bool = True):
        k = (k, k, k) if isinstance(k, int) else k
        pad = tuple(x // 2 for x in k) if pad is None else pad
        layers: List[nn.Module] = [nn.Conv3d(cin, cout, k, stride, pad, bias=False),
                                   nn.BatchNorm3d(cout)]
        if relu:
            layers.append(nn.ReLU())
        super().__init__(*layers)


class BasicBlock3d(nn.Module):
    """R3D BasicBlock: two 3x3x3 convs (the first strided), BN, ReLU; a
    1x1x1 strided projection shortcut when the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = ConvBNReLU3d(cin, cout, 3, stride)
        self.conv2 = ConvBNReLU3d(cout, cout, 3, relu=False)
        self.down = (ConvBNReLU3d(cin, cout, 1, stride, 0, relu=False)
                     if stride != 1 or cin != cout else nn.Identity())
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.conv2(self.conv1(x)) + self.down(x))


class R2Plus1dBlock(nn.Module):
    """R(2+1)D BasicBlock: each 3x3x3 conv factored into a 1x3x3 spatial and
    a 3x1x1 temporal conv with BN and ReLU between."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        mid = (cin * cout * 27) // (cin * 9 + 3 * cout)

        def conv2plus1(a: int, b: int, s: int) -> nn.Module:
            return nn.Sequential(ConvBNReLU3d(a, mid, (1, 3, 3), (1, s, s)),
                                 nn.Conv3d(mid, b, (3, 1, 1), (s, 1, 1), (1, 0, 0), bias=False),
                                 nn.BatchNorm3d(b))

        self.conv1 = nn.Sequential(conv2plus1(cin, cout, stride), nn.ReLU())
        self.conv2 = conv2plus1(cout, cout, 1)
        self.down = ConvBNReLU3d(cin, cout, 1, stride, 0, relu=False)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.conv2(self.conv1(x)) + self.down(x))


class VideoResNet(nn.Module):
    """On a [B, 3, 8, 112, 112] clip, torchvision's r3d_18 sizes with one
    block a stage: R3D stem (3x7x7 conv, stride 1x2x2, 64 channels), an R3D
    block at 64 x 8x56x56, an R3D stride-2 block to 128 x 4x28x28, a 3x3x3
    stride-2 MaxPool3d (as between S3D's stages) to 2x14x14, an R(2+1)D
    stride-2 block to 256 x 1x7x7; AdaptiveAvgPool3d(1), Linear to 400."""

    def __init__(self):
        super().__init__()
        self.stem = ConvBNReLU3d(3, 64, (3, 7, 7), (1, 2, 2), (1, 3, 3))
        self.layer1 = BasicBlock3d(64, 64, 1)
        self.layer2 = BasicBlock3d(64, 128, 2)
        self.pool = nn.MaxPool3d(3, 2, 1)
        self.layer3 = R2Plus1dBlock(128, 256, 2)
        self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.fc = nn.Linear(256, 400)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer2(self.layer1(self.stem(x)))
        x = self.layer3(self.pool(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# --------------------------------------------------------------------------
# The set
# --------------------------------------------------------------------------


@dataclass
class InputSpec:
    name: str
    shape: Tuple[int, ...]
    kind: str = "float"  # "float", "ids" (int64 below `high`), "mask" (int64 0/1)
    high: int = 0


@dataclass
class Spec:
    name: str
    build: Callable[[], nn.Module]
    inputs: List[InputSpec]
    outputs: List[str]
    dynamo: bool


def image(batch: int, size: int = 224) -> List[InputSpec]:
    return [InputSpec("pixel_values", (batch, 3, size, size))]


def tokens(batch: int, vocab: int, mask: bool = False, seq: int = 128) -> List[InputSpec]:
    ids = [InputSpec("input_ids", (batch, seq), "ids", vocab)]
    return ids + [InputSpec("attention_mask", (batch, seq), "mask")] if mask else ids


SPECS: List[Spec] = [
    Spec("mobilenetv3_b1", MobileNetV3, image(1), ["logits"], dynamo=False),
    Spec("mobilenetv3_b4", MobileNetV3, image(4), ["logits"], dynamo=False),
    Spec("mobilenetv2_b4", MobileNetV2, image(4), ["logits"], dynamo=False),
    Spec("efficientnet_b1", EfficientNetB0, image(1), ["logits"], dynamo=True),
    Spec("regnet_b4", GroupedNet, image(4), ["logits"], dynamo=True),
    Spec("densenet_b1", DenseNet, image(1), ["logits"], dynamo=True),
    Spec("convnext_b1", ConvNeXt, image(1), ["logits"], dynamo=False),
    Spec("vit_b1", lambda: ViT(6, ExplicitSelfAttention), image(1), ["logits"], dynamo=True),
    Spec("vit_b4", lambda: ViT(4, TorchMHA), image(4), ["logits"], dynamo=False),
    Spec("swin_b1", Swin, image(1), ["logits"], dynamo=True),
    Spec("bert_b4", Bert, tokens(4, 30522, mask=True), ["last_hidden_state", "pooler_output"],
         dynamo=False),
    Spec("bert_b1", Bert, tokens(1, 30522, mask=True), ["last_hidden_state", "pooler_output"],
         dynamo=True),
    Spec("gpt_b1", GPT, tokens(1, 50257), ["logits"], dynamo=True),
    Spec("r3d_b1", VideoResNet, [InputSpec("clip", (1, 3, 8, 112, 112))], ["logits"], dynamo=False),
]


def make_inputs(specs: List[InputSpec], seed: int) -> List[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for s in specs:
        if s.kind == "float":
            out.append(torch.randn(s.shape, generator=g))
        elif s.kind == "ids":
            out.append(torch.randint(0, s.high, s.shape, generator=g))
        else:  # a padding mask: each row keeps a random-length prefix
            lengths = torch.randint(s.shape[1] // 2, s.shape[1] + 1, (s.shape[0], 1), generator=g)
            out.append((torch.arange(s.shape[1]).unsqueeze(0) < lengths).long())
    return out


def export(spec: Spec, model: nn.Module, args: Tuple[torch.Tensor, ...], path: str) -> None:
    names = [i.name for i in spec.inputs]
    # Not under torch.no_grad(), as users call it: there nn.MultiheadAttention
    # would take its fused fast path, which the TorchScript exporter rejects.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if spec.dynamo:
            program = torch.onnx.export(model, args, dynamo=True, input_names=names,
                                        output_names=spec.outputs, external_data=False)
            program.save(path, external_data=False)
        else:
            torch.onnx.export(model, args, path, dynamo=False, opset_version=17,
                              input_names=names, output_names=spec.outputs)


# --------------------------------------------------------------------------
# Stripping and checks
# --------------------------------------------------------------------------

MAX_KEPT = 64
FILL = 0.02


def strip_weights(model):
    """Every float initializer (or float Constant) of more than MAX_KEPT
    elements becomes ConstantOfShape(<name>__SHAPE) filled with a value of
    its own near FILL (equal weights would let onnxruntime merge the
    computations that read them), those nodes first in the graph; the rest
    is left as it is."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    floats = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16}
    g = model.graph

    def big_float(t) -> bool:
        return t.data_type in floats and math.prod(t.dims) > MAX_KEPT

    kept_nodes = []
    moved = []
    for n in g.node:
        if (n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value"
                and big_float(n.attribute[0].t)):
            t = onnx.TensorProto()
            t.CopyFrom(n.attribute[0].t)
            t.name = n.output[0]
            moved.append(t)
        else:
            kept_nodes.append(n)
    fills = []
    inits = []
    for t in list(g.initializer) + moved:
        if not big_float(t):
            inits.append(t)
            continue
        shape = numpy_helper.from_array(np.array(t.dims, dtype=np.int64), t.name + "__SHAPE")
        inits.append(shape)
        value = FILL * (1 + len(fills) / 4096)
        fills.append(helper.make_node(
            "ConstantOfShape", [shape.name], [t.name], name=t.name + "__fill",
            value=helper.make_tensor("value", t.data_type, [1], [value])))
    stripped = {n.output[0] for n in fills}
    graph_inputs = [i for i in g.input if i.name not in stripped]
    del g.input[:]
    g.input.extend(graph_inputs)
    del g.initializer[:]
    g.initializer.extend(inits)
    del g.node[:]
    g.node.extend(fills + kept_nodes)
    return model


def op_counts(model) -> dict:
    ops: dict = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return dict(sorted(ops.items()))


def ort_session(path: str):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def feeds_of(spec: Spec, tensors: List[torch.Tensor]) -> dict:
    return {i.name: t.numpy() for i, t in zip(spec.inputs, tensors)}


def c3_check(c3: str, path: str) -> Tuple[bool, str]:
    """`c3 estimate --strict`: every operator has a rule; then every layer's
    inputs and outputs must have a shape of plain numbers."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c3.json")
        r = subprocess.run([c3, "estimate", path, "--strict", "--format", "json", "-o", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return False, f"exit {r.returncode}: {r.stderr.strip()[-2000:]}"
        with open(out) as f:
            report = json.load(f)
    unshaped = [layer["name"] for layer in report["layers"]
                for t in layer["inputs"] + layer["outputs"]
                if t is not None and not (isinstance(t.get("shape"), list)
                                          and all(isinstance(x, int) for x in t["shape"]))]
    if report.get("unsupported") or unshaped:
        return False, f"unsupported {report.get('unsupported')}, shapes unknown in {unshaped[:10]}"
    total = report["total"]
    return True, (f"{len(report['layers'])} layers ({len(report.get('folded', []))} folded), "
                  f"{total['flops'] / 1e9:.3f} GFLOPs (a multiply-add once), "
                  f"{total['mrw'] / 2**20:.1f} MiB moved")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="examples/onnx")
    ap.add_argument("--only", help="comma-separated names (e.g. vit_b1,gpt_b1); default: all")
    ap.add_argument("--runs", type=int, default=10, help="timed onnxruntime runs per model")
    ap.add_argument("--c3", help="a c3 binary: also run `c3 estimate FILE --strict` on each file")
    ap.add_argument("--no-compare", action="store_true",
                    help="skip running the unstripped export against PyTorch")
    args = ap.parse_args()

    import onnx

    specs = SPECS
    if args.only:
        wanted = args.only.split(",")
        unknown = set(wanted) - {s.name for s in SPECS}
        if unknown:
            ap.error(f"unknown model(s): {', '.join(sorted(unknown))}")
        specs = [s for s in SPECS if s.name in wanted]
    os.makedirs(args.out, exist_ok=True)
    print(f"torch {torch.__version__}, onnx {onnx.__version__}")

    failed = []
    rows = []
    for spec in specs:
        torch.manual_seed(0)
        model = spec.build().eval()
        inputs = tuple(make_inputs(spec.inputs, seed=1))
        path = os.path.join(args.out, f"calib_{spec.name}.onnx")
        exporter = "dynamo" if spec.dynamo else "torchscript"
        with tempfile.TemporaryDirectory() as d:
            raw = os.path.join(d, "raw.onnx")
            t0 = time.perf_counter()
            export(spec, model, inputs, raw)
            t_export = time.perf_counter() - t0
            proto = onnx.load(raw)
            note = ""
            if not args.no_compare:
                with torch.no_grad():
                    want = model(*inputs)
                want = want if isinstance(want, tuple) else (want,)
                got = ort_session(raw).run(None, feeds_of(spec, list(inputs)))
                diff = max(float(np.abs(g - w.numpy()).max()) for g, w in zip(got, want))
                scale = max(float(np.abs(w.numpy()).max()) for w in want)
                note = f"; unstripped vs torch: max |diff| {diff:.1e} (outputs up to {scale:.1e})"
        stripped = strip_weights(proto)
        onnx.save(stripped, path)
        onnx.checker.check_model(onnx.load(path), full_check=True)
        size = os.path.getsize(path)
        ops = op_counts(stripped)
        print(f"{path}: {exporter} (opset {stripped.opset_import[0].version}), "
              f"exported in {t_export:.0f} s; {size} bytes; {sum(ops.values())} nodes{note}")
        print(f"  inputs: {', '.join(f'{s.name} {list(s.shape)}' for s in spec.inputs)}")
        print(f"  ops: {ops}")

        sess = ort_session(path)
        feeds = feeds_of(spec, make_inputs(spec.inputs, seed=2))
        for _ in range(2):
            outs = sess.run(None, feeds)
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            outs = sess.run(None, feeds)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        finite = all(np.isfinite(o).all() for o in outs)
        print(f"  onnxruntime, 1 thread: median {med * 1e3:.2f} ms of {args.runs} runs; "
              f"outputs {[list(o.shape) for o in outs]}, {'finite' if finite else 'NOT FINITE'}")
        if args.c3:
            ok, c3_note = c3_check(args.c3, path)
            print(f"  c3 estimate --strict: {'ok' if ok else 'FAILED'}, {c3_note}")
            if not ok:
                failed.append(spec.name)
        if not finite:
            failed.append(spec.name)
        rows.append((os.path.basename(path), size, sum(ops.values()), med))
        del model, stripped, proto, sess

    print("\n| file | bytes | nodes | ms (1 thread) |\n| --- | ---: | ---: | ---: |")
    for name, size, nodes, med in rows:
        print(f"| {name} | {size:,} | {nodes:,} | {med * 1e3:.1f} |")
    print(f"total median latency, one run of each: {sum(r[3] for r in rows) * 1e3:.0f} ms")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
