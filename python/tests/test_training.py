"""Training cost from the hook: ``c3.torch.estimate(..., training=True)`` and
``CostHook(training=True)`` record the backward pass's aten ops, each charged
to the forward layer it is the gradient of (its ``backward``).

Every model is built from a small config with random weights (nothing is
downloaded). FLOPs are counted with FMA on (a multiply-add is one FLOP), so
a product's count is its number of multiply-adds: PyTorch's FlopCounterMode
counts two FLOPs per multiply-add, hence the factors of 2 below.

What is compared:

- the hook against c3 on the same model exported to ONNX (``c3.estimate(
  onnx, training=True)``, whose backward c3 derives from the graph and the
  rules' ``backward:`` formulas);
- the hook against ``torch.utils.flop_counter.FlopCounterMode`` over the
  same forward and backward passes;
- a Llama-shaped model on the meta device against the analytic count.

What a product layer (Conv, ConvTranspose, Gemm, MatMul, Einsum) counts
besides products, and is taken out before comparing (``products``):

- forward: a Gemm with a bias adds it, one FLOP per output element (|Y|);
- backward: a bias's gradient is a reduction, |Y| - |B| additions (a Gemm's,
  a ``sum`` the hook records as ReduceSum; a Conv's, in its
  ``convolution_backward``, gradient position 2);
- backward, hook only: the sum of the gradients of a tensor several layers
  read is charged to the layer that produced it (an Add of |Y|); c3's
  ONNX route does not count those sums (a difference listed in the report).
"""

import collections
import warnings

import pytest

from conftest import needs_torch

pytestmark = needs_torch

PRODUCTS = ("Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum")


