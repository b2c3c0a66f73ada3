"""c3.torch.CostHook on single operators: mapping, names, constants, traces."""

import json

import pytest

from conftest import needs_torch

pytestmark = needs_torch


def run(model, *args, **hook_options):
    import torch

    import c3.torch

    with torch.no_grad(), c3.torch.CostHook(**hook_options) as hook:
        model(*args)
    return hook


def layers(hook, op):
    return [layer for layer in hook.report.layers if layer["op"] == op]


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_convolution_every_rank_grouped_and_transposed(dims):
    import torch

    conv = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}[dims]
    tconv = {1: torch.nn.ConvTranspose1d, 2: torch.nn.ConvTranspose2d,
             3: torch.nn.ConvTranspose3d}[dims]
    net = torch.nn.Sequential(conv(8, 16, 3, padding=1, groups=4), tconv(16, 8, 2, stride=2))
    x = torch.randn(1, 8, *([6] * dims))
    hook = run(net, x)
    (c,), (t,) = layers(hook, "Conv"), layers(hook, "ConvTranspose")
    assert c["name"] == "0" and t["name"] == "1"
    # Grouped conv: |Y| = 16·6^d outputs, each a window of 8/4 channels × 3^d.
    assert c["flops"] == 16 * 6**dims * (8 // 4) * 3**dims
    # Transposed: each of the 16·6^d input elements is multiplied into all
    # 8 output channels at each of the 2^d kernel taps.
    assert t["flops"] == 16 * 6**dims * 8 * 2**dims
    assert t["outputs"][0]["shape"] == [1, 8] + [12] * dims
    # The weights are constants of the model; the input is not.
    trace = hook.trace["layers"]
    assert trace[0]["inputs"][1]["const"] is True and "const" not in trace[0]["inputs"][0]


def test_linear_2d_is_gemm_3d_is_matmul_and_add():
    import torch

    lin = torch.nn.Linear(32, 16)
    hook = run(torch.nn.Sequential(lin), torch.randn(4, 32))
    (g,) = layers(hook, "Gemm")
    # M·N·K products plus M·N bias additions, FMA on.
    assert g["flops"] == 4 * 16 * 32 + 4 * 16
    # chainer_computational_cost's way: the hook shows its own report.
    import io

    out = io.StringIO()
    hook.show_report(unit=None, mode="csv", columns=["name", "type", "flops"], file=out)
    # CSV headers are the column names, as on the command line.
    assert out.getvalue().splitlines() == ["name,op,flops", "0,Gemm,2112", "total,,2112"]
    hook = run(torch.nn.Sequential(lin), torch.randn(2, 5, 32))
    (m,) = layers(hook, "MatMul")
    (a,) = layers(hook, "Add")
    assert m["flops"] == 2 * 5 * 16 * 32 and a["flops"] == 2 * 5 * 16
    assert m["name"] == "0/MatMul" and a["name"] == "0/Add"


def test_matmul_family():
    import torch

    class Net(torch.nn.Module):
        def forward(self, a, b, c):
            x = torch.bmm(a, b)  # 3·4·6 outputs of 5 products
            y = torch.baddbmm(c, a, b)  # the same and an addition each
            z = torch.einsum("bij,bjk->bik", a, b)
            w = a @ b
            return x, y, z, w

    a, b, c = torch.randn(3, 4, 5), torch.randn(3, 5, 6), torch.randn(3, 4, 6)
    hook = run(Net(), a, b, c)
    mm = layers(hook, "MatMul")
    assert all(layer["flops"] == 3 * 4 * 6 * 5 for layer in mm)
    assert len(mm) == 4  # bmm, baddbmm's product, einsum (as bmm), matmul
    assert sum(layer["flops"] for layer in layers(hook, "Add")) == 3 * 4 * 6
    assert hook.report.unsupported == []


@pytest.mark.parametrize("variant", ["plain", "causal", "mask", "gqa"])
def test_scaled_dot_product_attention(variant):
    import torch
    import torch.nn.functional as F

    b, h, s, d = 1, 4, 8, 16
    q = torch.randn(b, h, s, d)
    kv_heads = 2 if variant == "gqa" else h
    k, v = torch.randn(b, kv_heads, s, d), torch.randn(b, kv_heads, s, d)
    kwargs = {}
    if variant == "causal":
        kwargs["is_causal"] = True
    if variant == "mask":
        kwargs["attn_mask"] = torch.ones(s, s, dtype=torch.bool).tril()
    if variant == "gqa":
        kwargs["enable_gqa"] = True

    class Net(torch.nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, **kwargs)

    hook = run(Net(), q, k, v)
    assert [layer["op"] for layer in hook.report.layers] == ["Attention"]
    att = hook.report.layers[0]
    assert att["attrs"]["heads"] == h and att["attrs"]["causal"] == int(variant == "causal")
    pairs = s * (s + 1) // 2 if variant == "causal" else s * s
    # Per head: Q·Kᵀ and P·V, pairs·d each; scaling, softmax (3 per pair less
    # one per row), and one more per pair with a mask.
    pointwise = pairs * (1 + (1 if variant == "mask" else 0)) + 3 * pairs - s
    assert att["flops"] == b * h * (2 * pairs * d + pointwise)
    full = run(Net(), q, k, v, attention="full").report.layers[0]
    assert full["flops"] >= att["flops"]


def test_norms_activations_pooling():
    import torch

    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.GroupNorm(2, 8),
        torch.nn.InstanceNorm2d(8), torch.nn.ReLU(), torch.nn.GELU(), torch.nn.SiLU(),
        torch.nn.Hardswish(), torch.nn.MaxPool2d(2), torch.nn.AvgPool2d(2),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.LayerNorm(8),
        torch.nn.RMSNorm(8), torch.nn.Softmax(-1), torch.nn.LogSoftmax(-1),
    )
    hook = run(net.eval(), torch.randn(2, 3, 18, 18))
    ops = [layer["op"] for layer in hook.report.layers]
    for op in ("Conv", "BatchNormalization", "GroupNormalization", "Relu", "Gelu",
               "Swish", "HardSwish", "MaxPool", "AveragePool", "LayerNormalization",
               "Softmax", "LogSoftmax"):
        assert op in ops, (op, ops)
    assert hook.report.unsupported == []
    names = [layer["name"] for layer in hook.report.layers]
    assert names[:3] == ["0", "1", "2"]
    # LayerNorm over 8 features of 2 rows, named by its module index.
    ln = next(layer for layer in hook.report.layers if layer["op"] == "LayerNormalization")
    assert ln["name"] == "12" and ln["inputs"][0]["shape"] == [2, 8]


