"""Generates the models `scripts/bench.sh` times c3 on. Nothing here is committed.

- vgg16.onnx: VGG16's layers with their real weight sizes (138 million float32
  parameters, about 553 MB, written as raw_data zeros), to check that c3 never
  reads weight bytes.
- gpt_<N>.onnx: a GPT-2-style decoder of N // 100 blocks, each 111 nodes as
  the TorchScript exporter writes them (shape chains of Shape, Gather,
  Unsqueeze and Concat with Constant nodes included) and 608 KB of weights
  of its own: gpt_100000.onnx has 111,003 nodes and 609 MB of embedded
  weights, gpt_10000.onnx 11,103 nodes and 61 MB.

Asked for by name (`bench.sh` with MODELS naming them), two more shapes of
large model:
- convnet_100000.onnx: a ResNet-style stack of 12,500 blocks of 8 nodes
  (100,001 nodes), each block with weights of its own, 100,001 tensors of
  64 bytes to 9 KB (242 MB): many small weights rather than few large ones.
- gpt_<N>_ext.onnx (gpt_100000_ext, gpt_10000_ext): gpt_<N>'s graph with
  its weights saved as external data (gpt_<N>_ext.bin beside it), as
  exports over 2 GB must be; ONNX's shape inference then reads 13 MB of
  gpt_100000_ext, not 618.

Needs the `onnx` and `numpy` packages from PyPI:
    python3 -m pip install onnx numpy
    python3 scripts/gen_bench_models.py OUT_DIR [N | convnet_100000 | gpt_<N>_ext ...]
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


def gpt(path, n_nodes, d=112, heads=4, seq=128, vocab=1024):
    """A GPT-2-style decoder as the TorchScript exporter writes one: n_nodes // 100
    blocks of 111 nodes (LayerNormalization, q/k/v projections, heads split and
    merged through Shape/Gather/Unsqueeze/Concat/Reshape chains with Constant
    nodes, a causal mask sliced from a buffer, a tanh GELU MLP), each block
    with weights of its own (608 KB of float32 raw_data), so the 100000 graph
    has 111,003 nodes and 609 MB of embedded weights."""
    dh = d // heads
    inits, nodes = [], []
    counter = [0]

    def w(name, shape, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.zeros(shape, dtype), name))
        return name

    def node(op, inputs, n_out=1, **attrs):
        counter[0] += 1
        outs = [f"{op.lower()}_{counter[0]}" + (f"_{i}" if n_out > 1 else "") for i in range(n_out)]
        nodes.append(helper.make_node(op, inputs, outs, name=f"/{op}_{counter[0]}", **attrs))
        return outs[0] if n_out == 1 else outs

    def const(values, dtype=np.int64):
        counter[0] += 1
        out = f"const_{counter[0]}"
        t = numpy_helper.from_array(np.array(values, dtype), out)
        nodes.append(helper.make_node("Constant", [], [out], name=f"/Constant_{counter[0]}", value=t))
        return out

    def dim(x, i):
        return node("Gather", [node("Shape", [x]), const(i)], axis=0)

    def unsq(x):
        return node("Unsqueeze", [x, const([0])])

    def split_heads(x, perm):
        shape = node("Concat", [unsq(dim(x, 0)), unsq(dim(x, 1)), const([heads]), const([dh])], axis=0)
        return node("Transpose", [node("Reshape", [x, shape])], perm=perm)

    wte, wpe = w("wte", (vocab, d)), w("wpe", (seq, d))
    mask = w("causal_mask", (1, 1, seq, seq), np.uint8)
    x = node("Add", [node("Gather", [wte, "input_ids"]), wpe])
    for layer in range(max(1, n_nodes // 100)):
        p = f"h{layer}."

        def linear(h, n_in, n_out, name):
            mm = node("MatMul", [h, w(p + name + ".weight", (n_in, n_out))])
            return node("Add", [mm, w(p + name + ".bias", (n_out,))])

        ln1 = node("LayerNormalization", [x, w(p + "ln_1.weight", (d,)), w(p + "ln_1.bias", (d,))], axis=-1)
        q = split_heads(linear(ln1, d, d, "q"), [0, 2, 1, 3])
        k = split_heads(linear(ln1, d, d, "k"), [0, 2, 3, 1])
        v = split_heads(linear(ln1, d, d, "v"), [0, 2, 1, 3])
        s = node("MatMul", [q, k])
        scale = node("Pow", [node("Cast", [dim(v, -1)], to=TensorProto.FLOAT), const(0.5, np.float32)])
        s = node("Div", [s, scale])
        n = unsq(dim(x, 1))
        ends = node("Concat", [n, n], axis=0)
        m = node("Slice", [mask, const([0, 0]), ends, const([2, 3])])
        m = node("Cast", [m], to=TensorProto.BOOL)
        s = node("Where", [m, s, const(-np.inf, np.float32)])
        a = node("Cast", [node("Softmax", [s], axis=-1)], to=TensorProto.FLOAT)
        a = node("MatMul", [a, v])
        a = node("Transpose", [a], perm=[0, 2, 1, 3])
        shape = node("Concat", [unsq(dim(a, 0)), unsq(dim(a, 1)), const([d])], axis=0)
        a = node("Reshape", [a, shape])
        x = node("Add", [x, linear(a, d, d, "attn_out")])
        ln2 = node("LayerNormalization", [x, w(p + "ln_2.weight", (d,)), w(p + "ln_2.bias", (d,))], axis=-1)
        h = linear(ln2, d, 4 * d, "fc")
        # 0.5 * h * (1 + tanh(sqrt(2 / pi) * (h + 0.044715 * h^3)))
        cube = node("Mul", [node("Pow", [h, const(3.0, np.float32)]), const(0.044715, np.float32)])
        inner = node("Mul", [node("Add", [h, cube]), const(float(np.sqrt(2 / np.pi)), np.float32)])
        g = node("Add", [node("Tanh", [inner]), const(1.0, np.float32)])
        g = node("Mul", [node("Mul", [h, g]), const(0.5, np.float32)])
        x = node("Add", [x, linear(g, 4 * d, d, "proj")])
    logits = node("MatMul", [x, w("lm_head.weight", (d, vocab))])
    graph = helper.make_graph(
        nodes, f"gpt_{n_nodes}",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info(logits, TensorProto.FLOAT, [1, seq, vocab])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(model, path)


def convnet(path, blocks=12500, c=16):
    """A ResNet-style stack: a 3x3 stem, then `blocks` blocks of Conv,
    BatchNormalization, Relu, Conv, a residual Add, Relu, a per-channel Mul
    and Sigmoid (8 nodes, 8 weights of 64 bytes to 9 KB, float32 zeros) on
    a 1x16x32x32 activation."""
    inits, nodes = [], []

    def w(name, shape):
        inits.append(numpy_helper.from_array(np.zeros(shape, np.float32), name))
        return name

    def node(op, inputs, out, **attrs):
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    x = node("Conv", ["image", w("stem.weight", (c, 3, 3, 3))], "stem", pads=[1, 1, 1, 1])
    for b in range(blocks):
        p = f"block{b}."
        h = node("Conv", [x, w(p + "conv1.weight", (c, c, 3, 3))], p + "conv1", pads=[1, 1, 1, 1])
        bn = [w(p + f"bn.{k}", (c,)) for k in ("scale", "bias", "mean", "var")]
        h = node("BatchNormalization", [h] + bn, p + "bn")
        h = node("Relu", [h], p + "relu1")
        h = node("Conv", [h, w(p + "conv2.weight", (c, c, 3, 3))], p + "conv2", pads=[1, 1, 1, 1])
        h = node("Relu", [node("Add", [h, x], p + "add")], p + "relu2")
        h = node("Mul", [h, w(p + "gate", (1, c, 1, 1))], p + "mul")
        x = node("Sigmoid", [h], p + "out")
    graph = helper.make_graph(
        nodes, "convnet",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c, 32, 32])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)


def external(src, path):
    """`src` saved again with every tensor of over 1 KB as external data,
    in one file named after `path`."""
    model = onnx.load(src)
    bin_name = os.path.basename(path)[: -len(".onnx")] + ".bin"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location=bin_name, size_threshold=1024)


def ext_of(name):
    """N, for a name gpt_<N>_ext; else None."""
    parts = name.split("_")
    if len(parts) == 3 and parts[0] == "gpt" and parts[1].isdigit() and parts[2] == "ext":
        return parts[1]
    return None


def main():
    out = sys.argv[1]
    asked = sys.argv[2:] or ["1000", "10000", "100000"]
    os.makedirs(out, exist_ok=True)
    vgg = os.path.join(out, "vgg16.onnx")
    if not os.path.exists(vgg):
        vgg16(vgg)
    # An external copy is made from the embedded model: that one first.
    for name in list(asked):
        n = ext_of(name)
        if n and n not in asked:
            asked.append(n)
    for name in sorted(asked, key=lambda a: not a.isdigit()):
        p = os.path.join(out, (f"gpt_{name}" if name.isdigit() else name) + ".onnx")
        if os.path.exists(p):
            continue
        if name.isdigit():
            gpt(p, int(name))
        elif name == "convnet_100000":
            convnet(p)
        elif ext_of(name):
            external(os.path.join(out, f"gpt_{ext_of(name)}.onnx"), p)
        else:
            sys.exit(f"unknown model {name}")
    for f in sorted(os.listdir(out)):
        print(f"{f}: {os.path.getsize(os.path.join(out, f)):,} bytes")


if __name__ == "__main__":
    main()