def _numel(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _outputs(obj):
    """The tensors in a model's output (tuples, dicts, ModelOutput)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _outputs(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _outputs(v)]
    if hasattr(obj, "to_tuple"):
        return _outputs(obj.to_tuple())
    return []


def _step(model, args, kwargs):
    """Forward, loss = the sum of every floating output, backward; the
    parameters' gradients start from none."""
    for p in model.parameters():
        p.grad = None
    out = model(*args, **kwargs)
    floats = [t for t in _outputs(out) if t.is_floating_point()]
    loss = floats[0].sum()
    for t in floats[1:]:
        loss = loss + t.sum()
    loss.backward()


def _train_hook(model, args, kwargs, **options):
    import c3.torch

    with c3.torch.CostHook(training=True, **options) as hook:
        _step(model, args, kwargs)
    return hook


def _flop_counter(model, args, kwargs):
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as fc:
        _step(model, args, kwargs)
    for p in model.parameters():
        p.grad = None
    return {k: {str(op): n for op, n in v.items()} for k, v in fc.get_flop_counts().items()}


def _bias(layer):
    """A Gemm's or Conv's bias (input 2), or None."""
    ins = layer["inputs"]
    return ins[2] if len(ins) > 2 and ins[2] is not None else None


def hook_products(hook, weights_only=False):
    """{op: [forward, backward]} products of the hook's product layers: the
    report's FLOPs less the bias additions, the bias gradients and the
    gradient sums charged to the layer (read from the trace's backward
    records). ``weights_only``: only layers reading a weight (not attention's
    activation products)."""
    trace = hook.trace["layers"]
    report = {layer["name"]: layer for layer in hook.report.layers}
    out = collections.defaultdict(lambda: [0, 0])
    for k, rec in enumerate(trace):
        if "backward_of" in rec or rec["op"] not in PRODUCTS:
            continue
        layer = report[rec["name"]]
        if weights_only and not layer["weight_bytes"]:
            continue
        forward = layer["flops"]
        if rec["op"] == "Gemm" and _bias(rec):
            forward -= _numel(rec["outputs"][0]["shape"])
        extra = 0
        for r in trace:
            if r.get("backward_of") != k:
                continue
            y = _numel(r["outputs"][0]["shape"])
            if "grads" in r:
                if 2 in r["grads"] and _bias(r):
                    extra += y - _numel(_bias(r)["shape"])  # the bias gradient
            elif r["op"] == "ReduceSum":  # a Gemm's bias gradient
                extra += _numel(r["inputs"][0]["shape"]) - y
            elif r["op"] == "Add":  # a gradient sum (the layer made the tensor)
                extra += y
            elif r["op"] not in PRODUCTS + ("Identity", "Cast", "Concat", "Pad"):  # 0 FLOPs
                raise AssertionError(f"{rec['name']}: unexpected backward record {r['op']}")
        backward = layer["backward"]["flops"] if layer["backward"] else 0
        out[rec["op"]][0] += forward
        out[rec["op"]][1] += backward - extra
    return dict(out)


def onnx_products(report):
    """{op: [forward, backward]} products of an exported model's product
    layers reading a weight, less the bias additions and bias gradients."""
    out = collections.defaultdict(lambda: [0, 0])
    for layer in report.layers:
        if layer["op"] not in PRODUCTS or not layer["weight_bytes"]:
            continue
        y = _numel(layer["outputs"][0]["shape"])
        bias = _bias(layer)
        forward = layer["flops"] - (y if layer["op"] == "Gemm" and bias else 0)
        backward = layer["backward"]["flops"] if layer["backward"] else 0
        if bias and layer["backward"] and 2 in layer["backward"]["grads"]:
            backward -= y - _numel(bias["shape"])
        out[layer["op"]][0] += forward
        out[layer["op"]][1] += backward
    return dict(out)


# --- the records -------------------------------------------------------------


def _tiny():
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.relu = torch.nn.ReLU()
            self.fc = torch.nn.Linear(4 * 6 * 6, 5)

        def forward(self, x):
            return self.fc(torch.flatten(self.relu(self.conv(x)), 1))

    torch.manual_seed(0)
    return Tiny(), torch.randn(2, 3, 8, 8)


def test_backward_records_of_conv_relu_linear():
    """Conv(3->4, 3x3) on 2x3x8x8, ReLU, Linear(144->5): the trace's backward
    records, and their costs in the report."""
    import c3.torch

    model, x = _tiny()
    hook = _train_hook(model, (x,), {})
    trace = hook.trace["layers"]
    forward = [r["name"] for r in trace if "backward_of" not in r]
    assert forward == ["conv", "relu", "fc", "ReduceSum"]  # the loss, y.sum()
    by_name = {r["name"]: (i, r) for i, r in enumerate(trace)}
    conv, relu, fc = (by_name[n][0] for n in ("conv", "relu", "fc"))
    backward = [(r["name"], r["op"], r["backward_of"], r.get("grads")) for r in trace if "backward_of" in r]
    assert backward == [
        ("fc/backward/mm", "MatMul", fc, None),  # dX = dY · W: (2x5)·(5x144)
        ("fc/backward/mm-2", "MatMul", fc, None),  # dWᵀ = dYᵀ · X: (5x2)·(2x144)
        ("fc/backward/sum", "ReduceSum", fc, None),  # dB: dY summed over the batch
        ("relu/backward/threshold_backward", "Relu", relu, [0]),
        # The input x needs no gradient: the weight's and the bias's only.
        ("conv/backward/convolution_backward", "Conv", conv, [1, 2]),
    ]
    # Parameters carry their module names; the conv's gradient record is its
    # forward layer's description; the graph input is read, never produced.
    rec = by_name["conv/backward/convolution_backward"][1]
    assert [t and t.get("name") for t in rec["inputs"]] == [
        trace[conv]["inputs"][0]["name"], "conv.weight", "conv.bias"]
    assert rec["outputs"] == trace[conv]["outputs"]
    assert trace[relu]["inputs"][0]["name"] == trace[conv]["outputs"][0]["name"]
    # The flatten is a view: the Linear reads the ReLU's output by name.
    assert trace[fc]["inputs"][0]["name"] == trace[relu]["outputs"][0]["name"]

    layers = {layer["name"]: layer for layer in hook.report.layers}
    # conv: |Y| = 2·4·6·6 = 288, window 3·3·3 = 27: dW 288·27 = 7,776 and
    # dB 288 - 4 = 284.
    assert layers["conv"]["flops"] == 288 * 27 == 7776
    assert layers["conv"]["backward"]["flops"] == 288 * 27 + (288 - 4) == 8060
    # relu: one FLOP per element of dX.
    assert layers["relu"]["backward"]["flops"] == 288
    # fc: forward 2·5·144 + 2·5 (bias) = 1,450; backward two products of
    # 2·5·144 and the bias reduction 2·5 - 5.
    assert layers["fc"]["flops"] == 2 * 5 * 144 + 10 == 1450
    assert layers["fc"]["backward"]["flops"] == 2 * (2 * 5 * 144) + 5 == 2885
    assert hook.report.total["backward"]["flops"] == 8060 + 288 + 2885 == 11233

    # c3.torch.estimate(training=True) runs the same step (its loss named
    # "loss") and leaves the parameters' gradients as they were.
    before = [p.grad for p in model.parameters()]
    report = c3.torch.estimate(model, x, training=True)
    assert [layer["name"] for layer in report.layers] == ["conv", "relu", "fc", "loss"]
    assert [layer["backward"] for layer in report.layers][:3] == [
        layers[n]["backward"] for n in ("conv", "relu", "fc")]
    assert all(p.grad is g for p, g in zip(model.parameters(), before))
    # Without training nothing changes: no names, no backward records.
    plain = c3.torch.CostHook()
    import torch

    with torch.no_grad(), plain:
        model(x)
    assert all("backward_of" not in r and "name" not in r["inputs"][0] for r in plain.trace["layers"])
    assert "backward" not in plain.report.total or plain.report.total["backward"] is None


def test_loss_fn_and_no_floating_output():
    import torch

    import c3.torch

    model, x = _tiny()
    target = torch.tensor([1, 3])
    report = c3.torch.estimate(model, x, training=True,
                               loss_fn=lambda y: torch.nn.functional.cross_entropy(y, target))
    by_op = {layer["op"]: layer for layer in report.layers}
    # cross_entropy = log_softmax + nll_loss, both differentiated: the
    # LogSoftmax and NegativeLogLikelihoodLoss layers have a backward.
    assert by_op["LogSoftmax"]["backward"] is not None
    assert by_op["NegativeLogLikelihoodLoss"]["backward"] is not None
    assert report.unsupported == []

    class Argmax(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(x).argmax(-1)

    with pytest.raises(ValueError, match="loss_fn"):
        c3.torch.estimate(Argmax(), torch.randn(2, 4), training=True)


def test_depthwise_convolution_gradients():
    """A pointwise 1x1 conv (32->32) then a depthwise 3x3 conv (32 groups,
    padding 1) on 1x32x8x8, no biases.

    Depthwise: |Y| = 32·8·8 = 2,048 outputs of Cg·k² = 1·9 = 9 products:
    18,432 multiply-adds forward, and as many for each gradient, dX and dW.
    torch 2.15's FlopCounterMode counts the weight gradient as if the conv
    were not grouped (32 times too many): its convolution_backward is
    36,864 (dX, 2 FLOPs per product) + 1,179,648 = 1,216,512, where the
    two gradients come to 2 × 36,864 = 73,728."""
    import torch

    import c3.torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 32, 1, bias=False),
                                torch.nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False))
    x = torch.randn(1, 32, 8, 8)
    report = c3.torch.estimate(model, x, training=True)
    pointwise, depthwise = report.layers[0], report.layers[1]
    assert depthwise["flops"] == 2048 * 9 == 18_432
    assert depthwise["backward"]["flops"] == 2 * 18_432 == 36_864
    assert depthwise["backward"]["grads"] == [0, 1]
    # Pointwise: 2,048 outputs of 32 products; its input is the graph's, so
    # only dW: 65,536.
    assert pointwise["flops"] == 2048 * 32 == 65_536
    assert pointwise["backward"]["flops"] == 65_536
    assert pointwise["backward"]["grads"] == [1]

    counts = _flop_counter(model, (x,), {})
    assert counts["Sequential.1"]["aten.convolution"] == 2 * 18_432
    assert counts["Sequential.1"]["aten.convolution_backward"] == 36_864 + 32 * 36_864 == 1_216_512
    assert 2 * depthwise["backward"]["flops"] == 73_728
    # The ungrouped pointwise conv agrees with FlopCounterMode.
    assert counts["Sequential.0"]["aten.convolution"] == 2 * pointwise["flops"]
    assert counts["Sequential.0"]["aten.convolution_backward"] == 2 * pointwise["backward"]["flops"]


