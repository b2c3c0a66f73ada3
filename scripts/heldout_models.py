#!/usr/bin/env python3
"""Export a held-out set of real architectures to ONNX, for judging c3's
latency predictions on models the repository does not ship.

What is written (``--out``, default ``/tmp/c3-heldout``)
-------------------------------------------------------
One file per model and exporter, ``<name>_<exporter>.onnx`` (the dynamo
exporter writes its weights beside it, ``.onnx.data``): torchvision's
constructors and Hugging Face transformers' model classes built from their
default configurations, each with random weights (``torch.manual_seed(0)``),
in eval mode. Nothing is downloaded: no pretrained weights, no hub. The
input's first dimension is a symbolic ``batch`` where the exporter keeps
it (the TorchScript exporter always; the dynamo one for the torchvision
models), so ``c3 estimate --dim batch=4`` and onnxruntime take any batch.
Token models take ``input_ids`` int64 ``[batch, 128]`` and give the last
hidden state.

``NAME`` is a torchvision model name (``resnet18``) or ``hf_`` and one of
the transformers models below; ``NAME:ts`` exports with the TorchScript
exporter (``dynamo=False``, opset 17), ``NAME:dynamo`` (the default) with
the dynamo one. A model that does not export is reported and skipped.

How to run
----------
With torch, torchvision, transformers, onnx and onnxscript installed::

    python3 scripts/heldout_models.py --out /tmp/c3-heldout \\
        resnet18 mobilenet_v3_large:ts efficientnet_b0:ts convnext_tiny \\
        vit_b_16 swin_t:ts regnet_y_800mf:ts densenet121 hf_bert:ts hf_vit

The default list (no names given) is the set docs/latency.md's tables were
measured on.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

DEFAULT = [
    "resnet18", "resnet18:ts", "resnet50:ts", "resnext50_32x4d:ts", "mobilenet_v2:ts",
    "mobilenet_v3_large:ts", "mobilenet_v3_small", "efficientnet_b0:ts", "mnasnet1_0:ts",
    "regnet_y_800mf:ts", "regnet_x_400mf", "densenet121", "googlenet:ts", "squeezenet1_1:ts",
    "shufflenet_v2_x1_0", "shufflenet_v2_x0_5:ts", "alexnet", "vgg11:ts", "convnext_tiny",
    "vit_b_16", "swin_t:ts", "r3d_18:ts",
    "hf_bert:ts", "hf_distilbert:ts", "hf_roberta", "hf_electra:ts", "hf_vit", "hf_deit",
]

TOKENS = 128


def torchvision_model(name: str, batch: int):
    import torch
    import torchvision

    model = torchvision.models.get_model(name, weights=None).eval()
    video = name.startswith(("r3d", "r2plus1d", "mc3", "s3d", "mvit"))
    x = torch.randn(batch, 3, 16, 112, 112) if video else torch.randn(batch, 3, 224, 224)
    return model, (x,), "x"


def transformers_model(name: str, batch: int):
    import torch
    import transformers as T

    configs = {
        "bert": (T.BertConfig, T.BertModel),
        "distilbert": (T.DistilBertConfig, T.DistilBertModel),
        "roberta": (T.RobertaConfig, T.RobertaModel),
        "electra": (T.ElectraConfig, T.ElectraModel),
        "albert": (T.AlbertConfig, T.AlbertModel),
        "vit": (T.ViTConfig, T.ViTModel),
        "deit": (T.DeiTConfig, T.DeiTModel),
    }
    if name not in configs:
        raise ValueError(f"no transformers model '{name}' here (one of {', '.join(configs)})")
    config_class, model_class = configs[name]
    model = model_class(config_class()).eval()
    if name in ("vit", "deit"):
        return model, (torch.randn(batch, 3, 224, 224),), "pixel_values"

    class LastHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            return self.inner(input_ids=input_ids).last_hidden_state

    ids = torch.randint(0, 1000, (batch, TOKENS))
    return LastHidden(model), (ids,), "input_ids"


def export(spec: str, out: str) -> str:
    import torch

    name, _, exporter = spec.partition(":")
    exporter = exporter or "dynamo"
    if exporter not in ("dynamo", "ts"):
        raise ValueError(f"{spec}: the exporter is ts or dynamo")
    # torch.export specialises a size of 1: the dynamo exporter is shown 2.
    batch = 2 if exporter == "dynamo" else 1
    torch.manual_seed(0)
    if name.startswith("hf_"):
        model, args, input_name = transformers_model(name[3:], batch)
    else:
        model, args, input_name = torchvision_model(name, batch)
    path = os.path.join(out, f"{name}_{exporter}.onnx")
    with torch.no_grad():
        if exporter == "dynamo":
            dynamic = None
            if not name.startswith("hf_"):
                dynamic = {input_name: {0: torch.export.Dim("batch", min=1, max=64)}}
            torch.onnx.export(model, args, path, input_names=[input_name], dynamo=True,
                              dynamic_shapes=dynamic, external_data=True, optimize=True)
        else:
            torch.onnx.export(model, args, path, input_names=[input_name], dynamo=False,
                              dynamic_axes={input_name: {0: "batch"}}, opset_version=17)
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="models to export (default: the docs/latency.md set)")
    p.add_argument("--out", default="/tmp/c3-heldout", help="folder to write (default /tmp/c3-heldout)")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    warnings.filterwarnings("ignore")
    failed = 0
    for spec in a.names or DEFAULT:
        try:
            print("exported", export(spec, a.out), flush=True)
        except Exception as e:  # an exporter's failure ends only its model
            failed += 1
            print(f"FAILED {spec}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
    return 1 if failed and failed == len(a.names or DEFAULT) else 0


if __name__ == "__main__":
    sys.exit(main())
