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
- gpt_sym_<N>.onnx and llama_sym_<N>.onnx (gpt_sym_100000, llama_sym_100000):
  decoders of about N nodes whose batch and sequence sizes are symbolic
  (dim_param `batch` and `seq`, an input_ids and an attention_mask), written
  as torch.onnx.export's TorchScript exporter writes Hugging Face decoders
  once it has folded constants: every small int64 shape constant an
  initializer of its own (so tens of thousands of initializers beside the
  per-layer weights), and the exports' shape arithmetic on the symbolic
  sizes (Shape, Gather, Unsqueeze, Concat, Reshape, Slice, Expand, Where,
  Cast, Range). gpt_sym is GPT-2's (Gemm projections through flattening
  Reshapes, a fused qkv Split, a causal mask sliced from a buffer, an
  additive padding mask, tanh GELU); llama_sym is Llama's (RMSNorm from
  Pow and ReduceMean, rotary embeddings with rotate_half, grouped-query
  attention's Unsqueeze, Expand and Reshape of k and v, a 4-d causal mask
  built once and sliced per layer, SiLU gating, Constant nodes for its
  float scalars), wider and with another op mix, so a speed figure is not
  one graph's. Both pass onnx.checker's full check and run in onnxruntime
  (batch x seq of 1x1, 2x7 and 3x16 checked on gpt_sym_1000 and
  llama_sym_1000).

Needs the `onnx` and `numpy` packages from PyPI:
    python3 -m pip install onnx numpy
    python3 scripts/gen_bench_models.py OUT_DIR [N | convnet_100000 | gpt_<N>_ext
        | gpt_sym_<N> | llama_sym_<N> ...]
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