# --- the hook against the ONNX route ----------------------------------------------


def _randomize(model):
    """Every float parameter and buffer from U(0.5, 1.5): no zero bias for
    the exporter to drop, positive BatchNorm variances."""
    import torch

    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point() and t.numel() > 1:
                t.uniform_(0.5, 1.5)
    return model.eval()


def _models():
    import torch
    import torchvision as tv

    torch.manual_seed(0)

    def img(s):
        return torch.randn(1, 3, s, s)

    out = {
        "resnet18": (lambda: tv.models.resnet18(), (img(64),), {}),
        "mobilenet_v3_small": (lambda: tv.models.mobilenet_v3_small(), (img(64),), {}),
        "vgg11": (lambda: tv.models.vgg11(), (img(32),), {}),
        "vit": (lambda: tv.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                                   num_heads=2, hidden_dim=32, mlp_dim=64,
                                                   num_classes=10), (img(32),), {}),
        "convnext_tiny": (lambda: tv.models.convnext_tiny(), (img(32),), {}),
        "efficientnet_b0": (lambda: tv.models.efficientnet_b0(), (img(32),), {}),
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
    out["opt"] = (
        lambda: tf.OPTModel(tf.OPTConfig(hidden_size=64, ffn_dim=128, num_hidden_layers=2,
                                         num_attention_heads=4, vocab_size=1000,
                                         max_position_embeddings=64, word_embed_proj_dim=64)),
        (ids,), {"use_cache": False},
    )
    return out


