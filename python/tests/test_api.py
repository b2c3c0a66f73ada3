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
    # Relu on 1x64 float32 timed on the GTX 1080 Ti (484 GB/s): 256 bytes
    # read and 256 written, 1.058 ns of memory; 64 maxes at 10.6 TFLOP/s.
    timed = c3.explain("Relu", inputs={"X": [1, 64]}, device="gtx1080ti")
    assert "memory_s  = 1.058 ns" in timed and "(memory-bound)" in timed
    with pytest.raises(c3.UsageError, match="--device times an evaluation"):
        c3.explain("Relu", device="gtx1080ti")
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
# --- Options have types (issue 53, item 7) -------------------------------


@pytest.mark.parametrize("options, error, says", [
    (dict(dims={"batch": 1.5}), TypeError, r"dims\['batch'\]: an integer, not float 1.5"),
    (dict(dims={"batch": True}), TypeError, r"dims\['batch'\]: an integer, not bool"),
    (dict(dims={"batch": -1}), ValueError, r"dims\['batch'\]: a non-negative integer"),
    (dict(dims=["batch"]), TypeError, r"dims: a dict, not list"),
    (dict(dims={1: 2}), TypeError, r"dims: names must be strings"),
    (dict(fma="false"), TypeError, r"fma: True or False, not str 'false'"),
    (dict(fma=0), TypeError, r"fma: True or False, not int"),
    (dict(strict="yes"), TypeError, r"strict: True or False"),
    (dict(training=1), TypeError, r"training: True or False"),
    (dict(inputs=[1, 64]), TypeError, r"inputs: a dict, not list"),
    (dict(inputs={"x": [1.5, 2]}), TypeError, r"inputs\['x'\]\[0\]: an integer, not float"),
    (dict(inputs={"x": "1xq"}), ValueError, r"inputs\['x'\]: a shape like '1x3x224x224'"),
    (dict(inputs={"x": 7}), TypeError, r"inputs\['x'\]: a shape"),
    (dict(rules=5), TypeError, r"rules: a path or pack name"),
    (dict(rules=["sparse", 5]), TypeError, r"rules\[1\]: a path"),
    (dict(device=3), TypeError, r"device: a string, not int"),
    (dict(device="abacus"), ValueError, r"unknown device"),
    (dict(measured=2.4), TypeError, r"measured: a string"),
    (dict(attention="nope"), ValueError, r"attention: one of masked, full"),
    (dict(if_branch=1), TypeError, r"if_branch: a string"),
    (dict(prune="half"), TypeError, r"prune: a number"),
    (dict(prune=float("nan")), ValueError, r"prune: a number 0 <= R < 1, not nan"),
    (dict(freeze=5), TypeError, r"freeze: a glob string or a list of them"),
    (dict(recompute=[1]), TypeError, r"recompute: a glob string"),
    (dict(weights=16), TypeError, r"weights: a string"),
    (dict(training=True, optimizer=["adam"]), TypeError, r"optimizer: a string"),
])
def test_every_wrong_option_is_a_type_or_value_error_naming_it(options, error, says):
    # `dims={"batch": 1.5}` was 1 and `fma="false"` was True, without a word.
    with pytest.raises(error, match=says):
        c3.estimate(relu_trace(), **options)


def test_usage_errors_are_value_errors():
    # Values c3 itself checks (a device's name) raise the same class as
    # those Python checks: c3.UsageError, a ValueError and a C3Error.
    assert issubclass(c3.UsageError, ValueError) and issubclass(c3.UsageError, c3.C3Error)
    with pytest.raises(c3.UsageError):
        c3.estimate(relu_trace(), attention="nope")


@pytest.mark.skipif(not os.path.isfile("/etc/passwd"), reason="no /etc/passwd here")
def test_a_rules_file_that_is_not_rules_is_named_not_quoted():
    with pytest.raises(c3.InputError) as e:
        c3.estimate(relu_trace(), rules="/etc/passwd")
    assert "/etc/passwd" in str(e.value) and "root" not in str(e.value)


def _varint(v):
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | 0x80 if v else b)
        if not v:
            return bytes(out)


def _ld(field, payload):
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def deep_if_model(depth):
    """ONNX bytes: Ifs nested `depth` deep (their then branches), a Relu at
    the bottom; written by hand, so that no onnx package is needed."""
    def value(field, name, dims):
        shape = b"".join(_ld(1, _varint(1 << 3) + _varint(d)) for d in dims)
        elem = 9 if not dims else 1
        tensor = _varint(1 << 3) + _varint(elem) + _ld(2, shape)
        return _ld(field, _ld(1, name.encode()) + _ld(2, _ld(1, tensor)))

    def node(op, inputs, outputs, attrs=b""):
        names = b"".join(_ld(1, i.encode()) for i in inputs)
        names += b"".join(_ld(2, o.encode()) for o in outputs)
        return _ld(1, names + _ld(4, op.encode()) + attrs)

    def branch(name, g):
        return _ld(5, _ld(1, name.encode()) + _ld(6, g) + _varint(20 << 3) + _varint(5))

    plain = node("Relu", ["x"], ["z"]) + value(12, "z", [1])
    inner = node("Relu", ["x"], ["y0"]) + value(12, "y0", [1])
    for i in range(1, depth):
        attrs = branch("then_branch", inner) + branch("else_branch", plain)
        inner = node("If", ["c"], [f"y{i}"], attrs) + value(12, f"y{i}", [1])
    graph = inner + value(11, "x", [1]) + value(11, "c", [])
    opset = _ld(8, _ld(1, b"") + _varint(2 << 3) + _varint(17))
    return _varint(1 << 3) + _varint(8) + _ld(7, graph) + opset


def test_a_deep_model_from_a_thread_with_a_small_stack():
    # Ifs nested 32 deep need some 300 KB of stack on the thread that
    # infers them; a thread started with 256 KiB ended the interpreter
    # with a segmentation fault. c3 works on a thread of its own now. Run
    # in a child interpreter, so that a crash fails this test alone.
    import subprocess
    import sys

    script = (
        "import sys, threading, c3\n"
        "data = sys.stdin.buffer.read()\n"
        "out = {}\n"
        "def work():\n"
        "    out['flops'] = c3.estimate(data).total['flops']\n"
        "    try:\n"
        "        c3.estimate(b'\\x08\\x07garbage')\n"
        "    except c3.InputError as e:\n"
        "        out['error'] = 'InputError'\n"
        "threading.stack_size(256 * 1024)\n"
        "t = threading.Thread(target=work)\n"
        "t.start(); t.join()\n"
        "print(out['flops'], out['error'])\n"
    )
    run = subprocess.run([sys.executable, "-c", script], input=deep_if_model(32),
                         capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    # The larger branch of each If: the then branch, down to the one Relu
    # of a [1] tensor: 1 FLOP.
    assert run.stdout.decode().split() == ["1", "InputError"]
