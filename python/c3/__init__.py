"""c3: the theoretical cost of a neural network's forward pass, layer by layer.

FLOPs, bytes read and bytes written per layer, from YAML cost rules, for an
ONNX model, an operator trace, or (with :mod:`c3.torch`) a PyTorch forward
pass::

    import c3
    report = c3.estimate("model.onnx", dims={"batch": 1})
    report.show_report(unit="G", mode="md")
    report.total["flops"]

The numbers are those of the ``c3`` command line (``c3 estimate --format
json``): the Rust library runs inside this package, with its built-in rules
and packs.
"""

from __future__ import annotations

import json
import numbers
import operator
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _c3
from ._report import Report

__all__ = [
    "C3Error",
    "InputError",
    "UsageError",
    "UnsupportedOpError",
    "Report",
    "estimate",
    "explain",
    "devices",
    "rules",
    "__version__",
]

__version__: str = _c3.__version__

#: Base class of every error c3 raises; ``str(e)`` is the CLI's one-line message.
C3Error = _c3.C3Error
#: A model, trace or rule pack c3 cannot read or analyse (CLI exit code 2).
InputError = _c3.InputError
#: A bad option value: unknown device, unit, column, precision (CLI exit code 1);
#: a ValueError too, as every wrong option value is.
UsageError = _c3.UsageError
#: Operators with no cost rule, raised when ``strict=True`` (CLI exit code 3).
UnsupportedOpError = _c3.UnsupportedOpError

Model = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Mapping[str, Any], Any]


def _source(model: Model) -> "tuple[Any, str, str]":
    """(payload, kind, name) for the Rust side: a path, ONNX bytes or trace JSON."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        return path, "path", path
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        head = data.lstrip()[:1]
        return data, ("trace" if head == b"{" else "onnx"), "<bytes>"
    if isinstance(model, Mapping):
        return json.dumps(model).encode(), "trace", "<trace>"
    serialize = getattr(model, "SerializeToString", None)
    if callable(serialize):  # an onnx.ModelProto, without importing onnx
        return serialize(), "onnx", "<onnx.ModelProto>"
    raise TypeError(
        "model must be a path, bytes, an onnx.ModelProto or a trace dict, "
        f"not {type(model).__name__}"
    )


def _kind(value: Any) -> str:
    return type(value).__name__


def _flag(name: str, value: Any) -> bool:
    """A switch: True or False, nothing that merely converts to one
    (``"false"`` is a true string)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name}: True or False, not {_kind(value)} {value!r}")
    return value


def _size(name: str, value: Any) -> int:
    """A non-negative integer (an int or anything with ``__index__``, such as a
    NumPy integer; not a float, not a bool)."""
    if isinstance(value, bool):
        raise TypeError(f"{name}: an integer, not bool {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: an integer, not {_kind(value)} {value!r}") from None
    if n < 0:
        raise UsageError(f"{name}: a non-negative integer, not {n}")
    return n


