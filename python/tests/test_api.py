"""c3.estimate, Report, explain, devices, rules and the errors: no torch needed."""

import io
import json
import os
import subprocess
import sys
import types

import pytest

import c3

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
RESNET50_TRACE = os.path.join(ROOT, "examples", "resnet50.trace.json")
RESNET50_ONNX = os.path.join(ROOT, "examples", "onnx", "light_resnet50.onnx")


def relu_trace(n=64):
    return {"layers": [{"name": "act", "op": "Relu",
                        "inputs": [{"shape": [1, n], "dtype": "float32"}],
                        "outputs": [{"shape": [1, n], "dtype": "float32"}]}]}


def test_trace_file_gives_the_articles_figures():
    r = c3.estimate(RESNET50_TRACE)
    # The README's figures for the Chainer trace of ResNet50: 3.885 GFLOPs.
    assert r.total["flops"] == 3_884_871_583
    assert r.total["mread"] + r.total["mwrite"] == r.total["mrw"] == 413_147_264
    assert len(r.layers) == r.total["layers"] == 176
    conv = next(s for s in r.summary if s["op"] == "Conv")
    assert conv["layers"] == 53
    assert r.unsupported == []
    assert r.meta["kind"] == "path" and r.meta["fma"] is True


def test_trace_dict_and_bytes():
    r = c3.estimate(relu_trace(64))
    # One max per element; the float32 input read once, the output written once.
    assert r.layers[0]["name"] == "act"
    assert (r.total["flops"], r.total["mread"], r.total["mwrite"]) == (64, 64 * 4, 64 * 4)
    b = c3.estimate(json.dumps(relu_trace(64)).encode())
    assert b.to_dict() == r.to_dict()


def test_params_and_peak_activation_memory():
    # Two layers sharing the named bias b[8]; activations named x, y, z.
    trace = {"layers": [
        {"name": "mm", "op": "MatMul",
         "inputs": [{"shape": [4, 16], "name": "x"}, {"shape": [16, 8], "const": True, "name": "w"}],
         "outputs": [{"shape": [4, 8], "name": "y"}]},
        {"name": "add", "op": "Add",
         "inputs": [{"shape": [4, 8], "name": "y"}, {"shape": [8], "const": True, "name": "b"}],
         "outputs": [{"shape": [4, 8], "name": "z"}]},
        {"name": "add2", "op": "Add",
         "inputs": [{"shape": [4, 8], "name": "z"}, {"shape": [8], "const": True, "name": "b"}],
         "outputs": [{"shape": [4, 8], "name": "u"}]},
    ]}
    r = c3.estimate(trace)
    # w is 16 x 8 = 128 values, b 8, counted once in the total.
    assert [l["params"] for l in r.layers] == [128, 8, 8]
    assert r.params == r.total["params"] == 128 + 8
    assert r.total["weight_bytes"] == (128 + 8) * 4
    # mm: x (4 x 16 floats, 256 bytes) and y (128 bytes) live at once.
    assert r.layers[0]["live_bytes"] == 256 + 128
    assert r.peak_activation_bytes == 256 + 128 and r.total["peak_at"] == "mm"
    # The layer's attributes are `attrs` now.
    assert r.layers[0]["attrs"] == {}


def test_onnx_path_bytes_and_model_proto_agree():
    by_path = c3.estimate(RESNET50_ONNX)
    with open(RESNET50_ONNX, "rb") as f:
        data = f.read()
    by_bytes = c3.estimate(data)
    # Anything with SerializeToString is taken as an onnx.ModelProto.
    proto = types.SimpleNamespace(SerializeToString=lambda: data)
    by_proto = c3.estimate(proto)
    assert by_path.total == by_bytes.total == by_proto.total
    assert by_path.total["flops"] > 3_000_000_000
    assert by_bytes.meta["kind"] == "onnx"


def test_options_reach_the_rules():
    fma = c3.estimate(RESNET50_TRACE)
    no_fma = c3.estimate(RESNET50_TRACE, fma=False)
    fc = next(layer for layer in fma.layers if layer["op"] == "Gemm")
    fc2 = next(layer for layer in no_fma.layers if layer["op"] == "Gemm")
    # fc6: 1x2048 by 2048x1000 with a bias: M·N·K + M·N with FMA, 2·M·N·K without.
    assert fc["flops"] == 1000 * 2048 + 1000
    assert fc2["flops"] == 2 * 1000 * 2048
    half = c3.estimate(RESNET50_TRACE, weights="fp16")
    # fc6's weights (2048x1000) and bias (1000) are constants: half the bytes.
    fc3 = next(layer for layer in half.layers if layer["op"] == "Gemm")
    assert fc["mread"] - fc3["mread"] == (2048 * 1000 + 1000) * 2
    roof = c3.estimate(RESNET50_TRACE, device="gtx1080ti")
    assert roof.total["bound_s"] > 0 and "compute_s" in roof.layers[0]


