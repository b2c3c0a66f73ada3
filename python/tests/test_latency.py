"""Measured and predicted time from Python: profiles joined by c3.estimate,
predictions from a calibrated pack, python -m c3.calibrate, and
c3.torch.profile."""

import json
import os
import statistics

import pytest

import c3
from conftest import needs_torch

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PROFILES = os.path.join(ROOT, "tests", "fixtures", "profiles")
SQUEEZENET = os.path.join(ROOT, "examples", "onnx", "light_squeezenet.onnx")
GPT = os.path.join(ROOT, "examples", "onnx", "gpt_decoder_dynamo.onnx")

try:
    import onnxruntime  # noqa: F401

    NO_ORT = None
except ImportError:
    NO_ORT = "onnxruntime is not installed (pip install onnxruntime)"
needs_ort = pytest.mark.skipif(NO_ORT is not None, reason=str(NO_ORT))


def test_a_profile_joins_from_python_as_from_the_command_line(tmp_path):
    prof = os.path.join(PROFILES, "light_squeezenet.all.json")
    r = c3.estimate(SQUEEZENET, profile=prof)
    with open(prof, encoding="utf-8") as f:
        runs = sorted((e["ts"], e["dur"]) for e in json.load(f) if e.get("name") == "model_run")
    # Three runs: the first dropped, the median of the other two (µs to s).
    kept = [d for _, d in runs[1:]]
    assert r.total["measured_s"] == pytest.approx(statistics.median(kept) / 1e6, rel=1e-12)
    assert r.meta["profile"] == prof
    out = tmp_path / "r.json"
    c3._c3.cli(["estimate", SQUEEZENET, "--profile", prof, "--format", "json", "-o", str(out)])
    cli = json.loads(out.read_text())
    assert [l["measured_s"] for l in r.layers] == [l["measured_s"] for l in cli["layers"]]


def test_a_tensorrt_profile_and_its_layer_information_are_given_as_a_list():
    resnet = os.path.join(ROOT, "examples", "onnx", "light_resnet50.onnx")
    files = [os.path.join(PROFILES, f"light_resnet50.trt.{k}.json") for k in ("layers", "profile")]
    r = c3.estimate(resnet, profile=files)
    with open(files[1], encoding="utf-8") as f:
        layers = json.load(f)[1:]
    # Each engine layer's medianMs (ms to s), summed; TensorRT has no run time.
    assert r.total["kernels_s"] == pytest.approx(sum(l["medianMs"] for l in layers) / 1e3, rel=1e-9)
    assert "measured_s" not in r.total
    assert r.meta["profile"] == files
    assert sum(l.get("measured_s") or 0.0 for l in r.layers) <= r.total["kernels_s"] * (1 + 1e-9)
    with pytest.raises(c3.InputError, match="layer information"):
        c3.estimate(resnet, profile=files[:1])


def test_a_calibrated_pack_predicts_the_total(tmp_path):
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "devices.yaml").write_text(
        "cpu:\n  name: test cpu\n  peak: {fp32: 1.0e11}\n  bandwidth: 1.0e10\n"
        "  source: made by hand\n  time:\n    groups:\n"
        "      \"*\": {compute: 0.5, memory: 1.0, kernel_s: 1.0e-6}\n"
    )
    r = c3.estimate(SQUEEZENET, rules=str(pack), device="cpu")
    # Every layer by the `*` group: compute_s / 0.5 + memory_s + 1 µs.
    want = sum(l["compute_s"] / 0.5 + l["memory_s"] + 1e-6 for l in r.layers)
    assert r.total["predicted_s"] == pytest.approx(want, rel=1e-9)
    assert all(l["time_group"] == "*" for l in r.layers)


def test_a_bad_profile_is_an_input_error(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text("not json")
    with pytest.raises(c3.InputError, match="not a profile c3 reads"):
        c3.estimate(SQUEEZENET, profile=str(bad))


@needs_ort
def test_calibrate_profiles_models_and_writes_a_pack(tmp_path, capsys):
    import c3.calibrate

    out = tmp_path / "pack"
    keep = tmp_path / "work"
    code = c3.calibrate.main([
        "-o", str(out), "--name", "here", "--rounds", "1", "--runs", "2", "--no-shipped",
        "--keep", str(keep), "--models", SQUEEZENET, GPT + ":batch=1,seq=16",
    ])
    assert code == 0
    assert "wrote" in capsys.readouterr().out
    dev = next(d for d in c3.devices(rules=str(out)) if d["name"] == "here")
    cal = dev["calibration"]
    assert cal["threads"] == 1 and cal["reports"] == 2
    assert cal["runtime"].startswith("onnxruntime ")
    assert cal["models"] == ["light_squeezenet.onnx", "gpt_decoder_dynamo.onnx (batch=1, seq=16)"]
    # The reports it fitted are kept, each with its profile joined.
    reports = sorted(p for p in os.listdir(keep) if p.endswith(".report.json"))
    assert len(reports) == 2
    with open(keep / reports[0], encoding="utf-8") as f:
        assert json.load(f)["profile"]["joined_share"] >= 0.95
    r = c3.estimate(SQUEEZENET, rules=str(out), device="here")
    assert r.total["predicted_s"] > 0


def test_calibrate_says_what_is_wrong_with_its_arguments(capsys):
    import c3.calibrate

    with pytest.raises(SystemExit):
        c3.calibrate.main(["-o", "x", "--name", "n", "--rounds", "0"])
    assert "--rounds" in capsys.readouterr().err


@needs_torch
def test_torch_profile_times_the_hooks_layers(tmp_path):
    import torch

    import c3.torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()
    x = torch.randn(2, 16)
    prof, trace = tmp_path / "p.json", tmp_path / "t.json"
    data = c3.torch.profile(str(prof), model, x, runs=3, trace=str(trace))
    names = {e["name"] for e in data["traceEvents"] if str(e.get("name", "")).startswith("c3.layer ")}
    assert names == {"c3.layer 0", "c3.layer 1", "c3.layer 2"}
    r = c3.estimate(str(trace), profile=str(prof))
    assert r.total["measured_s"] > 0
    assert [l["name"] for l in r.layers] == ["0", "1", "2"]
    assert all(l["measured_s"] > 0 for l in r.layers)
    with pytest.raises(ValueError, match="runs must be a positive integer"):
        c3.torch.profile(str(prof), model, x, runs=0)