class Exported:
    """A graph written as the TorchScript exporter writes one after
    constant folding: node outputs named by op and a counter, small
    constants as initializers of their own (`onnx::Op_N`, never shared:
    the exporter folds each use apart)."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def node(self, op, inputs, n_out=1, **attrs):
        self.n += 1
        outs = [f"/{op}_{self.n}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=f"/{op}_{self.n}", **attrs))
        return outs[0] if n_out == 1 else outs

    def weight(self, name, shape, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.zeros(shape, dtype), name))
        return name

    def init(self, values, dtype=np.int64, use="Op"):
        """A folded constant: an initializer of its own."""
        self.n += 1
        name = f"onnx::{use}_{self.n}"
        self.inits.append(numpy_helper.from_array(np.array(values, dtype), name))
        return name

    def constant(self, values, dtype=np.float32):
        """A constant the exporter left as a Constant node."""
        self.n += 1
        out = f"/Constant_{self.n}_output_0"
        t = numpy_helper.from_array(np.array(values, dtype), out)
        self.nodes.append(helper.make_node("Constant", [], [out], name=f"/Constant_{self.n}", value=t))
        return out

    def dim(self, x, i):
        """x.shape[i], a 0-d int64 (symbolic where the size is)."""
        return self.node("Gather", [self.node("Shape", [x]), self.init(i, use="Gather")], axis=0)

    def unsq(self, x, axes=(0,)):
        return self.node("Unsqueeze", [x, self.init(list(axes), use="Unsqueeze")])

    def shape_of(self, *parts):
        """A shape vector from 0-d sizes and plain ints, as `view(b, s, ...)`
        exports: Unsqueeze each size, the ints folded, one Concat."""
        items = [self.unsq(p) if isinstance(p, str) else self.init([p], use="Concat") for p in parts]
        return self.node("Concat", items, axis=0)

    def save(self, path, name, inputs, output, opset=17):
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(i, TensorProto.INT64, ["batch", "seq"]) for i in inputs],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", "seq", None])],
            self.inits,
        )
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)


def gpt_sym(path, n_nodes, d=64, heads=4, positions=1024, vocab=512):
    """GPT-2 (transformers' GPT2LMHeadModel) as exported with symbolic batch
    and seq: blocks of 111 nodes and 78 initializers (12 of them weights;
    a causal buffer every 12 blocks besides) until the graph has n_nodes
    nodes: gpt_sym_100000 has 100,024 nodes and 70,366 initializers (273
    MB)."""
    g, dh = Exported(), d // heads
    ids, am = "input_ids", "attention_mask"
    seq = g.dim(ids, 1)
    pos = g.unsq(g.node("Range", [g.init(0, use="Range"), seq, g.init(1, use="Range")]))
    x = g.node("Add", [g.node("Gather", [g.weight("transformer.wte.weight", (vocab, d)), ids]),
                       g.node("Gather", [g.weight("transformer.wpe.weight", (positions, d)), pos])])
    # The padding mask, (1 - mask) * finfo.min, broadcast over heads and queries.
    m = g.node("Cast", [g.unsq(am, (1, 2))], to=TensorProto.FLOAT)
    m = g.node("Sub", [g.init(1.0, np.float32, "Sub"), m])
    pad = g.node("Mul", [m, g.init(np.finfo(np.float32).min, np.float32, "Mul")])

    def conv1d(h, n_in, n_out, name):
        # transformers' Conv1D: addmm on the flattened input, viewed back.
        size = g.shape_of(g.dim(h, 0), g.dim(h, 1), n_out)
        flat = g.node("Reshape", [h, g.init([-1, n_in], use="Reshape")])
        y = g.node("Gemm", [flat, g.weight(name + ".weight", (n_in, n_out)),
                            g.weight(name + ".bias", (n_out,))], alpha=1.0, beta=1.0)
        return g.node("Reshape", [y, size])

    def heads_of(t):
        t = g.node("Reshape", [t, g.shape_of(g.dim(t, 0), g.dim(t, 1), heads, dh)])
        return g.node("Transpose", [t], perm=[0, 2, 1, 3])

    buffer = None
    layer = 0
    while len(g.nodes) < n_nodes:
        p = f"transformer.h.{layer}."
        if buffer is None or layer % 12 == 0:
            # The causal buffer, a bool [1, 1, P, P] of each attention module
            # (the exporter keeps one per layer it could not prove equal).
            buffer = g.weight(p + "attn.bias", (1, 1, positions, positions), np.bool_)
        ln = g.node("LayerNormalization", [x, g.weight(p + "ln_1.weight", (d,)),
                                           g.weight(p + "ln_1.bias", (d,))], axis=-1, epsilon=1e-5)
        qkv = conv1d(ln, d, 3 * d, p + "attn.c_attn")
        q, k, v = g.node("Split", [qkv, g.init([d, d, d], use="Split")], 3, axis=2)
        q, k, v = heads_of(q), heads_of(k), heads_of(v)
        s = g.node("MatMul", [q, g.node("Transpose", [k], perm=[0, 1, 3, 2])])
        scale = g.node("Pow", [g.node("Cast", [g.dim(v, -1)], to=TensorProto.FLOAT),
                               g.init(0.5, np.float32, "Pow")])
        s = g.node("Div", [s, scale])
        q_len, k_len = g.dim(q, -2), g.dim(k, -2)
        causal = g.node("Slice", [buffer, g.unsq(g.node("Sub", [k_len, q_len])), g.unsq(k_len),
                                  g.init([2], use="Slice"), g.init([1], use="Slice")])
        causal = g.node("Slice", [causal, g.init([0], use="Slice"), g.unsq(k_len),
                                  g.init([3], use="Slice"), g.init([1], use="Slice")])
        s = g.node("Where", [causal, s, g.init(np.finfo(np.float32).min, np.float32, "Where")])
        s = g.node("Add", [s, pad])
        a = g.node("Cast", [g.node("Softmax", [s], axis=-1)], to=TensorProto.FLOAT)
        a = g.node("Transpose", [g.node("MatMul", [a, v])], perm=[0, 2, 1, 3])
        a = g.node("Reshape", [a, g.shape_of(g.dim(a, 0), g.dim(a, 1), d)])
        x = g.node("Add", [conv1d(a, d, d, p + "attn.c_proj"), x])
        ln = g.node("LayerNormalization", [x, g.weight(p + "ln_2.weight", (d,)),
                                           g.weight(p + "ln_2.bias", (d,))], axis=-1, epsilon=1e-5)
        h = conv1d(ln, d, 4 * d, p + "mlp.c_fc")
        # gelu_new: 0.5 * h * (1 + tanh(sqrt(2 / pi) * (h + 0.044715 * h^3)))
        cube = g.node("Mul", [g.init(0.044715, np.float32, "Mul"),
                              g.node("Pow", [h, g.init(3.0, np.float32, "Pow")])])
        inner = g.node("Mul", [g.init(float(np.sqrt(2 / np.pi)), np.float32, "Mul"),
                               g.node("Add", [h, cube])])
        t = g.node("Add", [g.init(1.0, np.float32, "Add"), g.node("Tanh", [inner])])
        h = g.node("Mul", [g.node("Mul", [g.init(0.5, np.float32, "Mul"), h]), t])
        x = g.node("Add", [x, conv1d(h, 4 * d, d, p + "mlp.c_proj")])
        layer += 1
    x = g.node("LayerNormalization", [x, g.weight("transformer.ln_f.weight", (d,)),
                                      g.weight("transformer.ln_f.bias", (d,))], axis=-1, epsilon=1e-5)
    logits = g.node("MatMul", [x, g.weight("lm_head.weight", (d, vocab))])
    g.save(path, f"gpt_sym_{n_nodes}", [ids, am], logits)


def llama_sym(path, n_nodes, d=96, heads=6, kv_heads=2, ffn=256, positions=512, vocab=512):
    """Llama (transformers' LlamaForCausalLM) as exported with symbolic batch
    and seq: RMSNorm, rotary embeddings, grouped-query attention (6 query
    heads, 2 key/value heads of 16) and a SiLU-gated MLP, in blocks of 128
    nodes and 83 initializers (9 of them weights) until the graph has
    n_nodes nodes: llama_sym_100000 has 100,132 nodes and 64,929
    initializers (321 MB)."""
    g, dh, rep = Exported(), d // heads, heads // kv_heads
    ids, am = "input_ids", "attention_mask"
    seq = g.dim(ids, 1)
    batch = g.dim(ids, 0)
    pos = g.unsq(g.node("Range", [g.init(0, use="Range"), seq, g.init(1, use="Range")]))
    x = g.node("Gather", [g.weight("model.embed_tokens.weight", (vocab, d)), ids])
    # Rotary tables for these positions, [1, 1, seq, dh].
    cos = g.unsq(g.node("Gather", [g.weight("model.rotary_emb.cos_cached", (positions, dh)), pos]), (1,))
    sin = g.unsq(g.node("Gather", [g.weight("model.rotary_emb.sin_cached", (positions, dh)), pos]), (1,))
    # The 4-d causal mask, built once: min where key > query or padded, 0
    # elsewhere, expanded to [batch, 1, seq, seq].
    cols = g.node("Range", [g.init(0, use="Range"), seq, g.init(1, use="Range")])
    above = g.node("Greater", [g.unsq(cols), g.unsq(cols, (1,))])
    pad = g.node("Equal", [g.unsq(am, (1, 2)), g.init(0, use="Equal")])
    hide = g.node("Or", [g.node("Expand", [above, g.shape_of(batch, 1, seq, seq)]), pad])
    mask = g.node("Where", [hide, g.constant(np.finfo(np.float32).min), g.constant(0.0)])

    def rms(h, name):
        var = g.node("ReduceMean", [g.node("Pow", [h, g.constant(2.0)]),
                                    g.init([-1], use="ReduceMean")], keepdims=1)
        r = g.node("Reciprocal", [g.node("Sqrt", [g.node("Add", [var, g.constant(1e-6)])])])
        return g.node("Mul", [g.weight(name, (d,)), g.node("Mul", [h, r])])

    def proj(h, n_in, n_out, name):
        return g.node("MatMul", [h, g.weight(name, (n_in, n_out))])

    def heads_of(t, n):
        t = g.node("Reshape", [t, g.shape_of(g.dim(t, 0), g.dim(t, 1), n, dh)])
        return g.node("Transpose", [t], perm=[0, 2, 1, 3])

    def rotary(t):
        half = g.node("Concat", [
            g.node("Neg", [g.node("Slice", [t, g.init([dh // 2], use="Slice"),
                                            g.init([2**63 - 1], use="Slice"),
                                            g.init([3], use="Slice"), g.init([1], use="Slice")])]),
            g.node("Slice", [t, g.init([0], use="Slice"), g.init([dh // 2], use="Slice"),
                             g.init([3], use="Slice"), g.init([1], use="Slice")])], axis=-1)
        return g.node("Add", [g.node("Mul", [t, cos]), g.node("Mul", [half, sin])])

    def repeat_kv(t):
        # [b, kv, s, dh] -> [b, kv, rep, s, dh] -> [b, kv * rep, s, dh]
        b, n, s = g.dim(t, 0), g.dim(t, 1), g.dim(t, 2)
        t = g.node("Expand", [g.unsq(t, (2,)), g.shape_of(b, n, rep, s, dh)])
        n_rep = g.node("Mul", [n, g.init(rep, use="Mul")])
        return g.node("Reshape", [t, g.shape_of(b, n_rep, s, dh)])

    layer = 0
    while len(g.nodes) < n_nodes:
        p = f"model.layers.{layer}."
        h = rms(x, p + "input_layernorm.weight")
        q = rotary(heads_of(proj(h, d, d, p + "self_attn.q_proj.weight"), heads))
        k = rotary(heads_of(proj(h, d, kv_heads * dh, p + "self_attn.k_proj.weight"), kv_heads))
        v = heads_of(proj(h, d, kv_heads * dh, p + "self_attn.v_proj.weight"), kv_heads)
        k, v = repeat_kv(k), repeat_kv(v)
        s = g.node("MatMul", [q, g.node("Transpose", [k], perm=[0, 1, 3, 2])])
        s = g.node("Mul", [s, g.constant(1 / np.sqrt(dh))])
        causal = g.node("Slice", [mask, g.init([0], use="Slice"), g.unsq(g.dim(k, -2)),
                                  g.init([3], use="Slice"), g.init([1], use="Slice")])
        s = g.node("Add", [s, causal])
        a = g.node("Cast", [g.node("Softmax", [s], axis=-1)], to=TensorProto.FLOAT)
        a = g.node("Transpose", [g.node("MatMul", [a, v])], perm=[0, 2, 1, 3])
        a = g.node("Reshape", [a, g.shape_of(g.dim(a, 0), g.dim(a, 1), -1)])
        x = g.node("Add", [x, proj(a, d, d, p + "self_attn.o_proj.weight")])
        h = rms(x, p + "post_attention_layernorm.weight")
        gate = proj(h, d, ffn, p + "mlp.gate_proj.weight")
        act = g.node("Mul", [gate, g.node("Sigmoid", [gate])])
        h = g.node("Mul", [act, proj(h, d, ffn, p + "mlp.up_proj.weight")])
        x = g.node("Add", [x, proj(h, ffn, d, p + "mlp.down_proj.weight")])
        layer += 1
    logits = proj(rms(x, "model.norm.weight"), d, vocab, "lm_head.weight")
    g.save(path, f"llama_sym_{n_nodes}", [ids, am], logits, opset=18)


def sym_of(name):
    """(kind, N) for a name gpt_sym_<N> or llama_sym_<N>; else None."""
    parts = name.split("_")
    if len(parts) == 3 and parts[0] in ("gpt", "llama") and parts[1] == "sym" and parts[2].isdigit():
        return parts[0], int(parts[2])
    return None


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
        elif sym_of(name):
            kind, n = sym_of(name)
            (gpt_sym if kind == "gpt" else llama_sym)(p, n)
        elif ext_of(name):
            external(os.path.join(out, f"gpt_{ext_of(name)}.onnx"), p)
        else:
            sys.exit(f"unknown model {name}")
    for f in sorted(os.listdir(out)):
        print(f"{f}: {os.path.getsize(os.path.join(out, f)):,} bytes")


if __name__ == "__main__":
    main()