def _model(name):
    models = _models()
    if name not in models:
        pytest.skip("transformers is not installed")
    make, args, kwargs = models[name]
    return _randomize(make()), args, kwargs


@pytest.mark.parametrize("name", ["resnet18", "gpt2", "bert"])
def test_hook_matches_onnx_export(name):
    """Per op type (Conv, Gemm, MatMul), the products of the layers reading a
    weight, forward and backward, are the same through the hook (the
    backward ops that ran) and through the exported model (the backward c3
    derives). Not compared as whole FLOPs, because (see the module
    docstring): the exporter writes a Linear's bias as an Add after a Gemm
    or MatMul, the hook a Gemm with its bias (GPT-2's Conv1D) and its
    gradient's reduction; the hook charges the sum of a tensor's gradients
    to its producer (GPT-2's c_fc output, read three times by the tanh GELU);
    attention is one Attention layer in the hook and two activation MatMuls
    in the export (left out: no weight)."""
    import torch

    import c3

    model, args, kwargs = _model(name)
    hook = _train_hook(model, args, kwargs)

    class Wrapped(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *a):
            return self.m(*a, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(Wrapped(model), args, dynamo=True, verbose=False)
    onnx = c3.estimate(program.model_proto, training=True)
    assert hook.report.unsupported == [] and onnx.unsupported == []
    h, o = hook_products(hook, weights_only=True), onnx_products(onnx)
    assert set(h) == set(o), (h, o)
    for op in h:
        assert h[op] == o[op], (op, h[op], o[op])
        # Each weight product's backward is two products, dX and dW (only
        # dW where the layer reads the graph's input: the first conv).
        assert h[op][1] <= 2 * h[op][0]
    if name == "resnet18":
        # conv1 (3->64, 7x7, stride 2 on 64x64: 32x32 outputs) has no dX:
        # its dW alone, 64·32·32 · 3·49 = 9,633,792.
        assert h["Conv"][1] == 2 * h["Conv"][0] - 64 * 32 * 32 * 3 * 49


# --- the hook against FlopCounterMode -------------------------------------------------

TORCH_PRODUCTS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.convolution",
                  "aten._convolution", "aten.convolution_backward")