def _text(name: str, value: Any, choices: Sequence[str] = ()) -> Optional[str]:
    """None or a string (one of ``choices`` when given)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name}: a string, not {_kind(value)} {value!r}")
    if choices and value not in choices:
        raise UsageError(f"{name}: one of {', '.join(choices)}, not {value!r}")
    return value


def _path(name: str, value: Any) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name}: a path (str or os.PathLike), not {_kind(value)} {value!r}")
    path = os.fspath(value)
    if not isinstance(path, str):
        raise TypeError(f"{name}: a path as text, not {_kind(path)}")
    return path


def _mapping(name: str, value: Any) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name}: a dict, not {_kind(value)} {value!r}")
    for k in value:
        if not isinstance(k, str):
            raise TypeError(f"{name}: names must be strings, not {_kind(k)} {k!r}")
    return value


def _shape_text(name: str, shape: Any) -> List[int]:
    """An input shape: ``"1x3x224x224"`` or a sequence of integers."""
    if isinstance(shape, str):
        parts = shape.replace("X", "x").replace(",", "x").split("x")
        if not all(p.strip().isascii() and p.strip().isdigit() for p in parts):
            raise UsageError(f"{name}: a shape like '1x3x224x224', not {shape!r}")
        return [int(p) for p in parts]
    if not isinstance(shape, Sequence) or isinstance(shape, (bytes, bytearray)):
        raise TypeError(f"{name}: a shape ('1x3x224x224' or a list of integers), "
                        f"not {_kind(shape)} {shape!r}")
    return [_size(f"{name}[{i}]", d) for i, d in enumerate(shape)]


def _paths(name: str, value: Any) -> List[str]:
    """One path or pack name, or a list of them."""
    if isinstance(value, (str, os.PathLike)):
        return [_path(name, value)]
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name}: a path or pack name, or a list of them, not {_kind(value)}")
    return [_path(f"{name}[{i}]", v) for i, v in enumerate(value)]


def _globs(name: str, value: Union[str, Iterable[str]]) -> List[str]:
    """A glob or a list of them, as strings."""
    if isinstance(value, str):
        return [value]
    if value is None:
        return []
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name}: a glob string or a list of them, not {_kind(value)}")
    items = list(value)
    if not all(isinstance(v, str) for v in items):
        raise TypeError(f"{name}: a glob string or a list of them")
    return items


def _prune(value: Any) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"prune: a number 0 <= R < 1, not {_kind(value)} {value!r}")
    r = float(value)
    if not 0.0 <= r < 1.0:  # NaN too
        raise UsageError(f"prune: a number 0 <= R < 1, not {r!r}")
    return r


ATTENTION = ("masked", "full")
IF_BRANCHES = ("larger", "smaller", "then", "else")


def _options(
    dims: Any = None, inputs: Any = None, rules: Any = (), device: Any = None,
    measured: Any = None, profile: Any = None, fma: Any = True, attention: Any = "masked",
    if_branch: Any = "larger", prune: Any = None, weights: Any = None, activations: Any = None,
    strict: Any = False, training: Any = False, freeze: Any = (), optimizer: Any = None,
    master_weights: Any = None, recompute: Any = (),
) -> Dict[str, Any]:
    """The options of :func:`estimate`, each checked: a wrong type is a
    TypeError and a wrong value a :class:`UsageError` (a ValueError), naming
    the option; values only the rules know (a device's name) are checked by
    c3 itself, with the same error."""
    ratio = _prune(prune)
    return dict(
        dims={k: _size(f"dims[{k!r}]", v) for k, v in _mapping("dims", dims).items()},
        inputs={k: _shape_text(f"inputs[{k!r}]", v)
                for k, v in _mapping("inputs", inputs).items()},
        rules=_paths("rules", rules),
        device=_text("device", device),
        measured=_text("measured", measured),
        profile=[] if profile is None else _paths("profile", profile),
        fma=_flag("fma", fma),
        attention=_text("attention", attention, ATTENTION),
        if_branch=_text("if_branch", if_branch, IF_BRANCHES),
        prune=None if ratio is None else format(ratio, ".9f"),
        weights=_text("weights", weights),
        activations=_text("activations", activations),
        strict=_flag("strict", strict),
        training=_flag("training", training),
        freeze=_globs("freeze", freeze),
        optimizer=_text("optimizer", optimizer),
        master_weights=_text("master_weights", master_weights),
        recompute=_globs("recompute", recompute),
    )


def estimate(
    model: Model,
    *,
    dims: Optional[Mapping[str, int]] = None,
    inputs: Optional[Mapping[str, Union[str, Sequence[int]]]] = None,
    rules: Union[str, Iterable[str]] = (),
    device: Optional[str] = None,
    measured: Optional[str] = None,
    profile: Optional[Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]] = None,
    fma: bool = True,
    attention: str = "masked",
    if_branch: str = "larger",
    prune: Optional[float] = None,
    weights: Optional[str] = None,
    activations: Optional[str] = None,
    strict: bool = False,
    training: bool = False,
    freeze: Union[str, Iterable[str]] = (),
    optimizer: Optional[str] = None,
    master_weights: Optional[str] = None,
    recompute: Union[str, Iterable[str]] = (),
) -> Report:
    """Per-layer and per-operator-type costs of a model, as ``c3 estimate``.

    Args:
        model: a path to an ``.onnx`` file or a trace JSON file, the bytes of
            either, an ``onnx.ModelProto``, or a trace as a dict
            (``{"layers": [...]}``, the format ``c3.torch.trace`` writes).
        dims: symbolic dimensions to bind, ``{"batch": 8}`` (``--dim``).
        inputs: ONNX input shapes, ``{"images": [1, 3, 224, 224]}`` or
            ``"1x3x224x224"`` (``--input``).
        rules: rule packs, a folder or a built-in pack name (``"chainer"``);
            later ones override earlier ones (``--rules``).
        device: a device of :func:`devices` for roofline times (``--device``).
        measured: a measured latency (``"2.4ms"``) to compare with the bounds.
        profile: a runtime's profile of the model (onnxruntime's JSON, a
            trace ``c3.torch.profile`` wrote, or TensorRT's layer profile):
            each layer gets the time its kernel took,
            ``report.total["measured_s"]`` the run's (``--profile``); a list
            of two for a TensorRT profile and its engine's layer information.
        fma: count a multiply-add as one FLOP (``False``: two, ``--no-fma``).
        attention: ``"masked"`` counts the (query, key) pairs a causal mask
            leaves, ``"full"`` the whole square.
        if_branch: which If branch the totals count: larger, smaller, then, else.
        prune: with ``rules="sparse"``, count each weight as if this fraction
            of it (0 <= R < 1) were zero, without reading it (``--prune``).
        weights, activations: what-if storage types (fp32, fp16, bf16, fp8,
            int8, int4) for the constant tensors and the others.
        strict: raise :class:`UnsupportedOpError` when a layer has no rule
            instead of listing it in ``report.unsupported``.
        training: count a training step (``--training``): each layer's
            ``backward``, ``report.total["backward"]``, ``["optimizer"]`` and
            ``["training_memory"]``.
        freeze: globs of weights (or of the layers reading them) that do not
            train (``--freeze``).
        optimizer: ``"sgd"``, ``"momentum"``, ``"adam"`` or ``"adamw"``: its
            step is counted (``--optimizer``).
        master_weights: the type of the optimizer's master copy of the
            weights (``"fp32"`` with ``weights="bf16"``).
        recompute: globs of blocks whose activations are recomputed in the
            backward (``--recompute``).

    Raises:
        TypeError: an option of the wrong type (``dims={"batch": 1.5}``,
            ``fma="false"``), naming it.
        UsageError: an option of the wrong value (a ValueError), naming it.
        InputError: the model cannot be read or its shapes inferred.
        UnsupportedOpError: with ``strict=True``, layers without a rule.
    """
    options = _options(
        dims=dims, inputs=inputs, rules=rules, device=device, measured=measured,
        profile=profile, fma=fma, attention=attention, if_branch=if_branch, prune=prune,
        weights=weights, activations=activations, strict=strict, training=training,
        freeze=freeze, optimizer=optimizer, master_weights=master_weights,
        recompute=recompute,
    )
    payload, kind, name = _source(model)
    text = _c3.estimate(
        payload, kind, name, format="json", unit="none", digits=3, columns="all",
        parts="both", **options,
    )
    data = json.loads(text)
    # The report's own meta (version, model, input kind, options in force),
    # with what only Python knows: where the model came from.
    # (prune as the number given, not the text handed to the extension)
    # (a profile as the command line's meta gives it: one file's path, or
    # the list of a TensorRT profile and its layer information)
    profiles = options["profile"]
    shown = {**options, "prune": _prune(prune),
             "profile": profiles[0] if len(profiles) == 1 else (profiles or None)}
    meta = {**data.pop("meta", {}), "source": name, "kind": kind, **shown}
    meta.setdefault("c3_version", __version__)
    return Report(data, meta, (payload, kind, name, options))


def explain(
    op: str,
    *,
    inputs: Optional[Mapping[str, Union[str, Sequence[int], Sequence[Any]]]] = None,
    attrs: Optional[Mapping[str, Any]] = None,
    rules: Union[str, Iterable[str]] = (),
    opset: Optional[int] = None,
    fma: bool = True,
    attention: str = "masked",
    device: Optional[str] = None,
) -> str:
    """How ``op`` is counted, as ``c3 explain`` prints it.

    With ``inputs`` (tensor shapes by the rule's pattern names, e.g.
    ``{"X": [1, 3, 224, 224], "W": [64, 3, 7, 7], "Y": [1, 64, 112, 112]}``;
    a string ``"1x3x224x224:float16"`` sets the dtype, a list of shapes gives
    a variadic input) and ``attrs`` (``{"strides": [2, 2]}``), the rule is
    evaluated step by step; with ``device`` too (a name ``devices()``
    lists, or a device of a pack in ``rules``), timed on it: the roofline's
    terms and bound, and the predicted time on a calibrated device.
    """
    args = ["explain", op]
    for pack in [rules] if isinstance(rules, str) else rules:
        args += ["--rules", os.fspath(pack)]
    for name, shape in (inputs or {}).items():
        shapes = (
            shape
            if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple, str))
            else [shape]
        )
        for s in shapes:
            text = s if isinstance(s, str) else ("x".join(str(int(d)) for d in s) or "scalar")
            args += ["--in", f"{name}={text}"]
    for name, value in (attrs or {}).items():
        if isinstance(value, (list, tuple)):
            text = "[" + ",".join(str(v) for v in value) + "]"
        else:
            text = str(int(value)) if isinstance(value, bool) else str(value)
        args += ["--attr", f"{name}={text}"]
    if opset is not None:
        args += ["--opset", str(int(opset))]
    if not fma:
        args.append("--no-fma")
    args += ["--attention", attention]
    if device is not None:
        args += ["--device", str(device)]
    return _c3.cli(args)


def devices(rules: Union[str, Iterable[str]] = ()) -> List[Dict[str, Any]]:
    """The device catalog: ``[{"name", "peak_flops": {...}, "bandwidth", "source"}]``."""
    args = ["devices", "--format", "json"]
    for pack in [rules] if isinstance(rules, str) else rules:
        args += ["--rules", os.fspath(pack)]
    return json.loads(_c3.cli(args))["devices"]


def rules(packs: Union[str, Iterable[str]] = ()) -> List[Dict[str, Any]]:
    """Every operator with a rule and where it comes from (``c3 rules list``)."""
    args = ["rules", "list", "--format", "json"]
    for pack in [packs] if isinstance(packs, str) else packs:
        args += ["--rules", os.fspath(pack)]
    return json.loads(_c3.cli(args))["rules"]
