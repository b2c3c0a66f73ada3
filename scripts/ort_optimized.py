#!/usr/bin/env python3
"""Models as onnxruntime saves them after its graph optimizations (issue 54):
each exported with random weights (nothing downloaded), then loaded by
onnxruntime with `SessionOptions.optimized_model_filepath` set, at the
EXTENDED level (com.microsoft FusedConv, FusedGemm) and the ALL level (the
com.microsoft.nchwc operators, which carry this machine's channel block: 8
on AVX2, 16 on AVX-512 and ARM64).

    scripts/ort_optimized.py OUT_DIR

Writes, for each model NAME and each LEVEL (`ext`, `all`; the zoo also
`alln`, ALL without the NCHWc transformer, where a Conv+Add+Relu becomes a
FusedConv with its added input Z), a weight-stripped OUT_DIR/NAME.LEVEL.onnx
and OUT_DIR/NAME.LEVEL.shapes.json: onnxruntime's shape of every value the
optimized model's nodes make, the count of each op, the block, and
`products`, the multiply-adds of its convolutions and matrix products
recomputed from those shapes (|Y| * W[1] * kh * kw per convolution,
M * N * K per Gemm). The unoptimized export is written stripped as
OUT_DIR/NAME.onnx, so that a test can compare the counts of both.

Models: resnet18 and mobilenet_v3_small (torchvision, TorchScript exporter,
opset 17), and zoo, a small graph written here with one node of each kind
the optimizer fuses or blocks (every fused activation, a residual Add, the
pools, an Upsample, an NHWC input, padded channels).

Stripping replaces every initializer of more than 64 elements by a
ConstantOfShape node, as scripts/export_issue14.py does; onnxruntime's shapes
are taken from the model before stripping.
"""
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_issue14 import strip  # noqa: E402

np.random.seed(0)


def torchvision_model(name):
    def make(path):
        import torch
        import torchvision
        torch.manual_seed(0)
        m = getattr(torchvision.models, name)(weights=None).eval()
        x = torch.rand(1, 3, 224, 224)
        with torch.no_grad():
            torch.onnx.export(m, (x,), path, input_names=["input"], output_names=["logits"],
                              opset_version=17, dynamo=False)
        return {"input": x.numpy()}
    return make


