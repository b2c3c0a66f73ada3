#!/usr/bin/env python3
"""Make c3 operator-trace fixtures from real Chainer forward passes.

What it does
------------
For each network below it runs one inference forward pass
(``chainer.using_config('train', False)`` + ``chainer.no_backprop_mode()``,
random float32 input, weights initialised at random with
``pretrained_model=None``) while three Chainer function hooks watch it:

* ``TraceRecorder`` (defined here) turns each Chainer function call into a
  c3 trace layer: ONNX-style op name, ONNX attribute names, inputs in ONNX
  order (``null`` for an absent optional input) and the output shapes
  obtained by calling ``function.forward(in_data)``.
* two ``ComputationalCostHook`` objects from chainer_computational_cost 0.1.2
  (the original Python tool), one with ``fma_1flop=True`` and one with
  ``fma_1flop=False``.  Their ``total_report`` (FLOPs, bytes read, bytes
  written, number of counted layers) is what c3 has to reproduce exactly, so
  the reference figures come from the original tool run on the very same
  forward pass as the trace.

Layer names follow the original tool (``<ChainerClass>-<n>``, counted per
class from 1), so the per-layer report lines up with the trace.

Networks: ResNet50Layers (batch 1 and 2, ``layers=['prob']``),
VGG16Layers (batch 1), GoogLeNet (batch 1) and a small hand-made network
``mixed`` (batch 1 and 2) that touches the remaining supported functions.

Files written to ``--out`` (default ``tests/fixtures/chainer`` in the repo):

* ``<net>_b<batch>.trace.json``  ``{"model", "batch", "layers": [...]}`` with
  one layer per line;
* ``<net>_b<batch>.layers.json`` per-layer figures of the FMA run
  (``name``, ``flops``, ``mread``, ``mwrite``; bytes), only layers the
  original tool counted, in call order;
* ``expected.json``  ``{"<net>_b<batch>": {"fma": {...}, "nofma": {...}}}``.

How to run
----------
chainer_computational_cost 0.1.2 imports
``chainer.functions.pooling.max_pooling_2d``, which Chainer 7 no longer has,
so Chainer 6.7.0 is used.  Chainer 6.7.0 builds only with a setuptools that
still ships ``pkg_resources``, uses ``numpy.float`` (gone in numpy 1.24) and
pins an old ``typing_extensions`` that no longer imports on Python 3.11,
hence (tested with Python 3.11, numpy 1.23.5)::

    python3 -m venv /tmp/venv-chainer
    /tmp/venv-chainer/bin/pip install 'setuptools<70' wheel 'numpy<1.24' \
        six texttable filelock protobuf
    /tmp/venv-chainer/bin/pip install --no-build-isolation chainer==6.7.0
    /tmp/venv-chainer/bin/pip install 'typing_extensions>=4'
    PYTHONPATH=/path/to/chainer_computational_cost-0.1.2 \
        /tmp/venv-chainer/bin/python scripts/chainer_trace.py

(the original tool is taken from its source tree through PYTHONPATH).
"""

import argparse
import json
import os
import sys
import warnings

import numpy as np

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_computational_cost import ComputationalCostHook


# ---------------------------------------------------------------------------
# trace recording


def _dtype_name(dtype):
    return np.dtype(dtype).name


def _tensor(a):
    """Shape/dtype record of an array (None stays None -> JSON null)."""
    if a is None:
        return None
    return {"shape": [int(d) for d in a.shape], "dtype": _dtype_name(a.dtype)}


def _spec(shape, dtype):
    return {"shape": [int(d) for d in shape], "dtype": _dtype_name(dtype)}


def _pair(v):
    if isinstance(v, (tuple, list)):
        return [int(v[0]), int(v[1])]
    return [int(v), int(v)]


def _conv_attrs(func, W):
    ph, pw = int(func.ph), int(func.pw)
    return {
        "kernel_shape": [int(W.shape[2]), int(W.shape[3])],
        "strides": [int(func.sy), int(func.sx)],
        "pads": [ph, pw, ph, pw],
        "dilations": [int(getattr(func, "dy", 1)), int(getattr(func, "dx", 1))],
        "group": int(getattr(func, "groups", 1)),
    }


