"""Generates the models `scripts/bench.sh` times c3 on. Nothing here is committed.

- vgg16.onnx: VGG16's layers with their real weight sizes (138 million float32
  parameters, about 553 MB, written as raw_data zeros), to check that c3 never
  reads weight bytes.
- transformer_<N>.onnx: a decoder-shaped graph of about N nodes (attention and
  MLP blocks of MatMul, Add, Reshape, Transpose, Softmax, Mul, Relu), its
  weights shared across blocks so the file stays small while the node count
  grows.

Needs the `onnx` and `numpy` packages from PyPI:
    python3 -m pip install onnx numpy
    python3 scripts/gen_bench_models.py OUT_DIR [N ...]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def vgg16(path):
    nodes, inits = [], []
    x, c = "input", 3
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    i = 0
    for v in cfg:
        if v == "M":
            nodes.append(helper.make_node("MaxPool", [x], [f"pool{i}"], kernel_shape=[2, 2], strides=[2, 2]))
            x = f"pool{i}"
        else:
            w = numpy_helper.from_array(np.zeros((v, c, 3, 3), np.float32), f"conv{i}_w")
            b = numpy_helper.from_array(np.zeros((v,), np.float32), f"conv{i}_b")
            inits += [w, b]
            nodes.append(helper.make_node("Conv", [x, w.name, b.name], [f"conv{i}"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
            nodes.append(helper.make_node("Relu", [f"conv{i}"], [f"relu{i}"]))
            x, c = f"relu{i}", v
        i += 1
    nodes.append(helper.make_node("Flatten", [x], ["flat"], axis=1))
    x, n_in = "flat", 512 * 7 * 7
    for j, n_out in enumerate([4096, 4096, 1000]):
        w = numpy_helper.from_array(np.zeros((n_out, n_in), np.float32), f"fc{j}_w")
        b = numpy_helper.from_array(np.zeros((n_out,), np.float32), f"fc{j}_b")
        inits += [w, b]
        nodes.append(helper.make_node("Gemm", [x, w.name, b.name], [f"fc{j}"], transB=1))
        x, n_in = f"fc{j}", n_out
        if j < 2:
            nodes.append(helper.make_node("Relu", [x], [f"fc_relu{j}"]))
            x = f"fc_relu{j}"
    nodes.append(helper.make_node("Softmax", [x], ["prob"], axis=1))
    graph = helper.make_graph(
        nodes, "vgg16",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)


def transformer(path, n_nodes, d=64, heads=4, seq=128):
    inits = []

    def w(name, shape):
        inits.append(numpy_helper.from_array(np.zeros(shape, np.float32), name))
        return name

    def shape_const(name, values):
        inits.append(numpy_helper.from_array(np.array(values, np.int64), name))
        return name

    wqkv, bqkv = w("wqkv", (d, 3 * d)), w("bqkv", (3 * d,))
    wo, w1, w2 = w("wo", (d, d)), w("w1", (d, 4 * d)), w("w2", (4 * d, d))
    scale = w("scale", ())
    split_heads = shape_const("split_heads", [1, seq, 3, heads, d // heads])
    merge = shape_const("merge", [1, seq, d])
    nodes = []
    x = "x"
    layer = 0
    while len(nodes) < n_nodes:
        p = f"l{layer}_"
        block = [
            helper.make_node("MatMul", [x, wqkv], [p + "qkv0"]),
            helper.make_node("Add", [p + "qkv0", bqkv], [p + "qkv"]),
            helper.make_node("Reshape", [p + "qkv", split_heads], [p + "qkv_h"]),
            helper.make_node("Transpose", [p + "qkv_h"], [p + "qkv_t"], perm=[2, 0, 3, 1, 4]),
            helper.make_node("Split", [p + "qkv_t"], [p + "q", p + "k", p + "v"], axis=0, num_outputs=3),
            helper.make_node("Transpose", [p + "k"], [p + "kt"], perm=[0, 1, 2, 4, 3]),
            helper.make_node("MatMul", [p + "q", p + "kt"], [p + "s0"]),
            helper.make_node("Mul", [p + "s0", scale], [p + "s"]),
            helper.make_node("Softmax", [p + "s"], [p + "a"], axis=-1),
            helper.make_node("MatMul", [p + "a", p + "v"], [p + "o"]),
            helper.make_node("Transpose", [p + "o"], [p + "o_t"], perm=[0, 1, 3, 2, 4]),
            helper.make_node("Reshape", [p + "o_t", merge], [p + "o_m"]),
            helper.make_node("MatMul", [p + "o_m", wo], [p + "proj"]),
            helper.make_node("Add", [x, p + "proj"], [p + "res1"]),
            helper.make_node("MatMul", [p + "res1", w1], [p + "h"]),
            helper.make_node("Relu", [p + "h"], [p + "h_act"]),
            helper.make_node("MatMul", [p + "h_act", w2], [p + "mlp"]),
            helper.make_node("Add", [p + "res1", p + "mlp"], [p + "out"]),
        ]
        nodes += block
        x = p + "out"
        layer += 1
    graph = helper.make_graph(
        nodes, f"transformer_{n_nodes}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, d])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(model, path)


def main():
    out = sys.argv[1]
    sizes = [int(a) for a in sys.argv[2:]] or [1000, 10000, 100000]
    os.makedirs(out, exist_ok=True)
    vgg = os.path.join(out, "vgg16.onnx")
    if not os.path.exists(vgg):
        vgg16(vgg)
    for n in sizes:
        p = os.path.join(out, f"transformer_{n}.onnx")
        if not os.path.exists(p):
            transformer(p, n)
    for f in sorted(os.listdir(out)):
        print(f"{f}: {os.path.getsize(os.path.join(out, f)):,} bytes")


if __name__ == "__main__":
    main()
