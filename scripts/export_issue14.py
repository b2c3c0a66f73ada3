#!/usr/bin/env python3
"""Exports the models of issue 14 with random weights (nothing downloaded),
records onnxruntime's shape of every top-level value, and writes
weight-stripped copies (each initializer of more than 64 elements replaced by
a ConstantOfShape, as the model zoo's light models are made).

    scripts/export_issue14.py OUT_DIR [NAME...]

Writes OUT_DIR/NAME.onnx (stripped) and OUT_DIR/NAME.shapes.json
({"value": [dims...]}, plus "counts": Conv/MatMul/Gemm nodes). Models:
fasterrcnn (torchvision fasterrcnn_mobilenet_v3_large_320_fpn), mvit
(torchvision mvit_v2_s), mixtral (a tiny transformers Mixtral), resnet18_int8
(torchvision resnet18 through onnxruntime's QOperator static quantizer),
ssdlite (torchvision ssdlite320_mobilenet_v3_large).
All exports use the TorchScript exporter (dynamo=False).
"""
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper
import onnxruntime as ort
import torch

torch.manual_seed(0)
np.random.seed(0)


def export(model, args, path, names, opset=17, dynamic_axes=None):
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, args, path, opset_version=opset, input_names=names,
                          dynamic_axes=dynamic_axes, dynamo=False)


def fasterrcnn(path):
    import torchvision
    m = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None)
    x = [torch.rand(3, 320, 320)]
    export(m, (x,), path, ["image"])
    return {"image": x[0].numpy()}


def ssdlite(path):
    # The kept boxes are a sum over 90 classes of min(300, NonZero's count):
    # a regression fixture for the limits on symbolic sizes.
    import torchvision
    m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None)
    x = [torch.rand(3, 320, 320)]
    export(m, (x,), path, ["image"])
    return {"image": x[0].numpy()}


def mvit(path):
    import torchvision
    m = torchvision.models.video.mvit_v2_s(weights=None)
    x = torch.rand(1, 3, 16, 224, 224)
    export(m, (x,), path, ["video"])
    repair_loop_counters(path)
    return {"video": x.numpy()}


def repair_loop_counters(path):
    """The TorchScript exporter writes torch.tensor_split's Loops with the
    body's iteration number declared as a [1] tensor and used as one (a
    Slice start); onnxruntime passes the scalar the ONNX specification says,
    and the Slice fails, so onnxruntime cannot run the export as written.
    Each such body gets the scalar under a new name and a Reshape to [1]
    under the old one: every other value, and its shape, is unchanged."""
    m = onnx.load(path)
    shape = numpy_helper.from_array(np.array([1], dtype=np.int64), "loop_counter_shape")

    def repair(g):
        for n in g.node:
            for a in n.attribute:
                if a.type != onnx.AttributeProto.GRAPH:
                    continue
                body = a.g
                if n.op_type == "Loop" and len(body.input) >= 2:
                    counter, cond = body.input[0], body.input[1]
                    dims = counter.type.tensor_type.shape.dim
                    # Declared [1], or (in later blocks) not declared at all
                    # and used as [1] all the same.
                    if len(dims) == 1 or not counter.type.HasField("tensor_type"):
                        scalar = counter.name + "__scalar"
                        reshape = helper.make_node("Reshape", [scalar, shape.name],
                                                   [counter.name],
                                                   name=counter.name + "__as_1d")
                        counter.name = scalar
                        counter.type.CopyFrom(helper.make_tensor_type_proto(
                            onnx.TensorProto.INT64, []))
                        if not any(t.name == shape.name for t in body.initializer):
                            body.initializer.append(shape)
                        body.node.insert(0, reshape)
                    if not cond.type.HasField("tensor_type"):
                        cond.type.CopyFrom(helper.make_tensor_type_proto(
                            onnx.TensorProto.BOOL, []))
                repair(body)

    repair(m.graph)
    onnx.save(m, path)


def mixtral(path):
    from transformers import MixtralConfig, MixtralForCausalLM
    cfg = MixtralConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                        num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, num_local_experts=4,
                        num_experts_per_tok=2, max_position_embeddings=64)
    cfg._attn_implementation = "eager"
    # The loop over experts (what TorchScript traces), not the grouped
    # matrix products whose torch.histc the exporter cannot write.
    cfg._experts_implementation = "eager"
    m = MixtralForCausalLM(cfg)

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, ids):
            # An explicit all-ones mask: without one, transformers 5.x looks
            # for packed sequences with torch.diff, which the TorchScript
            # exporter has no symbolic for (aten::diff).
            mask = torch.ones_like(ids)
            return self.inner(input_ids=ids, attention_mask=mask, use_cache=False,
                              output_router_logits=False).logits

    ids = torch.randint(0, 128, (1, 8))
    export(Logits(m), (ids,), path, ["input_ids"])
    return {"input_ids": ids.numpy()}