def zoo(path):
    """An NHWC input, six 3x3 convolutions each with one fused activation,
    a convolution to 24 channels (padded on AVX-512), a 1x1 one whose
    output is added to its input before a Relu, AveragePool, an Upsample
    (Resize by integer scales), MaxPool, both global pools, and two Gemm
    (the first with a Relu)."""
    nodes, inits = [], []

    def weight(name, *dims):
        inits.append(numpy_helper.from_array(
            (np.random.rand(*dims).astype(np.float32) - 0.5) * 0.2, name))
        return name

    def conv(x, out, cin, cout, k, act=None):
        y = out if act is None else out + "_conv"
        nodes.append(helper.make_node(
            "Conv", [x, weight(out + ".w", cout, cin, k, k), weight(out + ".b", cout)], [y],
            name=out, pads=[k // 2] * 4, kernel_shape=[k, k]))
        if act is not None:
            op, extra_inputs, act_attrs = act
            nodes.append(helper.make_node(op, [y] + extra_inputs, [out], name=out + "_act",
                                          **act_attrs))
        return out

    inits.append(numpy_helper.from_array(np.array(0.0, np.float32), "zero"))
    inits.append(numpy_helper.from_array(np.array(6.0, np.float32), "six"))
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
    nodes.append(helper.make_node("Transpose", ["input"], ["nchw"], name="to_nchw",
                                  perm=[0, 3, 1, 2]))
    y = conv("nchw", "c1", 16, 16, 3, ("Relu", [], {}))
    y = conv(y, "c2", 16, 16, 3, ("LeakyRelu", [], {"alpha": 0.1}))
    y = conv(y, "c3", 16, 16, 3, ("Sigmoid", [], {}))
    y = conv(y, "c4", 16, 16, 3, ("Tanh", [], {}))
    y = conv(y, "c5", 16, 16, 3, ("HardSigmoid", [], {"alpha": 0.2, "beta": 0.5}))
    y = conv(y, "c6", 16, 16, 3, ("Clip", ["zero", "six"], {}))
    y = conv(y, "c7", 16, 24, 3, ("Relu", [], {}))
    z = conv(y, "c8", 24, 24, 1)
    nodes.append(helper.make_node("Add", [z, y], ["res"], name="residual"))
    nodes.append(helper.make_node("Relu", ["res"], ["res_relu"], name="residual_relu"))
    y = conv("res_relu", "c9", 24, 32, 3, ("Relu", [], {}))
    nodes.append(helper.make_node("AveragePool", [y], ["avg"], name="avg",
                                  kernel_shape=[2, 2], strides=[2, 2]))
    nodes.append(helper.make_node("Resize", ["avg", "", "scales"], ["up"], name="up",
                                  mode="nearest", coordinate_transformation_mode="asymmetric",
                                  nearest_mode="floor"))
    y = conv("up", "c10", 32, 32, 3, ("Relu", [], {}))
    nodes.append(helper.make_node("MaxPool", [y], ["max"], name="max",
                                  kernel_shape=[2, 2], strides=[2, 2]))
    nodes.append(helper.make_node("GlobalMaxPool", ["max"], ["gmax"], name="gmax"))
    nodes.append(helper.make_node("GlobalAveragePool", ["max"], ["gavg"], name="gavg"))
    nodes.append(helper.make_node("Concat", ["gmax", "gavg"], ["cat"], name="cat", axis=1))
    nodes.append(helper.make_node("Flatten", ["cat"], ["flat"], name="flat"))
    nodes.append(helper.make_node("Gemm", ["flat", weight("fc1.w", 32, 64), weight("fc1.b", 32)],
                                  ["fc1"], name="fc1", transB=1))
    nodes.append(helper.make_node("Relu", ["fc1"], ["fc1_relu"], name="fc1_relu"))
    nodes.append(helper.make_node("Gemm", ["fc1_relu", weight("fc2.w", 10, 32),
                                           weight("fc2.b", 10)], ["logits"], name="fc2", transB=1))
    graph = helper.make_graph(
        nodes, "zoo", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 12, 10, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)
    return {"input": np.random.rand(1, 12, 10, 16).astype(np.float32)}


MODELS = {
    "resnet18": (torchvision_model("resnet18"), ["ext", "all"]),
    "mobilenet_v3_small": (torchvision_model("mobilenet_v3_small"), ["ext", "all"]),
    "zoo": (zoo, ["ext", "all", "alln"]),
}

LEVELS = {
    "ext": (ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, []),
    "all": (ort.GraphOptimizationLevel.ORT_ENABLE_ALL, []),
    "alln": (ort.GraphOptimizationLevel.ORT_ENABLE_ALL, ["NchwcTransformer"]),
}


def optimize(src, dst, level):
    opt_level, disabled = LEVELS[level]
    opts = ort.SessionOptions()
    opts.graph_optimization_level = opt_level
    opts.optimized_model_filepath = dst
    ort.InferenceSession(src, opts, providers=["CPUExecutionProvider"],
                         disabled_optimizers=disabled)


def ort_shapes(path, feeds):
    """onnxruntime's shape of every value a node of `path` makes, the model
    run as saved (no further optimization) with all of them as outputs."""
    m = onnx.load(path)
    known = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in known:
                m.graph.output.append(helper.ValueInfoProto(name=o))
                known.add(o)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return {n: list(v.shape) for n, v in zip(names, s.run(names, feeds))}


def products(path, shapes):
    """Multiply-adds of the convolutions and Gemms, from onnxruntime's
    shapes and the weights' dimensions."""
    m = onnx.load(path)
    dims = {t.name: list(t.dims) for t in m.graph.initializer}
    total = 0
    for n in m.graph.node:
        if n.op_type in ("Conv", "FusedConv"):
            w = dims[n.input[1]]
            total += int(np.prod(shapes[n.output[0]])) * int(np.prod(w[1:]))
        elif n.op_type in ("Gemm", "FusedGemm"):
            trans_a = next((a.i for a in n.attribute if a.name == "transA"), 0)
            a = shapes.get(n.input[0]) or dims[n.input[0]]
            k = a[0] if trans_a else a[1]
            total += int(np.prod(shapes[n.output[0]])) * k
    return total


def machine_block():
    """The channel block of this machine's NCHWc kernels (MLAS): 16 with
    AVX-512 and on ARM64, 8 on other x86-64 machines."""
    import platform
    if platform.machine().lower() in ("arm64", "aarch64"):
        return 16
    with open("/proc/cpuinfo") as f:
        return 16 if "avx512f" in f.read() else 8


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (make, levels) in MODELS.items():
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, name + ".onnx")
            feeds = make(src)
            strip(src, os.path.join(out, name + ".onnx"))
            for level in levels:
                opt = os.path.join(d, f"{name}.{level}.onnx")
                optimize(src, opt, level)
                shapes = ort_shapes(opt, feeds)
                counts = {}
                for n in onnx.load(opt).graph.node:
                    op = n.op_type if not n.domain else f"{n.domain}::{n.op_type}"
                    counts[op] = counts.get(op, 0) + 1
                record = {"shapes": shapes, "counts": counts, "products": products(opt, shapes)}
                if level == "all":
                    record["block"] = machine_block()
                strip(opt, os.path.join(out, f"{name}.{level}.onnx"))
                with open(os.path.join(out, f"{name}.{level}.shapes.json"), "w") as f:
                    json.dump(record, f, indent=0, sort_keys=True)
                print(name, level, len(shapes), "values", counts, flush=True)


if __name__ == "__main__":
    main()
