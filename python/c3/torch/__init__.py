"""c3 for PyTorch: cost a forward pass by recording the operators it runs.

::

    import c3.torch
    with c3.torch.CostHook() as hook:
        model(x)
    hook.report.show_report(unit="G", mode="md")

The hook is a ``TorchDispatchMode``: it sees every aten operator the forward
pass executes, after autograd and PyTorch's own decompositions, maps each to
the ONNX operator that computes the same thing (attributes, input and output
shapes and dtypes; parameters and buffers marked constant) and costs them
with c3's rules, as ``c3 estimate`` costs an operator trace. Module hooks
name each layer by its module path (``layer1.0.conv1``). Two functions are
taken whole, at the ``torch.nn.functional`` level, because their aten form
depends on the backend: ``linear`` (a Gemm on 2-D inputs, a MatMul and an Add
otherwise, as ONNX exporters write it) and ``scaled_dot_product_attention``
(one ONNX ``Attention``, whichever kernel runs it).

Meta tensors work: a model built under ``torch.device("meta")`` is analysed
from its shapes alone, no weight allocated.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

import c3 as _c3pkg

from . import _aten

__all__ = ["CostHook", "estimate", "profile", "trace"]

_DTYPES = {
    torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.float64: "float64", torch.int64: "int64", torch.int32: "int32",
    torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool",
    torch.complex64: "complex64", torch.complex128: "complex128",
}
for _name, _onnx in (("float8_e4m3fn", "float8e4m3fn"), ("float8_e5m2", "float8e5m2"),
                     ("float8_e4m3fnuz", "float8e4m3fnuz"), ("float8_e5m2fnuz", "float8e5m2fnuz"),
                     ("uint16", "uint16"), ("uint32", "uint32"), ("uint64", "uint64")):
    if hasattr(torch, _name):
        _DTYPES[getattr(torch, _name)] = _onnx

# Functions recorded whole (see the module docstring), with their mapper.
_FUNCTIONS = {
    F.linear: ("linear", _aten._linear, ("input", "weight", "bias")),
    F.scaled_dot_product_attention: (
        "scaled_dot_product_attention", _aten._attention,
        ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"),
    ),
}


def _onnx_dtype(t: torch.Tensor) -> str:
    return _DTYPES.get(t.dtype, str(t.dtype).replace("torch.", ""))


class _FunctionMode(TorchFunctionMode):
    def __init__(self, hook: "CostHook") -> None:
        super().__init__()
        self.hook = hook

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        entry = _FUNCTIONS.get(func)
        if entry is None or self.hook._inside:
            return func(*args, **kwargs)
        name, mapper, schema = entry
        self.hook._inside += 1
        try:
            with self.hook._timed():
                out = func(*args, **kwargs)
        finally:
            self.hook._inside -= 1
        self.hook._record(name, mapper, args, kwargs, schema, out)
        return out


class _DispatchMode(TorchDispatchMode):
    def __init__(self, hook: "CostHook") -> None:
        super().__init__()
        self.hook = hook

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        if func is torch.ops.aten._local_scalar_dense.default and args and args[0].is_meta:
            # A meta tensor has no value to read back: model code asking for
            # one (`if mask.all():`, `.item()`) gets True or 1, the common
            # case (no padding, no packed sequences), and the hook counts it.
            self.hook.meta_reads += 1
            t = args[0]
            if t.dtype == torch.bool:
                return True
            return 1.0 if t.is_floating_point() else 1
        # The profiler's own range markers (c3.torch.profile) are no layers.
        if self.hook._inside or func.namespace == "profiler":
            return func(*args, **kwargs)
        with self.hook._timed():
            out = func(*args, **kwargs)
        self.hook._on_aten(func, args, kwargs, out)
        return out


class CostHook:
    """Records the operators of the forward passes run inside ``with`` and
    costs them; ``hook.report`` is then a :class:`c3.Report`.

    Args:
        fma: count a multiply-add as one FLOP (``False``: two).
        attention, rules, device, weights, activations, strict: as for
            :func:`c3.estimate`.

    After the block: ``hook.report`` (a :class:`c3.Report`), ``hook.trace``
    (the trace dict the CLI reads), and ``show_report``/``show_summary_report``
    as shortcuts to the report's.
    """

    def __init__(
        self,
        fma: bool = True,
        *,
        attention: str = "masked",
        rules: Union[str, Iterable[str]] = (),
        device: Optional[str] = None,
        weights: Optional[str] = None,
        activations: Optional[str] = None,
        strict: bool = False,
    ) -> None:
        self.fma = fma
        self.options: Dict[str, Any] = dict(
            attention=attention, rules=rules, device=device, weights=weights,
            activations=activations, strict=strict,
        )
        self.layers: List[Dict[str, Any]] = []
        #: Values read back from meta tensors (taken as True or 1).
        self.meta_reads = 0
        self._report: Optional[_c3pkg.Report] = None
        self._inside = 0
        self._stack: List[Tuple[str, int]] = []
        self._calls = 0
        self._names: Dict[int, str] = {}
        self._const: Dict[int, torch.Tensor] = {}
        self._handles: List[Any] = []
        self._modes: List[Any] = []
        # c3.torch.profile: each recorded call is timed as a profiler range
        # named by its number in the pass; _first[n] is the index of the
        # first layer call n recorded.
        self._timing = False
        self._call_no = 0
        self._first: Dict[int, int] = {}

    # --- module paths ----------------------------------------------------

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        key = id(module)
        if key not in self._names:
            if not self._stack:  # a root: name every submodule from here
                for n, m in module.named_modules():
                    self._names.setdefault(id(m), n)
                for t in list(module.parameters()) + list(module.buffers()):
                    self._const[id(t)] = t
            else:  # made on the fly inside another module
                parent = self._stack[-1]
                self._names[key] = (parent + "." if parent else "") + type(module).__name__
        self._calls += 1
        # A leaf module's one layer takes its path; a container's own ops
        # (a residual Add) are named path/Op.
        leaf = next(iter(module.children()), None) is None
        self._stack.append((self._names[key], self._calls if leaf else -self._calls))

    def _post(self, module: torch.nn.Module, args: Any, out: Any) -> None:
        if self._stack:
            self._stack.pop()

    # --- recording ---------------------------------------------------------

    def _is_const(self, t: Any) -> bool:
        return isinstance(t, torch.Tensor) and id(t) in self._const

    def _describe(self, t: Any) -> Optional[Dict[str, Any]]:
        if not isinstance(t, torch.Tensor):
            return None
        d: Dict[str, Any] = {"shape": [int(s) for s in t.shape], "dtype": _onnx_dtype(t)}
        if self._is_const(t):
            d["const"] = True
        return d

    def _on_aten(self, func: Any, args: Any, kwargs: Dict[str, Any], out: Any) -> None:
        packet = func.overloadpacket
        name = packet.__name__
        namespace = func.namespace
        schema = [a.name for a in func._schema.arguments]
        mapper = _aten.MAPPERS.get(name)
        if name in _aten.FREE and namespace == "aten":
            self._propagate(args, kwargs, out, view=True)
            return
        if mapper is None or namespace not in ("aten", "torchvision", "prims"):
            self._record(name, None, args, kwargs, schema, out,
                         unsupported=f"{namespace}::{name}.{func._overloadname}")
            return
        self._record(name, mapper, args, kwargs, schema, out)

    def _propagate(self, args: Any, kwargs: Dict[str, Any], out: Any, view: bool) -> bool:
        """Marks the outputs constant when every tensor input is (or, for a
        tensor-making op, when there is none); returns whether it did."""
        ins = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        if ins and not all(self._is_const(t) for t in ins):
            return False
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self._const[id(t)] = t
        return True

    def _record(self, name: str, mapper: Any, args: Any, kwargs: Dict[str, Any],
                schema: Any, out: Any, unsupported: Optional[str] = None) -> None:
        # Work on constants only is folded away, as ONNX inference engines
        # (and c3 on an exported model) do: its outputs are constants too.
        if self._propagate(args, kwargs, out, view=False):
            return
        outs = [self._describe(t) for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        path, call = self._stack[-1] if self._stack else ("", 0)
        if unsupported is not None:
            ins = [self._describe(t) for t in tree_flatten((args, kwargs))[0]
                   if isinstance(t, torch.Tensor)]
            self.layers.append({"op": unsupported.split("::", 1)[1], "domain": "aten",
                                "_path": path, "_call": call, "inputs": ins, "outputs": outs})
            return
        aten_call = _aten.Call(name, args, kwargs, schema, self._describe, outs)
        for op, attrs, ins, ys in mapper(aten_call):
            self.layers.append({"op": op, "attrs": attrs, "_path": path, "_call": call,
                                "inputs": ins, "outputs": ys})

    def _timed(self) -> Any:
        """A profiler range around one call when profiling, else nothing."""
        if not self._timing:
            return _Nothing()
        n = self._call_no
        self._call_no += 1
        self._first[n] = len(self.layers)
        return torch.profiler.record_function(f"{_profile.CALL}{n}")

    # --- context manager ------------------------------------------------------

    def __enter__(self) -> "CostHook":
        self.layers = []
        self.meta_reads = 0
        self._report = None
        self._handles = [
            torch.nn.modules.module.register_module_forward_pre_hook(self._pre),
            torch.nn.modules.module.register_module_forward_hook(self._post, always_call=True),
        ]
        self._modes = [_FunctionMode(self), _DispatchMode(self)]
        for m in self._modes:
            m.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        for m in reversed(self._modes):
            m.__exit__(*exc)
        self._modes = []
        for h in self._handles:
            h.remove()
        self._handles = []
        self._stack = []
        self._const = {}

    # --- results ---------------------------------------------------------------

    @property
    def trace(self) -> Dict[str, Any]:
        """The recorded layers as an operator trace (README, "The operator
        trace"): what ``c3 estimate trace.json`` reads."""
        # One layer in a module call: the module's path; several: the path
        # and the op. A name met again (a module called twice) gets -2, -3.
        per_call: Dict[int, int] = {}
        for layer in self.layers:
            per_call[layer["_call"]] = per_call.get(layer["_call"], 0) + 1
        used: Dict[str, int] = {}
        layers = []
        for layer in self.layers:
            path, op = layer["_path"], layer["op"]
            if path and layer["_call"] > 0 and per_call[layer["_call"]] == 1:
                base = path
            else:
                base = f"{path}/{op}" if path else op
            k = used.get(base, 0) + 1
            used[base] = k
            rec = {k2: v for k2, v in layer.items() if not k2.startswith("_")}
            rec["name"] = base if k == 1 else f"{base}-{k}"
            layers.append(rec)
        return {"layers": layers}

    @property
    def report(self) -> _c3pkg.Report:
        """The costs of what ran inside the block, as a :class:`c3.Report`."""
        if self._report is None:
            opts = dict(self.options)
            self._report = _c3pkg.estimate(self.trace, fma=self.fma, **opts)
            self._report.meta["source"] = "c3.torch.CostHook"
            self._report.meta["meta_reads"] = self.meta_reads
        return self._report

    def show_report(self, *args: Any, **kwargs: Any) -> None:
        """``hook.report.show_report(...)``."""
        self.report.show_report(*args, **kwargs)

    def show_summary_report(self, *args: Any, **kwargs: Any) -> None:
        """``hook.report.show_summary_report(...)``."""
        self.report.show_summary_report(*args, **kwargs)


def _run(hook: CostHook, model: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
    with torch.no_grad(), hook:
        model(*args, **kwargs)


def estimate(model: Any, *args: Any, fma: bool = True, hook_options: Optional[Dict[str, Any]] = None,
             **kwargs: Any) -> _c3pkg.Report:
    """Runs ``model(*args, **kwargs)`` under a :class:`CostHook` in
    ``torch.no_grad()`` and returns the report. ``hook_options`` are the
    other :class:`CostHook` arguments (``{"device": "h100"}``)."""
    hook = CostHook(fma=fma, **(hook_options or {}))
    _run(hook, model, args, kwargs)
    return hook.report


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


from . import _profile  # noqa: E402  (uses CostHook and _run above)

profile = _profile.profile


def trace(path: Union[str, "os.PathLike[str]"], model: Any, *args: Any, **kwargs: Any) -> Dict[str, Any]:
    """Runs ``model(*args, **kwargs)`` under a :class:`CostHook` in
    ``torch.no_grad()`` and writes its operator trace to ``path`` (the JSON
    ``c3 estimate`` reads), to analyse or share later; returns the trace."""
    hook = CostHook()
    _run(hook, model, args, kwargs)
    data = hook.trace
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return data
