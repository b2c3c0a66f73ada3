#!/usr/bin/env python3
"""Write the TensorRT profiles the tests join (tests/fixtures/profiles/).

TensorRT was not available where these were made, so no engine was built:
this script writes the two files trtexec 8.6 writes, in their format, from
the model's own node and tensor names and plausible times.

What is written, for ``light_resnet50`` and ``calib_vit_b1`` of
``examples/onnx``:

- ``<model>.trt.profile.json``: what ``trtexec --exportProfile`` writes, a
  JSON list: ``{"count": N}`` then one record a layer of the engine with
  ``timeMs`` (over the N iterations), ``averageMs``, ``medianMs`` and
  ``percentage``.
- ``<model>.trt.layers.json``: what ``trtexec --exportLayerInfo
  --profilingVerbosity=detailed`` writes: ``{"Layers": [...], "Bindings":
  [...]}``, each layer with its ``LayerType``, its input and output tensors
  and the ONNX nodes it ran in ``Metadata`` (separated by U+001F).

How the layers are made, as TensorRT fuses: ResNet-50's convolutions take
their BatchNormalization and Relu (``n4 + n5 + n6``); in the first two
stages a residual Sum and its Relu join the convolution before them, later
they are a pointwise layer of their own (``PWN(PWN(n40), n41)``); a stage's
first convolution names its weight (``gpu_0/res3_0_branch2a_w_0 + ...``);
reformatting copies stand before the first convolution and the classifier;
the flatten before the Gemm is a shuffle TensorRT names itself. ViT: the
patch convolution is a layer, everything from the first Reshape to the
last LayerNormalization one Myelin region (``{ForeignNode[a...b]}``, its
Metadata listing every node), then the class token's Gather and the head.

Times: a layer's is a roofline guess (its FLOPs at 150 TFLOP/s or its
output written at 2 TB/s, whichever is longer, plus 3 us), with a
deterministic jitter; they say nothing of any machine. The tests assert the
joins, not the times.

How to run
----------
From the repository root, with the onnx package::

    python3 scripts/trt_fixtures.py
"""

from __future__ import annotations

import hashlib
import json
import os

import onnx
from onnx import shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "tests", "fixtures", "profiles")
COUNT = 1873
SEP = "\u001f"


def jitter(name: str) -> float:
    h = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
    return 0.9 + 0.2 * (h / 0xFFFFFFFF)


class Graph:
    def __init__(self, path: str):
        model = shape_inference.infer_shapes(onnx.load(path))
        g = model.graph
        self.nodes = [n for n in g.node if n.op_type != "ConstantOfShape"]
        self.shapes = {}
        for v in list(g.value_info) + list(g.output) + list(g.input):
            dims = [d.dim_value if d.HasField("dim_value") else -1
                    for d in v.type.tensor_type.shape.dim]
            self.shapes[v.name] = dims
        self.weights = {i.name: list(i.dims) for i in g.initializer}
        for n in g.node:
            if n.op_type == "ConstantOfShape":
                self.weights[n.output[0]] = []
        self.consumers = {}
        for n in self.nodes:
            for t in n.input:
                self.consumers.setdefault(t, []).append(n)
        self.producer = {o: n for n in self.nodes for o in n.output}
        self.inputs = [i.name for i in g.input]
        self.outputs = [o.name for o in g.output]

    def shape(self, t: str):
        return self.shapes.get(t, self.weights.get(t, []))

    def flops(self, n) -> float:
        out = self.shape(n.output[0])
        size = 1
        for d in out:
            size *= max(d, 1)
        if n.op_type == "Conv":
            w = self.weights.get(n.input[1]) or self.shape(n.input[1])
            k = 1
            for d in w[1:]:
                k *= d
            return 2.0 * size * k
        if n.op_type in ("MatMul", "Gemm"):
            a = self.shape(n.input[0])
            return 2.0 * size * (a[-1] if a else 1)
        return 4.0 * size

    def bytes_out(self, n) -> float:
        size = 1
        for d in self.shape(n.output[0]):
            size *= max(d, 1)
        return 2.0 * size  # FP16


def ms_of(graph: Graph, nodes, name: str) -> float:
    flops = sum(graph.flops(n) for n in nodes)
    written = graph.bytes_out(nodes[-1]) if nodes else 0.0
    return (max(flops / 150e12, written / 2e12) * 1e3 + 0.003) * jitter(name)


def tensor(graph: Graph, name: str, fmt: str = "Row major linear FP16 format"):
    return {"Name": name, "Location": "Device", "Dimensions": graph.shape(name),
            "Format/Datatype": fmt}


class Engine:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.profile = []
        self.layers = []

    def layer(self, name: str, kind: str, nodes, ms: float, inputs, outputs, **more):
        self.profile.append((name, ms))
        info = {"Name": name, "LayerType": kind,
                "Inputs": [tensor(self.graph, t) for t in inputs],
                "Outputs": [tensor(self.graph, t) for t in outputs]}
        if nodes:
            info["Metadata"] = SEP.join(f"[ONNX Layer: {n.name}]" for n in nodes)
        info.update(more)
        info["TacticValue"] = "0x" + hashlib.sha256(name.encode()).hexdigest()[:16]
        self.layers.append(info)

    def copy(self, to: str, tensor_name: str, side: str = "Input"):
        name = f"Reformatting CopyNode for {side} Tensor 0 to {to}"
        self.profile.append((name, 0.004 * jitter(name)))
        self.layers.append({
            "Name": name, "LayerType": "Reformat",
            "Inputs": [tensor(self.graph, tensor_name, "Row major linear FP32 format")],
            "Outputs": [{"Name": f"{tensor_name} copy", "Location": "Device",
                         "Dimensions": self.graph.shape(tensor_name),
                         "Format/Datatype": "Channel major FP16 format with 8 channel vectors"}],
            "ParameterType": "Reformat", "Origin": "REFORMAT",
            "TacticValue": "0x00000000000003e8"})

    def write(self, stem: str, bindings):
        total = sum(ms for _, ms in self.profile)
        records = [{"count": COUNT}]
        for name, ms in self.profile:
            median = round(ms, 6)
            average = round(ms * 1.013, 6)
            records.append({"name": name, "timeMs": round(average * COUNT, 4),
                            "averageMs": average, "medianMs": median,
                            "percentage": round(100 * ms / total, 4)})
        # trtexec's layout: one record a line, commas first.
        text = "[\n  " + "\n, ".join(
            "{ " + ", ".join(f"{json.dumps(k)} : {json.dumps(v)}" for k, v in r.items()) + " }"
            for r in records) + "\n]\n"
        with open(os.path.join(OUT, f"{stem}.trt.profile.json"), "w") as f:
            f.write(text)
        with open(os.path.join(OUT, f"{stem}.trt.layers.json"), "w") as f:
            json.dump({"Layers": self.layers, "Bindings": bindings}, f, indent=1)
            f.write("\n")