def test_data_movement_and_the_rest():
    import torch
    import torch.nn.functional as F

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(10, 4)
            self.lstm = torch.nn.LSTM(4, 6, batch_first=True)
            self.gru = torch.nn.GRU(6, 5)

        def forward(self, ids, x):
            e = self.emb(ids)  # (2, 3, 4)
            o, _ = self.lstm(e)
            g, _ = self.gru(o)
            y = torch.cat([x, x], 1)
            y = torch.stack([y, y])
            a, b = y.split(4, dim=-1)
            z = a.gather(-1, torch.zeros_like(a, dtype=torch.long))
            z = z.scatter(-1, torch.zeros_like(a, dtype=torch.long), b)
            z = z[:, :, [0, 1]]
            up = F.interpolate(x[None, None], scale_factor=2, mode="bilinear")
            near = F.interpolate(x[None, None], scale_factor=2, mode="nearest")
            c = x.cumsum(-1)
            t = x.topk(2).values
            s = x.sort(-1).values
            n = torch.nonzero(x > 0)
            r = x.sum() + x.mean(-1).amax() + x.var()
            w = torch.where(x > 0, x, -x).clamp(-1, 1)
            return g, z, up, near, c, t, s, n, r, w

    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    hook = run(Net().eval(), ids, torch.randn(2, 4))
    ops = {layer["op"] for layer in hook.report.layers}
    assert hook.report.unsupported == []
    for op in ("Gather", "Concat", "GatherElements", "ScatterElements", "Resize",
               "CumSum", "TopK", "NonZero", "ReduceSum", "ReduceMean", "Where", "Clip"):
        assert op in ops, (op, sorted(ops))
    # The embedding reads its 6 rows' worth of output: a Gather named by module.
    emb = next(layer for layer in hook.report.layers if layer["name"] == "emb")
    assert emb["op"] == "Gather" and emb["outputs"][0]["shape"] == [2, 3, 4]
    # LSTM and GRU run as matrix products and gates, all counted.
    assert any(layer["name"].startswith("lstm") and layer["flops"] > 0
               for layer in hook.report.layers)
    assert any(layer["name"].startswith("gru") and layer["flops"] > 0
               for layer in hook.report.layers)


def test_views_are_free_and_constants_fold():
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.ones(4))

        def forward(self, x):
            y = x.view(2, 2, 4).permute(2, 0, 1).reshape(4, 4).t()
            # Work on constants alone (the buffer doubled) is folded, as ONNX does.
            s = self.scale * 2
            return y * s

    hook = run(Net(), torch.randn(4, 4))
    assert [layer["op"] for layer in hook.report.layers] == ["Mul"]
    mul = hook.report.layers[0]
    assert mul["flops"] == 16 and mul["name"] == "Mul"