def _pool_attrs(func, with_ceil=True):
    ph, pw = int(func.ph), int(func.pw)
    attrs = {
        "kernel_shape": [int(func.kh), int(func.kw)],
        "strides": [int(func.sy), int(func.sx)],
        "pads": [ph, pw, ph, pw],
    }
    if with_ceil:
        attrs["ceil_mode"] = 1 if func.cover_all else 0
    return attrs


def _axes_tuple(axis):
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        return [int(a) for a in axis]
    return [int(axis)]


def _reduce_attrs(func):
    attrs = {"keepdims": 1 if getattr(func, "keepdims", False) else 0}
    axes = _axes_tuple(func.axis)
    if axes is not None:
        attrs["axes"] = axes
    return attrs


def describe(func, in_data, outs):
    """Return (op, attrs, inputs) for one Chainer function call."""
    cls = type(func).__name__
    x = in_data[0] if in_data else None
    ins = [_tensor(a) for a in in_data]

    def optional_third():
        return [ins[0], ins[1], ins[2] if len(ins) > 2 else None]

    if cls == "Convolution2DFunction":
        return "Conv", _conv_attrs(func, in_data[1]), optional_third()
    if cls == "Deconvolution2DFunction":
        return "ConvTranspose", _conv_attrs(func, in_data[1]), optional_third()
    if cls == "LinearFunction":
        return "Gemm", {"transB": 1}, optional_third()
    if cls == "FixedBatchNormalization":
        return "BatchNormalization", {"epsilon": float(func.eps)}, ins
    if cls == "ReLU":
        return "Relu", {}, ins
    if cls == "LeakyReLU":
        return "LeakyRelu", {"alpha": float(func.slope)}, ins
    if cls == "Sigmoid":
        return "Sigmoid", {}, ins
    if cls == "Softmax":
        return "Softmax", {"axis": int(func.axis)}, ins
    if cls == "PReLUFunction":
        return "PRelu", {}, ins
    if cls == "MaxPooling2D":
        return "MaxPool", _pool_attrs(func), ins
    if cls == "AveragePooling2D":
        return "AveragePool", _pool_attrs(func), ins
    if cls == "Unpooling2D":
        return "Upsample", {"mode": "nearest"}, [ins[0]]
    if cls == "Upsampling2D":
        return ("MaxUnpool", _pool_attrs(func, with_ceil=False),
                [ins[0], _tensor(np.asarray(func.indexes))])
    if cls == "Add":
        return ("Add" if len(ins) == 2 else "Sum"), {}, ins
    if cls in ("Sub", "Mul", "Div"):
        return cls, {}, ins
    if cls in ("AddConstant", "MulConstant"):
        const = _spec(np.shape(func.value), x.dtype)
        return cls[:3], {}, [ins[0], const]
    if cls in ("SubFromConstant", "DivFromConstant"):
        const = _spec(np.shape(func.value), x.dtype)
        return cls[:3], {}, [const, ins[0]]
    if cls in ("Max", "Min", "Sum") and \
            type(func).__module__.startswith("chainer.functions.math."):
        return "Reduce" + cls, _reduce_attrs(func), ins
    if cls in ("ArgMax", "ArgMin"):
        attrs = {"keepdims": 0}
        if func.axis is not None:
            attrs = {"axis": int(func.axis), "keepdims": 0}
        return cls, attrs, ins
    if cls == "NormalizeL2":
        axis = func.axis
        if isinstance(axis, (tuple, list)):
            axis = axis[0]
        return "LpNormalization", {"axis": int(axis), "p": 2}, ins
    if cls == "LocalResponseNormalization":
        return "LRN", {"size": int(func.n), "bias": float(func.k),
                       "alpha": float(func.alpha),
                       "beta": float(func.beta)}, ins
    if cls == "BroadcastTo":
        return "Expand", {}, [ins[0], _spec([len(func._shape)], np.int64)]
    if cls == "Concat":
        return "Concat", {"axis": int(func.axis)}, ins
    if cls == "Reshape":
        return "Reshape", {}, [ins[0], _spec([outs[0].ndim], np.int64)]
    if cls == "Transpose":
        perm = func.axes
        if perm is None:
            perm = list(reversed(range(x.ndim)))
        return "Transpose", {"perm": [int(p) for p in perm]}, ins
    if cls == "ResizeImages":
        return ("Resize", {"mode": "linear"},
                [ins[0], None, None, _spec([4], np.int64)])
    if cls == "GetItem":
        return "Slice", {}, [ins[0]]
    # anything else keeps its Chainer class name (c3 reports it unsupported)
    return cls, {}, ins


