"""The hook's numbers against c3's on the same model exported to ONNX.

Each model is built from a small config with random weights (nothing is
downloaded), run once under ``c3.torch.CostHook`` and exported once with
``torch.onnx.export(dynamo=True)``; both reports come from the same rules.

What must be equal: the products of every Conv, Gemm, MatMul and Attention
layer (their FLOPs less the bias additions, counted in the Gemm by the hook
and in an Add by the exporter), summed over the model, and Conv's FLOPs alone.
Attention is one layer in the hook and two MatMuls (Q·Kᵀ and P·V) in the
exported model, so its products are 2 × B·H·Sq·Skv·d (``attention="full"`` on
both sides: the exported MatMuls compute the whole square).

What differs, op type by op type, is listed in EXPLAINED with the reason;
the test fails when another op type differs or a listed one no longer does.
"""

import collections
import warnings

import pytest

from conftest import needs_torch

pytestmark = needs_torch

# Why an op type's FLOPs differ between the hook and the exported model.
BN_FOLDED = "the exporter folds eval-mode BatchNormalization into the Conv before it"
ATTENTION = (
    "scaled_dot_product_attention: one Attention layer in the hook (Q·Kᵀ, scaling of the "
    "scores, softmax, P·V), decomposed by the exporter into two MatMuls, a Mul on Q and "
    "one on K (√scale each, K's after GQA's head repeat), Softmax, an Add of the mask "
    "over the whole square, and IsNaN/Where guarding fully masked rows"
)
QKV_BIAS = (
    "nn.MultiheadAttention's input projection: a Gemm with its bias on the (tokens, E) "
    "view in the hook; a MatMul and a bias Add on the 3-D input in the exported model"
)
SILU = "SiLU: one Swish in the hook (rules/activation.yaml), Sigmoid and Mul in the export"

EXPLAINED = {
    "resnet18": {"BatchNormalization": BN_FOLDED},
    "mobilenet_v3_small": {"BatchNormalization": BN_FOLDED},
    "vit_b_16": {
        "Gemm": QKV_BIAS, "Add": QKV_BIAS, "MatMul": QKV_BIAS + "; " + ATTENTION,
        "Attention": ATTENTION, "Mul": ATTENTION, "Softmax": ATTENTION,
    },
    "gpt2": {
        "Add": ATTENTION, "MatMul": ATTENTION, "Attention": ATTENTION, "Mul": ATTENTION,
        "Softmax": ATTENTION, "IsNaN": ATTENTION,
    },
    "bert": {
        "Add": ATTENTION, "MatMul": ATTENTION, "Attention": ATTENTION, "Mul": ATTENTION,
        "Softmax": ATTENTION, "IsNaN": ATTENTION,
    },
    "llama": {
        "Add": ATTENTION, "MatMul": ATTENTION, "Attention": ATTENTION,
        "Mul": ATTENTION + "; " + SILU, "Softmax": ATTENTION, "IsNaN": ATTENTION,
        "Swish": SILU, "Sigmoid": SILU,
    },
}


def _randomize(model):
    """Every float parameter and buffer drawn from U(0.5, 1.5): no zero bias
    for the exporter's optimizer to drop, positive BatchNorm variances."""
    import torch

    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point() and t.numel() > 1:
                t.uniform_(0.5, 1.5)
    return model.eval()


def _models():
    import torch
    import torchvision

    torch.manual_seed(0)
    x = torch.randn(1, 3, 224, 224)
    out = {
        "resnet18": (lambda: torchvision.models.resnet18(), (x,), {}),
        "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(), (x,), {}),
        "vit_b_16": (lambda: torchvision.models.vit_b_16(), (x,), {}),
    }
    try:
        import transformers as tf
    except ImportError:
        return out
    ids = torch.randint(0, 1000, (1, 16))
    out["gpt2"] = (
        lambda: tf.GPT2Model(tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000,
                                           n_positions=64, bos_token_id=0, eos_token_id=0)),
        (ids,), {"use_cache": False},
    )
    out["bert"] = (
        lambda: tf.BertModel(tf.BertConfig(hidden_size=64, num_hidden_layers=2,
                                           num_attention_heads=4, intermediate_size=128,
                                           vocab_size=1000)),
        (ids,), {},
    )
    out["llama"] = (
        lambda: tf.LlamaForCausalLM(tf.LlamaConfig(hidden_size=64, intermediate_size=128,
                                                   num_hidden_layers=2, num_attention_heads=4,
                                                   num_key_value_heads=2, vocab_size=1000)),
        (ids,), {"use_cache": False},
    )
    return out


MODELS = ["resnet18", "mobilenet_v3_small", "vit_b_16", "gpt2", "bert", "llama"]


def products(report):
    """FLOPs of Conv, Gemm, MatMul and Attention less what is not a product:
    a Gemm's bias addition (|Y|, FMA on) and attention's scaling and softmax
    (Attention counts B·H·Sq·Skv·(d + dv) products with attention="full")."""
    total = 0
    for layer in report.layers:
        op = layer["op"]
        if op in ("Conv", "ConvTranspose", "MatMul"):
            total += layer["flops"]
        elif op == "Gemm":
            bias = 0 if layer["attrs"].get("nobias") else _numel(layer["outputs"][0]["shape"])
            total += layer["flops"] - bias
        elif op == "Attention":
            q, k, v = layer["inputs"][:3]
            b, h, sq, d = q["shape"]
            skv, dv = k["shape"][2], v["shape"][3]
            total += b * h * sq * skv * (d + dv)
    return total


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _by_op(report):
    out = collections.Counter()
    for layer in report.layers:
        out[layer["op"]] += layer["flops"]
    return out


@pytest.mark.parametrize("name", MODELS)
def test_hook_matches_onnx_export(name):
    import torch

    import c3
    import c3.torch

    models = _models()
    if name not in models:
        pytest.skip("transformers is not installed")
    make, args, kwargs = models[name]
    model = _randomize(make())

    hook = c3.torch.estimate(model, *args, hook_options={"attention": "full"}, **kwargs)

    class Wrapped(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *a):
            return self.m(*a, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(Wrapped(model), args, dynamo=True, verbose=False)
    onnx = c3.estimate(program.model_proto, attention="full")

    assert hook.unsupported == [], hook.unsupported
    assert onnx.unsupported == []
    h, o = _by_op(hook), _by_op(onnx)
    # Convolutions are the same layers with the same shapes on both sides.
    assert h["Conv"] == o["Conv"]
    # Every product of the network, counted once on each side.
    assert products(hook) == products(onnx) > 0
    differing = {op for op in set(h) | set(o) if h[op] != o[op]}
    # Exactly the op types EXPLAINED gives a reason for differ, no other.
    assert differing == set(EXPLAINED[name]), {op: (h[op], o[op]) for op in differing}
    if "BatchNormalization" in differing:
        assert o["BatchNormalization"] == 0 < h["BatchNormalization"]
    if "Attention" in differing:
        assert o["Attention"] == 0 and o["Softmax"] > 0