def resnet18_int8(path):
    import torchvision
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                          QuantType, quantize_static)
    m = torchvision.models.resnet18(weights=None)
    x = torch.rand(1, 3, 224, 224)
    with tempfile.TemporaryDirectory() as d:
        fp32 = os.path.join(d, "fp32.onnx")
        export(m, (x,), fp32, ["input"], opset=13)
        # onnxruntime's recommended pre-processing (folds what the exporter
        # left as nodes, so every bias is an initializer).
        from onnxruntime.quantization.shape_inference import quant_pre_process
        pre = os.path.join(d, "pre.onnx")
        quant_pre_process(fp32, pre)
        fp32 = pre

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.left = [{"input": np.random.rand(1, 3, 224, 224).astype(np.float32)}
                             for _ in range(2)]

            def get_next(self):
                return self.left.pop() if self.left else None

        quantize_static(fp32, path, Reader(), quant_format=QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return {"input": x.numpy()}


MODELS = {"fasterrcnn": fasterrcnn, "mvit": mvit, "mixtral": mixtral,
          "resnet18_int8": resnet18_int8, "ssdlite": ssdlite}


def ort_shapes(path, feeds, chunk=300):
    """onnxruntime's shape of every top-level node output, asked for a
    chunk of values at a time (all at once, a video model's activations
    hold more memory than the machine has)."""
    base = onnx.load(path)
    known = {o.name for o in base.graph.output}
    names = []
    for n in base.graph.node:
        for o in n.output:
            if o and o not in known:
                names.append(o)
                known.add(o)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    shapes = {}
    for i in range(0, max(len(names), 1), chunk):
        m = onnx.ModelProto()
        m.CopyFrom(base)
        for name in names[i:i + chunk]:
            m.graph.output.append(helper.ValueInfoProto(name=name))
        s = ort.InferenceSession(m.SerializeToString(), opts,
                                 providers=["CPUExecutionProvider"])
        asked = [o.name for o in s.get_outputs()]
        for name, v in zip(asked, s.run(asked, feeds)):
            if isinstance(v, np.ndarray):
                shapes[name] = list(v.shape)
            elif isinstance(v, list):
                shapes[name] = {"sequence": [list(np.asarray(e).shape) for e in v]}
    return shapes


def strip(path, out):
    """Replaces every initializer of more than 64 elements by a
    ConstantOfShape node (0.02 for floats, 1 for integers)."""
    m = onnx.load(path)
    g = m.graph
    kept, made = [], []
    for t in g.initializer:
        if int(np.prod(t.dims)) <= 64:
            kept.append(t)
            continue
        dtype = helper.tensor_dtype_to_np_dtype(t.data_type)
        fill = 0.02 if np.issubdtype(dtype, np.floating) else 1
        shape = numpy_helper.from_array(np.array(t.dims, dtype=np.int64), t.name + "__shape")
        kept.append(shape)
        value = numpy_helper.from_array(np.array([fill], dtype=dtype))
        made.append(helper.make_node("ConstantOfShape", [shape.name], [t.name],
                                     value=value, name=t.name + "__fill"))
    del g.initializer[:]
    g.initializer.extend(kept)
    nodes = made + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    onnx.save(m, out)


def main():
    out_dir = sys.argv[1]
    names = sys.argv[2:] or list(MODELS)
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        with tempfile.TemporaryDirectory() as d:
            full = os.path.join(d, name + ".onnx")
            feeds = MODELS[name](full)
            shapes = ort_shapes(full, feeds)
            counts = {}
            for n in onnx.load(full).graph.node:
                if n.op_type in ("Conv", "MatMul", "Gemm", "QLinearConv", "QLinearMatMul", "QGemm"):
                    counts[n.op_type] = counts.get(n.op_type, 0) + 1
            strip(full, os.path.join(out_dir, name + ".onnx"))
        with open(os.path.join(out_dir, name + ".shapes.json"), "w") as f:
            json.dump({"shapes": shapes, "counts": counts}, f, indent=0, sort_keys=True)
        print(name, len(shapes), "values", counts, flush=True)


if __name__ == "__main__":
    main()