class TraceRecorder(chainer.FunctionHook):
    """Function hook that writes one c3 trace layer per Chainer call."""

    name = "C3TraceRecorder"

    def __init__(self, model=None):
        self.layers = []
        self._per_class = {}
        # The arrays of the model's parameters and persistent buffers.
        self.const_ids = set()
        for link in (model.links() if model is not None else ()):
            for p in link.params(include_uninit=False):
                self.const_ids.add(id(p.array))
            for name in getattr(link, "_persistent", ()):
                v = getattr(link, name, None)
                if isinstance(v, np.ndarray):
                    self.const_ids.add(id(v))

    def forward_postprocess(self, function, in_data):
        # Same as the original tool: run forward once more to learn the
        # output shapes/dtypes.
        outs = function.forward(in_data)
        cls = type(function).__name__
        self._per_class[cls] = self._per_class.get(cls, 0) + 1
        op, attrs, inputs = describe(function, in_data, outs)
        # Parameters and persistent buffers (weights, biases, BN statistics)
        # are marked "const" so c3's --weights what-ifs know them, and so are
        # the constant operands of AddConstant and kin, which describe()
        # synthesizes.
        for i, t in enumerate(inputs):
            if t is None:
                continue
            is_param = i < len(in_data) and id(in_data[i]) in self.const_ids
            synthesized = i >= len(in_data) or (cls.endswith("Constant") and i == (
                0 if cls in ("SubFromConstant", "DivFromConstant") else 1))
            if is_param or synthesized:
                t["const"] = True
        self.layers.append({
            "op": op,
            "domain": "",
            "name": "{}-{}".format(cls, self._per_class[cls]),
            "attrs": attrs,
            "inputs": inputs,
            "outputs": [_tensor(y) for y in outs],
        })


# ---------------------------------------------------------------------------
# networks


class MixedNet(chainer.Chain):
    """Small net touching the layer kinds the big vision models lack."""

    def __init__(self):
        super(MixedNet, self).__init__()
        with self.init_scope():
            self.conv = L.Convolution2D(3, 8, ksize=3, pad=1)
            self.gconv = L.Convolution2D(8, 8, ksize=3, pad=2, dilate=2,
                                         groups=4, nobias=True)
            self.prelu = L.PReLU(shape=(8,))
            self.bn = L.BatchNormalization(8)
            self.deconv = L.Deconvolution2D(8, 4, ksize=4, stride=2, pad=1)
            self.gdeconv = L.Deconvolution2D(8, 4, ksize=2, stride=2,
                                             nobias=True, groups=2)
            self.fc1 = L.Linear(None, 32)
            self.fc2 = L.Linear(32, 10, nobias=True)

    def forward(self, x):
        outs = []
        h = self.conv(x)                                  # N,8,16,16
        h = F.leaky_relu(h, slope=0.1)
        h = self.gconv(h)                                 # grouped+dilated
        h = self.prelu(h)
        h = self.bn(h)
        h = F.sigmoid(h)
        h = F.local_response_normalization(h, n=5, k=2, alpha=1e-4,
                                           beta=0.75)
        h = F.normalize(h, axis=1)
        a = self.deconv(h)                                # N,4,32,32
        b = self.gdeconv(h)                               # N,4,32,32
        h = F.concat([a, b], axis=1)                      # N,8,32,32
        h = F.transpose(h, (0, 1, 3, 2))
        h = F.resize_images(h, (24, 24))
        g = h[:, 2:6, ::2, 4:20]                          # N,4,12,16
        mx = F.max(g, axis=(2, 3), keepdims=True)         # N,4,1,1
        outs.append(F.min(g, axis=1))
        outs.append(F.sum(g, axis=(1, 3)))
        outs.append(F.sum(g))
        outs.append(F.max(g))
        outs.append(F.argmax(g, axis=1))
        outs.append(F.argmin(g, axis=2))
        bc = F.broadcast_to(mx, g.shape)
        s3 = F.add(g, bc, g)                              # 3-way add
        e = g + bc
        e = e - s3
        e = e * bc
        e = e / (s3 + 4.0)
        e = e * 0.5
        e = 1.0 - e
        e = 2.0 / (e + 3.0)
        up = F.unpooling_2d(e, ksize=2, cover_all=False)  # N,4,24,32
        p, idx = F.max_pooling_2d(up, ksize=2, cover_all=False,
                                  return_indices=True)    # N,4,12,16
        u = F.upsampling_2d(p, idx, ksize=2, cover_all=False,
                            outsize=up.shape[2:])
        u = F.average_pooling_2d(u, ksize=2)              # N,4,12,16
        u = F.relu(self.fc1(u))
        u = F.softmax(self.fc2(u))
        outs.append(u)
        return outs