def test_unsupported_ops_are_listed_with_aten_name_and_module():
    import torch

    class Spectral(torch.nn.Module):
        def forward(self, x):
            return torch.fft.rfft(x).abs()

    net = torch.nn.Sequential(torch.nn.Linear(8, 8), Spectral())
    hook = run(net, torch.randn(2, 8))
    (u,) = hook.report.unsupported
    assert u["name"].startswith("1/") and u["op"].startswith("aten::_fft_r2c")
    import c3

    with pytest.raises(c3.UnsupportedOpError, match="_fft_r2c"):
        run(net, torch.randn(2, 8), strict=True).report


def test_trace_round_trip_and_estimate(tmp_path):
    import torch
    import torchvision

    import c3
    import c3.torch

    net = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 64, 64)
    path = tmp_path / "r18.trace.json"
    written = c3.torch.trace(path, net, x)
    again = c3.estimate(str(path))
    direct = c3.torch.estimate(net, x)
    assert json.loads(path.read_text()) == written
    assert again.total == direct.total and again.layers == direct.layers
    assert [layer["name"] for layer in direct.layers[:5]] == [
        "conv1", "bn1", "relu", "maxpool", "layer1.0.conv1"]
    assert direct.layers[9]["name"] == "layer1.0/Add"  # the residual, in the block
    no_fma = c3.torch.estimate(net, x, fma=False)
    conv1 = direct.layers[0]
    # conv1: 64 × 32 × 32 outputs of 3·7·7 products; without FMA, 2k − 1 each.
    assert conv1["flops"] == 64 * 32 * 32 * 147
    assert no_fma.layers[0]["flops"] == 64 * 32 * 32 * (2 * 147 - 1)


def _coverage_models():
    import torch
    import torchvision

    tv = torchvision.models
    img = torch.randn(1, 3, 224, 224)
    out = {
        "deeplabv3_mobilenet_v3_large": (
            lambda: tv.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None),
            (img,), {}, ["Resize", "Conv"]),
        "fasterrcnn_mobilenet_v3_large_320_fpn": (
            lambda: tv.detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None),
            ([torch.rand(3, 320, 320)],), {}, ["NonMaxSuppression", "RoiAlign", "TopK"]),
        "ssdlite320_mobilenet_v3_large": (
            lambda: tv.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None),
            ([torch.rand(3, 320, 320)],), {}, ["NonMaxSuppression", "Unique"]),
    }
    try:
        import transformers as tf
    except ImportError:
        return out
    ids = torch.randint(0, 1000, (1, 16))
    small = dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2,
                 encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                 decoder_ffn_dim=128, pad_token_id=0, bos_token_id=0, eos_token_id=0,
                 decoder_start_token_id=0)
    out["t5"] = (
        lambda: tf.T5Model(tf.T5Config(vocab_size=1000, d_model=64, d_kv=16, d_ff=128,
                                       num_layers=2, num_heads=4)),
        (), {"input_ids": ids, "decoder_input_ids": ids}, ["MatMul", "Attention", "ReduceMean"])
    out["bart"] = (lambda: tf.BartModel(tf.BartConfig(**small)), (), {"input_ids": ids},
                   ["Attention", "LayerNormalization"])
    out["whisper"] = (
        lambda: tf.WhisperModel(tf.WhisperConfig(num_mel_bins=80, max_source_positions=50, **small)),
        (), {"input_features": torch.randn(1, 80, 100), "decoder_input_ids": ids},
        ["Conv", "Attention", "Gelu"])
    return out


COVERAGE = ["deeplabv3_mobilenet_v3_large", "fasterrcnn_mobilenet_v3_large_320_fpn",
            "ssdlite320_mobilenet_v3_large", "t5", "bart", "whisper"]


@pytest.mark.parametrize("name", COVERAGE)
def test_every_aten_op_of_these_models_is_mapped(name):
    import c3.torch

    models = _coverage_models()
    if name not in models:
        pytest.skip("transformers is not installed")
    make, args, kwargs, expected_ops = models[name]
    report = c3.torch.estimate(make().eval(), *args, **kwargs)
    assert report.unsupported == []
    ops = {layer["op"] for layer in report.layers}
    for op in expected_ops:
        assert op in ops, (op, sorted(ops))
    # Nothing counted twice or dropped: the total is the layers' sum.
    assert report.total["flops"] == sum(layer["flops"] for layer in report.layers) > 0