TORCH_ATTENTION = ("aten._scaled_dot_product_flash_attention_for_cpu",
                   "aten._scaled_dot_product_efficient_attention",
                   "aten._scaled_dot_product_flash_attention")

FLOP_COUNTER_MODELS = ["resnet18", "mobilenet_v3_small", "vgg11", "vit", "convnext_tiny",
                       "efficientnet_b0", "gpt2", "bert", "llama", "opt"]


@pytest.mark.parametrize("name", FLOP_COUNTER_MODELS)
def test_products_match_flop_counter(name):
    """Forward and backward, c3's products × 2 (two FLOPs per multiply-add)
    equal FlopCounterMode's mm, addmm, bmm, baddbmm, convolution and
    convolution_backward, less what c3 counts besides products (see
    hook_products). Grouped convolutions (mobilenet, efficientnet, convnext:
    depthwise) are compared with the formula instead, FlopCounterMode
    overcounting their weight gradient (test_depthwise_convolution_gradients):
    each computed gradient of a grouped conv is |Y|·Cg·k² products.

    Attention is one layer in the hook, an sdpa kernel in FlopCounterMode:
    its forward products, B·H·Sq·Skv·(d + dv) with attention="full" as
    FlopCounterMode counts them (no causal saving), are c3's Attention FLOPs
    less its scaling, mask and softmax, heads·(pairs·(1 + mask) + 3·pairs -
    rows) (rules/attention.yaml)."""
    import torch

    model, args, kwargs = _model(name)
    hook = _train_hook(model, args, kwargs, attention="full")
    assert hook.report.unsupported == []
    counts = _flop_counter(model, args, kwargs)
    root = type(model).__name__

    trace = hook.trace["layers"]
    grouped = [r for r in trace if "backward_of" not in r and r["op"] == "Conv" and r["attrs"]["group"] > 1]
    torch_total = sum(n for op, n in counts["Global"].items() if op in TORCH_PRODUCTS)
    formula = 0
    for r in grouped:
        # FlopCounterMode's count of this module's backward, and what it
        # should be: 2 FLOPs per product, |Y|·Cg·k² products per gradient
        # (dX when the input needs one, dW).
        torch_total -= counts[f"{root}.{r['name']}"]["aten.convolution_backward"]
        k = next(i for i, x in enumerate(trace) if x is r)
        grads = next(x["grads"] for x in trace if x.get("backward_of") == k and "grads" in x)
        y, w = r["outputs"][0]["shape"], r["inputs"][1]["shape"]
        per = _numel(y) * _numel(w[1:])
        formula += 2 * per * len([g for g in grads if g in (0, 1)])
    products = hook_products(hook)
    c3_total = sum(f + b for f, b in products.values())
    assert 2 * c3_total == torch_total + formula, (name, 2 * c3_total, torch_total, formula)

    # Attention: the forward products.
    torch_attention = sum(n for op, n in counts["Global"].items() if op in TORCH_ATTENTION)
    c3_attention = 0
    for layer in hook.report.layers:
        if layer["op"] != "Attention":
            continue
        q, k_, v, mask = (layer["inputs"] + [None])[:4]
        b, h, sq, d = q["shape"]
        skv, dv = k_["shape"][-2], v["shape"][-1]
        pairs = sq * skv
        pointwise = b * h * (pairs * (1 + (1 if mask else 0)) + 3 * pairs - sq)
        assert layer["flops"] - pointwise == b * h * pairs * (d + dv)
        c3_attention += layer["flops"] - pointwise
    assert 2 * c3_attention == torch_attention
    torch.manual_seed(0)