def test_show_report_modes_units_columns():
    r = c3.estimate(relu_trace(2000))
    out = io.StringIO()
    r.show_report(mode="csv", file=out)
    # unit=None: exact integers: 2000 maxima, 2000 float32 read and written;
    # CSV is the command line's: one table, the column names as headers
    # (a Relu reads no weight: 0 params).
    assert out.getvalue().splitlines() == [
        "name,op,flops,mread,mwrite,mrw,params",
        "act,Relu,2000,8000,8000,16000,0",
        "total,,2000,8000,8000,16000,0",
    ]
    out = io.StringIO()
    r.show_report(unit="K", mode="md", n_digits=1, columns=["name", "type", "flops"], file=out)
    text = out.getvalue()
    assert "| act | Relu | 2.0 |" in text and "MemRead" not in text
    out = io.StringIO()
    r.show_summary_report(unit="K", mode="table", n_digits=2, file=out)
    # 8000 bytes are 7.81 KiB: bytes scale by 1024, FLOPs by 1000.
    assert "2.00" in out.getvalue() and "7.81" in out.getvalue()
    with pytest.raises(c3.UsageError):
        r.show_report(mode="html")
    with pytest.raises(c3.UsageError):
        r.show_report(unit="P")


def test_to_json():
    r = c3.estimate(RESNET50_TRACE)
    back = json.loads(r.to_json())
    assert back["total"] == r.total and back["layers"][0] == r.layers[0]


def test_to_pandas():
    pd = pytest.importorskip("pandas")
    r = c3.estimate(RESNET50_TRACE)
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 176 and int(df["flops"].sum()) == 3_884_871_583
    assert int(r.to_pandas("summary").set_index("op").loc["Conv", "layers"]) == 53


def test_errors_carry_one_line_messages():
    with pytest.raises(c3.InputError) as e:
        c3.estimate(b"\x08\x07garbage")
    assert isinstance(e.value, c3.C3Error) and "\n" not in str(e.value)
    with pytest.raises(c3.InputError):
        c3.estimate("/nonexistent/model.onnx")
    with pytest.raises(c3.UsageError, match="unknown device"):
        c3.estimate(RESNET50_TRACE, device="abacus")
    bad = {"layers": [{"name": "x", "op": "NoSuchOp", "inputs": [{"shape": [1]}],
                       "outputs": [{"shape": [1]}]}]}
    r = c3.estimate(bad)
    assert r.unsupported[0]["name"] == "x" and r.unsupported[0]["op"] == "NoSuchOp"
    with pytest.raises(c3.UnsupportedOpError, match="NoSuchOp"):
        c3.estimate(bad, strict=True)
    with pytest.raises(TypeError):
        c3.estimate(3.5)


def test_explain_devices_rules():
    text = c3.explain("Conv")
    assert "flops" in text and "Conv" in text
    ev = c3.explain("Relu", inputs={"X": [1, 64], "Y": [1, 64]})
    assert "64" in ev
    with pytest.raises(c3.UsageError):
        c3.explain("NoSuchOp")
    devices = c3.devices()
    assert len(devices) >= 17
    gtx = next(d for d in devices if "1080" in d["name"])
    assert gtx["bandwidth"] == 4.84e11
    rules = c3.rules()
    assert any(r["op"] == "Conv" for r in rules) and all("source" in r for r in rules)


def test_symbolic_dims_are_bound_or_named():
    trace = {"layers": [{"op": "Relu", "inputs": [{"shape": ["batch", 64]}],
                         "outputs": [{"shape": ["batch", 64]}]}]}
    # One max per element of the 8 × 64 input.
    assert c3.estimate(trace, dims={"batch": 8}).total["flops"] == 8 * 64
    with pytest.raises(c3.InputError, match=r"batch.*dims=\{'batch': N\}"):
        c3.estimate(trace)
    with pytest.raises(c3.UsageError, match="inputs= applies to ONNX models"):
        c3.estimate(trace, dims={"batch": 8}, inputs={"x": "1x64"})


def test_prune_counts_weights_as_if_a_fraction_were_zero():
    # x[4, 16] @ w[16, 8], w a constant: dense, 4 * 16 * 8 = 512 multiply-adds.
    trace = {"layers": [{"name": "mm", "op": "MatMul",
                         "inputs": [{"shape": [4, 16], "name": "x"},
                                    {"shape": [16, 8], "const": True, "name": "w"}],
                         "outputs": [{"shape": [4, 8], "name": "y"}]}]}
    assert c3.estimate(trace).total["flops"] == 512
    # The sparse rules: M * nnz(w) multiply-adds; a trace holds no values,
    # so nnz(w) = |w| = 128 unless pruned. w is read as compressed rows:
    # nnz * (4 + 4) bytes + 4 * (8 + 1) row pointers, beside x's 4 * 16 * 4.
    r = c3.estimate(trace, rules="sparse")
    assert (r.total["flops"], r.total["mread"]) == (4 * 128, 256 + 128 * 8 + 36)
    half = c3.estimate(trace, rules="sparse", prune=0.5)
    assert (half.total["flops"], half.total["mread"]) == (4 * 64, 256 + 64 * 8 + 36)
    assert half.meta["prune"] == 0.5
    quarter = c3.estimate(trace, rules="sparse", prune=0.75)
    assert quarter.total["flops"] == 4 * 32
    # A fraction of one or more, or no rule that uses nnz(): usage errors.
    with pytest.raises(c3.UsageError, match="prune"):
        c3.estimate(trace, rules="sparse", prune=1.0)
    with pytest.raises(c3.UsageError, match="add --rules sparse"):
        c3.estimate(trace, prune=0.5)


def test_c3_torch_without_torch_says_what_to_install():
    # A None entry in sys.modules makes `import torch` fail as if torch were
    # not installed.
    code = ("import sys\nsys.modules['torch'] = None\ntry:\n    import c3.torch\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "c3.torch needs PyTorch: pip install 'c3[torch]' (or pip install torch)"