@pytest.mark.parametrize("kernel", [
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_fused_attention_overrideable", "_scaled_dot_product_attention_math",
])
def test_every_attention_kernel(kernel):
    """Each backend's aten op, called directly on meta tensors (the CUDA
    kernels need no GPU there): one Attention layer, or for the math
    kernel, which PyTorch decomposes, its products, scaling and softmax."""
    import torch

    import c3.torch

    q = torch.empty(1, 4, 8, 16, device="meta")
    k = torch.empty(1, 4, 8, 16, device="meta")
    op = getattr(torch.ops.aten, kernel)
    extra = (None, False) if "efficient" in kernel or "cudnn" in kernel else ()
    with c3.torch.CostHook() as hook:
        op(q, k, k, *extra, is_causal=True)
    report = hook.report
    assert report.unsupported == []
    # Causal, 8 queries: 36 (query, key) pairs per head, d = 16; Q·Kᵀ and P·V
    # 36·16 each, scaling and softmax 4·36 − 8, over 4 heads.
    if "math" in kernel:
        ops = [layer["op"] for layer in report.layers]
        assert "MatMul" in ops and "Softmax" in ops
    else:
        (att,) = report.layers
        assert att["op"] == "Attention" and att["attrs"]["causal"] == 1
        assert att["flops"] == 4 * (2 * 36 * 16 + 4 * 36 - 8) == 5152


def test_parameters_are_torchs_count_and_buffers_apart():
    import torch
    import torchvision
    import transformers

    import c3.torch

    # torchvision's resnet18: 11,689,512 parameters; its batch norms' running
    # means and variances (2 × 4,800 channels) are buffers, reported apart.
    model = torchvision.models.resnet18().eval()
    r = c3.torch.estimate(model, torch.randn(1, 3, 64, 64))
    assert r.params == sum(p.numel() for p in model.parameters()) == 11_689_512
    assert r.buffers == 2 * 4_800
    # GPT-2 with 2 layers: the output head is the token embedding (tied),
    # counted once; the position embedding is read at constant positions.
    gpt = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=2)).eval()
    r = c3.torch.estimate(gpt, torch.zeros(1, 8, dtype=torch.long))
    assert r.params == sum(p.numel() for p in gpt.parameters()) == 53_561_088


def test_c3_options_do_not_collide_with_the_models_arguments():
    import torch

    import c3.torch

    class Net(torch.nn.Module):
        def forward(self, x, device=None):
            return x * 2 if device == "cpu" else x

    # device= is c3's (a roofline on an H100): the model is not given it,
    # so it returns x untouched, no layer.
    r = c3.torch.estimate(Net(), torch.randn(4), device="h100")
    assert r.total["flops"] == 0 and r.to_dict()["device"]["name"] == "h100-sxm"
    # A model argument of the same name goes in model_kwargs: one Mul of 4.
    r = c3.torch.estimate(Net(), torch.randn(4), model_kwargs={"device": "cpu"})
    assert r.total["flops"] == 4


def test_the_module_tree_groups_the_hooks_layers_by_module():
    import torch
    import torchvision

    import c3.torch

    model = torchvision.models.resnet18().eval()
    r = c3.torch.estimate(model, torch.randn(1, 3, 64, 64))
    tree = r.tree(2)
    top = [n for n in tree if n["level"] == 1]
    # The top level adds up to the totals.
    assert sum(n["flops"] for n in top) == r.total["flops"]
    assert sum(n["layers"] for n in top) == r.total["layers"]
    by_path = {n["path"]: n for n in tree}
    # layer1: two BasicBlocks of conv, bn, relu, conv, bn, the residual Add
    # and relu: 7 layers each.
    assert by_path["layer1"]["layers"] == 14
    assert by_path["layer1/0"]["layers"] == by_path["layer1/1"]["layers"] == 7
    assert by_path["layer1"]["flops"] == by_path["layer1/0"]["flops"] + by_path["layer1/1"]["flops"]
def test_hook_options_have_types():
    # Checked when the hook is made, not when its report is first read
    # after the pass; each error names the option.
    import torch

    import c3
    import c3.torch

    with pytest.raises(TypeError, match="fma: True or False, not str 'false'"):
        c3.torch.CostHook(fma="false")
    with pytest.raises(ValueError, match="attention: one of masked, full"):
        c3.torch.CostHook(attention="nope")
    with pytest.raises(TypeError, match="training: True or False"):
        c3.torch.CostHook(training="yes")
    with pytest.raises(TypeError, match="rules: a path or pack name"):
        c3.torch.CostHook(rules=5)
    lin = torch.nn.Linear(4, 2)
    x = torch.randn(1, 4)
    with pytest.raises(TypeError, match="hook_options: a dict, not list"):
        c3.torch.estimate(lin, x, hook_options=["device", "h100"])
    with pytest.raises(TypeError, match="fma: True or False"):
        c3.torch.estimate(lin, x, fma=1)
    with pytest.raises(TypeError, match="loss_fn: a function"):
        c3.torch.estimate(lin, x, training=True, loss_fn=5)
    with pytest.raises(c3.UsageError, match="unknown device"):
        c3.torch.estimate(lin, x, hook_options={"device": "abacus"})
    # Well-typed options still work: a Gemm of 1 x 2 outputs, each 4
    # multiply-adds and its bias, 2 * (4 + 1) = 10.
    assert c3.torch.estimate(lin, x, fma=True).total["flops"] == 10