def stage_of(conv) -> str:
    """``res3`` of the weight ``gpu_0/res3_0_branch2a_w_0``; ``conv1``."""
    return conv.input[1].split("/")[-1].split("_")[0]


def resnet() -> None:
    g = Graph(os.path.join(ROOT, "examples", "onnx", "light_resnet50.onnx"))
    e = Engine(g)
    done = set()
    stage_seen = set()
    for n in g.nodes:
        if n.name in done:
            continue
        if n.op_type == "Conv":
            group = [n]
            bn = g.consumers[n.output[0]][0]
            group.append(bn)
            after = g.consumers.get(bn.output[0], [])
            pwn = None
            if after and after[0].op_type == "Relu":
                group.append(after[0])
            elif after and after[0].op_type == "Sum":
                s = after[0]
                ready = all(g.producer[t].name in done or g.producer[t] is bn
                            for t in s.input if t in g.producer)
                if ready:
                    relu = g.consumers[s.output[0]][0]
                    if stage_of(n) in ("res2", "res3"):
                        group += [s, relu]
                    else:
                        pwn = [s, relu]
            for m in group:
                done.add(m.name)
            members = [m.name for m in group]
            weight = n.input[1]
            stage = stage_of(n)
            if stage not in stage_seen:
                stage_seen.add(stage)
                members.insert(0, weight)
            name = " + ".join(members[:len(members) - (1 if group[-1].op_type == "Relu" else 0)])
            if group[-1].op_type == "Relu":
                name += f" + PWN({group[-1].name})"
            if n.input[0] in g.inputs:
                e.copy(name, n.input[0])
            e.layer(name, "CaskConvolution", group, ms_of(g, group, name),
                    [n.input[0]] + [t for m in group[2:] for t in m.input
                                    if t not in (group[1].output[0],)
                                    and t in g.producer and g.producer[t] not in group],
                    [group[-1].output[0]],
                    ParameterType="Convolution", TacticName="sm90_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize128x128x64")
            if pwn:
                for m in pwn:
                    done.add(m.name)
                pname = f"PWN(PWN({pwn[0].name}), {pwn[1].name})"
                e.layer(pname, "PointWiseV2", pwn, ms_of(g, pwn, pname),
                        list(pwn[0].input), [pwn[1].output[0]], ParameterType="PointWise")
        elif n.op_type == "Reshape":
            done.add(n.name)
            name = "(Unnamed Layer* 313) [Shuffle]"
            e.profile.append((name, 0.0021 * jitter(name)))
            e.layers.append({"Name": name, "LayerType": "Shuffle",
                             "Inputs": [tensor(g, n.input[0])],
                             "Outputs": [tensor(g, n.output[0])],
                             "ParameterType": "Shuffle", "TacticValue": "0x0000000000000000"})
        else:
            done.add(n.name)
            kind = {"MaxPool": "CaskPooling", "AveragePool": "CaskPooling",
                    "Gemm": "CaskGemm", "Softmax": "CaskSoftMaxV2"}.get(n.op_type, n.op_type)
            if n.op_type == "Gemm":
                e.copy(n.name, n.input[0])
            e.layer(n.name, kind, [n], ms_of(g, [n], n.name),
                    [t for t in n.input if t in g.producer or t in g.inputs],
                    list(n.output))
    e.write("light_resnet50", g.inputs[:1] + g.outputs)


def vit() -> None:
    g = Graph(os.path.join(ROOT, "examples", "onnx", "calib_vit_b1.onnx"))
    e = Engine(g)
    nodes = g.nodes
    conv = nodes[0]
    assert conv.op_type == "Conv"
    e.layer(conv.name, "CaskConvolution", [conv], ms_of(g, [conv], conv.name),
            [conv.input[0]], [conv.output[0]], ParameterType="Convolution")
    last_ln = max(i for i, n in enumerate(nodes) if n.op_type == "LayerNormalization")
    region = nodes[1:last_ln + 1]
    name = f"{{ForeignNode[{region[0].name}...{region[-1].name}]}}"
    e.copy(name, conv.output[0])
    e.layer(name, "Myelin", region, ms_of(g, region, name) * 0.8,
            [conv.output[0]], [region[-1].output[0]])
    for n in nodes[last_ln + 1:]:
        kind = {"Gather": "Gather", "Gemm": "CaskGemm"}.get(n.op_type, n.op_type)
        e.layer(n.name, kind, [n], ms_of(g, [n], n.name),
                [n.input[0]], list(n.output))
    e.write("calib_vit_b1", g.inputs[:1] + g.outputs)


if __name__ == "__main__":
    resnet()
    vit()