def _vision(name):
    if name == "resnet50":
        net = L.ResNet50Layers(pretrained_model=None)
        return net, (3, 224, 224), lambda x: net(x, layers=["prob"])
    if name == "vgg16":
        net = L.VGG16Layers(pretrained_model=None)
        return net, (3, 224, 224), lambda x: net(x, layers=["prob"])
    if name == "googlenet":
        net = L.GoogLeNet(pretrained_model=None)
        return net, (3, 224, 224), lambda x: net(x, layers=["prob"])
    if name == "mixed":
        net = MixedNet()
        return net, (3, 16, 16), net
    raise ValueError(name)


RUNS = [("resnet50", 1), ("resnet50", 2), ("vgg16", 1), ("googlenet", 1),
        ("mixed", 1), ("mixed", 2)]


def run_one(name, batch, seed=0):
    np.random.seed(seed)
    net, in_shape, call = _vision(name)
    x = np.random.rand(batch, *in_shape).astype(np.float32)
    trace = TraceRecorder(net)
    fma = ComputationalCostHook(fma_1flop=True)
    nofma = ComputationalCostHook(fma_1flop=False)
    with chainer.using_config("train", False), chainer.no_backprop_mode():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with trace, fma, nofma:
                call(x)

    # the original tool names layers the same way; make sure they agree
    traced = [layer["name"] for layer in trace.layers]
    counted = [k for k in fma.layer_report if k != "total"]
    assert set(counted) <= set(traced), "layer naming mismatch"
    assert [n for n in traced if n in set(counted)] == counted

    def totals(hook):
        t = hook.total_report
        return {"flops": t.get("flops", 0), "mread": t.get("mread", 0),
                "mwrite": t.get("mwrite", 0), "layers": t.get("n_layers", 0)}

    per_layer = [{"name": r["name"], "flops": r["flops"],
                  "mread": r["mread"], "mwrite": r["mwrite"]}
                 for k, r in fma.layer_report.items() if k != "total"]
    ignored = sorted(set(v["type"] for v in fma.ignored_layers.values()))
    return trace.layers, totals(fma), totals(nofma), per_layer, ignored


def dump_lines(path, head, layers):
    """Write the trace with one layer per line."""
    with open(path, "w") as f:
        f.write("{")
        for k, v in head.items():
            f.write("{}: {}, ".format(json.dumps(k), json.dumps(v)))
        f.write('"layers": [\n')
        f.write(",\n".join(json.dumps(layer) for layer in layers))
        f.write("\n]}\n")


def dump_records(path, records):
    with open(path, "w") as f:
        f.write("[\n")
        f.write(",\n".join(json.dumps(r) for r in records))
        f.write("\n]\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, os.pardir, "tests", "fixtures", "chainer")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=default_out)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    expected = {}
    for name, batch in RUNS:
        key = "{}_b{}".format(name, batch)
        layers, tot_fma, tot_nofma, per_layer, ignored = run_one(name, batch)
        trace_path = os.path.join(args.out, key + ".trace.json")
        dump_lines(trace_path, {"model": name, "batch": batch}, layers)
        dump_records(os.path.join(args.out, key + ".layers.json"), per_layer)
        expected[key] = {"fma": tot_fma, "nofma": tot_nofma}
        size = os.path.getsize(trace_path)
        print("{}: {} calls, fma {} nofma {} ignored-by-original {}{}".format(
            key, len(layers), tot_fma, tot_nofma, ignored,
            "  (trace over 2 MB!)" if size > 2 * 1024 * 1024 else ""))
        sys.stdout.flush()

    with open(os.path.join(args.out, "expected.json"), "w") as f:
        f.write("{\n")
        f.write(",\n".join("{}: {}".format(json.dumps(k), json.dumps(v))
                           for k, v in expected.items()))
        f.write("\n}\n")


if __name__ == "__main__":
    main()