# --- a Llama on the meta device ------------------------------------------------------


def test_llama_training_on_meta_device():
    """Hidden 256, 4 layers of 4 heads (head 64, no GQA), MLP 688, vocabulary
    1000, 128 tokens, built on the meta device: the backward runs on meta
    tensors too.

    Per token, the Linear layers' products are N = 4·(4·256² + 3·256·688)
    (q, k, v, o and gate, up, down) + 256·1000 (the head) = 3,418,112
    multiply-adds forward; every one of them computes dX and dW backward,
    two more each: 3N in all, 6N FLOPs at two per multiply-add (Kaplan et
    al.'s 6N; the embedding is a lookup, no product). Besides products, the
    q and k projections' backward has the sums of their outputs' gradients:
    RoPE reads each three times (q·cos and rotate_half's two halves), two
    additions of |q| = 128·256 per projection.

    Attention, causal (attention="masked"): each head scores S(S+1)/2 =
    8,256 pairs with two products of 64 each (QKᵀ, P·V): over 128 tokens
    2·n_layer·d_attn·(S+1)/2 per token, Kaplan's 2·n_layer·n_ctx·d_attn
    forward with the mask's half. On the meta device sdpa runs as its math
    decomposition, so its backward is four batched products over the whole
    128x128 square (dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q; 4 x
    4·128·128·64 multiply-adds), the softmax's gradient and the scalings of
    dQ and dK (4·128·64 each).
    """
    import torch

    import c3
    import c3.torch

    tf = pytest.importorskip("transformers")
    config = tf.LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                            num_attention_heads=4, num_key_value_heads=4, vocab_size=1000)
    with torch.device("meta"):
        model = tf.LlamaForCausalLM(config)
        ids = torch.zeros(1, 128, dtype=torch.long)
    report = c3.torch.estimate(model, ids, training=True, use_cache=False)
    assert report.unsupported == []
    t, d, ff, layers, vocab, heads, dh = 128, 256, 688, 4, 1000, 4, 64
    n = layers * (4 * d * d + 3 * d * ff) + d * vocab
    assert n == 3_418_112
    linears = {name for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    by_name = {layer["name"]: layer for layer in report.layers}
    forward = sum(by_name[x]["flops"] for x in linears)
    backward = sum(by_name[x]["backward"]["flops"] for x in linears)
    rope_sums = layers * 2 * 2 * (t * d)
    assert forward == t * n
    assert backward == 2 * t * n + rope_sums == 875_560_960
    assert 2 * (forward + backward - rope_sums) / t == 6 * n == 20_508_672

    attention = [layer for layer in report.layers if layer["op"] == "Attention"]
    assert len(attention) == layers
    pairs = t * (t + 1) // 2
    # c3's Attention FLOPs: the products, 2·64 per pair, and the scaling and
    # softmax (1 + 3 per pair, less one per row).
    products = heads * pairs * 2 * dh
    assert all(layer["flops"] == products + heads * (4 * pairs - t) for layer in attention)
    assert layers * products / t == 2 * layers * d * (t + 1) / 2 == 132_096
    # The backward: the products, the softmax's gradient (c3's Softmax
    # backward over the 4x128x128 scores, costed alone) and two scalings.
    square = {"shape": [1, heads, t, t], "dtype": "float32"}
    softmax = c3.estimate({"layers": [
        {"op": "Softmax", "attrs": {"axis": 3}, "inputs": [dict(square, name="s")],
         "outputs": [dict(square, name="p")]},
        {"op": "Softmax", "attrs": {"axis": 3}, "inputs": [dict(square, name="s")],
         "outputs": [dict(square, name="p")], "grads": [0], "backward_of": 0}]}, training=True)
    softmax_grad = softmax.layers[0]["backward"]["flops"]
    assert softmax_grad > 0
    for layer in attention:
        assert layer["backward"]["flops"] == 4 * heads * t * t * dh + softmax_grad + 2 * heads * t * dh
