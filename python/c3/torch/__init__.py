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

Training (``CostHook(training=True)``, ``estimate(..., training=True)``):
the forward pass runs with gradients on and the backward pass runs under
the hook too. Each aten op the backward pass runs is attributed to the
forward layer that caused it, through the autograd graph: during the
forward pass an op that creates an autograd node takes the next sequence
number (``torch._C._autograd._get_sequence_nr()`` read after the op is one
past the node's), and during the backward pass
``torch._C._current_autograd_node()`` is the node being run, whose
``_sequence_nr()`` names the forward op. The backward records carry
``"backward_of"``: the index of that forward layer in the trace; an aten op
that is the gradient of an ONNX operator (``convolution_backward``,
``threshold_backward``, ``native_layer_norm_backward``...) is written as
the forward layer's description with ``"grads"``, the input positions
whose gradients it computes, and costed with the rule's backward formulas;
any other (``mm``, ``sum``...) as the ONNX operator it maps to. Tensors
carry names (parameters their module names), so that c3 follows which need
a gradient.
"""

from __future__ import annotations

import json
import os
import weakref
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

try:
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
except ImportError as e:
    raise ImportError("c3.torch needs PyTorch: pip install 'c3[torch]' (or pip install torch)") from e

import c3 as _c3pkg

from . import _aten, _aten_grad

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
        if entry is None or self.hook._inside or self.hook._in_backward():
            # (A function called by a backward pass, a custom autograd
            # Function's: its aten ops are recorded one by one.)
            return func(*args, **kwargs)
        name, mapper, schema = entry
        start = len(self.hook.layers)
        self.hook._inside += 1
        try:
            with self.hook._timed():
                out = func(*args, **kwargs)
        finally:
            self.hook._inside -= 1
        self.hook._record(name, mapper, args, kwargs, schema, out)
        self.hook._note_nodes(start)
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
            out = func(*args, **kwargs)
            if self.hook.training and self.hook._inside and func.overloadpacket.__name__ in _aten.VIEWS:
                # Inside a function taken whole (F.linear's weight.t()): a
                # view of a parameter the backward pass may read is still
                # that parameter.
                self.hook._propagate(args, kwargs, out, view=True)
                self.hook._alias(func.overloadpacket.__name__, args, kwargs, out)
            return out
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
        training: record the backward passes run inside the block too
            (``loss.backward()``), each backward op attributed to the forward
            layer it is the gradient of; the report then has each layer's
            ``backward`` costs. Run forward and backward only inside the
            block: an optimizer step there would be recorded as forward
            layers.
        freeze, optimizer, master_weights, recompute: with ``training``, as
            for :func:`c3.estimate` (passed on when given).

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
        training: bool = False,
        freeze: Any = None,
        optimizer: Any = None,
        master_weights: Any = None,
        recompute: Any = None,
    ) -> None:
        # Checked now, not when the report is first read after the pass.
        _c3pkg._options(
            fma=fma, attention=attention, rules=rules, device=device, weights=weights,
            activations=activations, strict=strict, training=training,
            freeze=() if freeze is None else freeze, optimizer=optimizer,
            master_weights=master_weights, recompute=() if recompute is None else recompute,
        )
        self.fma = fma
        self.options: Dict[str, Any] = dict(
            attention=attention, rules=rules, device=device, weights=weights,
            activations=activations, strict=strict,
        )
        self.training = training
        if self.training:
            self.options["training"] = True
            for key, value in (("freeze", freeze), ("optimizer", optimizer),
                               ("master_weights", master_weights), ("recompute", recompute)):
                if value is not None:
                    self.options[key] = value
        elif any(v is not None for v in (freeze, optimizer, master_weights, recompute)):
            raise ValueError("freeze, optimizer, master_weights and recompute need training=True")
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
        # Training: _nodes[seq] = (first layer, end, module path, call) of
        # the forward op whose autograd node has sequence number seq;
        # _seq_last the next sequence number when the last op was seen.
        self._nodes: Dict[int, List[Any]] = {}
        self._last_nodes: List[List[Any]] = []
        self._seq_last = 0
        # Gradient sums (see _producer): which node each backward tensor
        # was made under.
        self._origin: Dict[int, Tuple[int, Any]] = {}
        # Tensor names (training): parameters' and buffers' module names, and
        # t<N> for the others, held while the tensor lives (a weak reference
        # drops the entry, so that a new tensor at the same id() gets its own).
        self._param_names: Dict[int, str] = {}
        self._buffer_ids: set = set()
        # Views of parameters: id → (the parameter, a weak reference to the view).
        self._views: Dict[int, Any] = {}
        self._tensor_names: Dict[int, Tuple[str, Any]] = {}
        self._next_name = 0

    # --- module paths ----------------------------------------------------

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        key = id(module)
        if key not in self._names:
            if not self._stack:  # a root: name every submodule from here
                for n, m in module.named_modules():
                    self._names.setdefault(id(m), n)
                for t in list(module.parameters()) + list(module.buffers()):
                    self._const[id(t)] = t
                # Names for parameters and buffers (a tied weight is one
                # tensor: its first name).
                for n, t in list(module.named_parameters()) + list(module.named_buffers()):
                    self._param_names.setdefault(id(t), n)
                for t in module.buffers():
                    self._buffer_ids.add(id(t))
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
            # A parameter or buffer by its module name, so that a tied
            # weight counts once; buffers apart from parameters.
            view = self._views.get(id(t))
            if view is not None and view[1]() is t:
                t = view[0]
            name = self._param_names.get(id(t))
            if name is not None:
                d["name"] = name
                if id(t) in self._buffer_ids:
                    d["buffer"] = True
        if self.training:
            d["name"] = self._tensor_name(t)
        return d

    def _tensor_name(self, t: torch.Tensor) -> str:
        key = id(t)
        name = self._param_names.get(key)
        if name is not None:
            return name
        entry = self._tensor_names.get(key)
        if entry is not None and entry[1]() is t:
            return entry[0]
        name = f"t{self._next_name}"
        self._next_name += 1
        self._set_name(t, name)
        return name

    def _set_name(self, t: torch.Tensor, name: str) -> None:
        key = id(t)
        names = self._tensor_names

        def drop(ref: Any, key: int = key) -> None:
            if names.get(key, (None, None))[1] is ref:
                del names[key]

        try:
            names[key] = (name, weakref.ref(t, drop))
        except TypeError:  # no weak reference to it: kept alive instead
            names[key] = (name, (lambda t=t: t))

    def _alias(self, name: str, args: Any, kwargs: Dict[str, Any], out: Any) -> None:
        """A view's outputs take its input's name: the producer of the
        tensor viewed is the producer of the view (the view is free)."""
        if name not in _aten.VIEWS:
            return
        ins = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        if not ins:
            return
        src = ins[0]
        name = self._tensor_name(src)
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t is not src and id(t) not in self._param_names:
                self._set_name(t, name)

    # --- training: attributing backward ops to forward layers ---------------------

    def _in_backward(self) -> bool:
        return self.training and torch._C._current_autograd_node() is not None

    def _note_nodes(self, start: int) -> None:
        """After a forward op: the autograd nodes it created (the sequence
        numbers taken since the last op) map to the layers it recorded,
        self.layers[start:], and to the module running it. An op that
        creates no node but records layers right after one, in the same
        module call, extends that node's reach for gradient records only
        (an in-place op's autograd kernel saves a clone of its input first:
        the clone takes the node, the op itself comes next)."""
        if not self.training:
            return
        seq = torch._C._autograd._get_sequence_nr()
        path, call = self._stack[-1] if self._stack else ("", 0)
        end = len(self.layers)
        if seq > self._seq_last:
            self._last_nodes = [[start, end, end, path, call]]
            for s in range(self._seq_last, seq):
                self._nodes[s] = self._last_nodes[0]
            self._seq_last = seq
        elif end > start and self._last_nodes:
            entry = self._last_nodes[0]
            if entry[2] == start and entry[3] == path and entry[4] == call:
                entry[2] = end

    def _nearest(self, start: int, path: str) -> Optional[int]:
        """The forward layer a backward op of a forward op that recorded no
        layer (a view, or work on constants alone, folded) is charged to:
        the nearest recorded forward layer before it of the same module
        path; else the first after it of that path; else the same in the
        parent module (a layer of it or of its submodules), and so up to the
        root; None when there is no forward layer at all."""
        layers = self.layers
        start = min(start, len(layers))
        prefix: Optional[str] = path
        while prefix is not None:
            def inside(i: int, p: str = prefix) -> bool:
                q = layers[i]["_path"]
                return "_backward_of" not in layers[i] and (
                    q == p or not p or q.startswith(p + ".") or q.startswith(p + "/"))
            for i in range(start - 1, -1, -1):
                if inside(i):
                    return i
            for i in range(start, len(layers)):
                if inside(i):
                    return i
            prefix = None if not prefix else (prefix.rsplit(".", 1)[0] if "." in prefix else "")
        return None

    def _forward_of(self, node: Any) -> Tuple[List[int], List[int], Optional[int], bool]:
        """For an autograd node: the forward layers its op recorded
        (candidates), those its reach extends to (see _note_nodes), the
        layer to charge when none of them fits (or there are none), and
        whether its op was a free one (a view: no layer of its own)."""
        seq = int(node._sequence_nr())
        entry = self._nodes.get(seq)
        if entry is not None:
            start, end, ext, path, _ = entry
            cands = [i for i in range(start, end) if "_backward_of" not in self.layers[i]]
            reach = [i for i in range(start, ext) if "_backward_of" not in self.layers[i]]
            if cands:
                return cands, reach, cands[0], False
            return [], reach, (reach[0] if reach else self._nearest(start, path)), True
        # AccumulateGrad (sequence number 2**64 - 1) adds a gradient into a
        # parameter's .grad when one is there already: charged to the first
        # layer reading that parameter.
        var = getattr(node, "variable", None)
        name = self._param_names.get(id(var)) if isinstance(var, torch.Tensor) else None
        if name is not None:
            for i, layer in enumerate(self.layers):
                if "_backward_of" in layer:
                    continue
                if any(t is not None and t.get("name") == name for t in layer.get("inputs", [])):
                    return [], [], i, False
        return [], [], None, False

    # Gradient sums. A tensor read by several forward layers gets the sum of
    # their gradients: autograd adds each one arriving into the buffer of
    # the node that produced the tensor, an `add` run while the node that
    # sent the gradient (a consumer) is current. That sum is charged to the
    # tensor's producer instead: the add is told from one of the consumer's
    # own formula by its inputs (a gradient made under the current node and
    # one made under another), and the producer is the consumer's next
    # function whose output has the sum's shape (through views: their
    # input's producer).

    def _origin_of(self, t: Any) -> Optional[int]:
        entry = self._origin.get(id(t))
        return entry[0] if entry is not None and entry[1]() is t else None

    def _set_origin(self, out: Any, seq: int) -> None:
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                key = id(t)
                origin = self._origin

                def drop(ref: Any, key: int = key) -> None:
                    if origin.get(key, (None, None))[1] is ref:
                        del origin[key]

                try:
                    origin[key] = (seq, weakref.ref(t, drop))
                except TypeError:
                    pass

    def _producer(self, node: Any, shape: List[int]) -> Optional[int]:
        """The forward layer producing the tensor whose gradient `node`
        sends on with this shape (see above); None when not found."""
        match_shape = True
        for _ in range(16):
            found = None
            for nxt, nr in getattr(node, "next_functions", ()):
                if nxt is None:
                    continue
                if match_shape:
                    try:
                        if list(nxt._input_metadata[nr].shape) != shape:
                            continue
                    except (AttributeError, IndexError, RuntimeError):
                        continue
                found = nxt
                break
            if found is None:
                return None
            cands, _, target, view = self._forward_of(found)
            if cands:
                return cands[-1]  # the op's last layer makes its output
            if not view:
                return target  # a parameter's AccumulateGrad: its first reader
            node, match_shape = found, False  # a view: its input's producer
        return None

    def _on_backward(self, node: Any, func: Any, name: str, namespace: str, schema: Any,
                     mapper: Any, args: Any, kwargs: Dict[str, Any], out: Any) -> None:
        seq = int(node._sequence_nr())
        cands, reach, target, view = self._forward_of(node)
        try:
            if name in _aten.FREE and namespace == "aten":
                self._propagate(args, kwargs, out, view=True)
                self._alias(name, args, kwargs, out)
                return
            if name in ("add", "add_") and namespace == "aten" and len(args) >= 2 and target is not None:
                a, b = args[0], args[1]
                if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
                    oa, ob = self._origin_of(a), self._origin_of(b)
                    if oa is not None and ob is not None and (oa != seq or ob != seq):
                        y = out if isinstance(out, torch.Tensor) else a
                        producer = self._producer(node, [int(d) for d in y.shape])
                        if producer is not None:
                            cands, reach, target = [producer], [producer], producer
            self._backward_op(node, cands, reach, target, func, name, namespace, schema,
                              mapper, args, kwargs, out)
        finally:
            self._set_origin(out, seq)

    def _backward_op(self, node: Any, cands: List[int], reach: List[int], target: Optional[int],
                     func: Any, name: str, namespace: str, schema: Any, mapper: Any,
                     args: Any, kwargs: Dict[str, Any], out: Any) -> None:
        if target is None:
            # A node made before the hook (the forward pass ran outside
            # it): no forward layer to charge, so the op is an ordinary
            # layer, under "backward", counted where it can be seen.
            self._stack.append(("backward", 0))
            try:
                self._forward_op(func, name, namespace, schema, mapper, args, kwargs, out)
            finally:
                self._stack.pop()
            return
        fwd = self.layers[target]
        grad = _aten_grad.GRADIENTS.get(name) if namespace == "aten" else None
        for t in tree_flatten((args, kwargs))[0]:
            if isinstance(t, torch.Tensor):
                self._tensor_name(t)
        outs = [self._describe(t) for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        call = _aten.Call(name, args, kwargs, schema, self._describe, outs)
        base = {"_path": fwd["_path"], "_call": fwd["_call"], "_aten": name}
        if grad is not None:
            ops, grads_of, describe_forward = grad
            own = next((i for i in reach if self.layers[i]["op"] in ops), None)
            if own is not None:
                # The forward layer's own description: a copy of it.
                src = self.layers[own]
                rec = {"op": src["op"], "attrs": src.get("attrs", {}), "inputs": src["inputs"],
                       "outputs": src["outputs"]}
                if "domain" in src:
                    rec["domain"] = src["domain"]
                target = own
                base.update(_path=src["_path"], _call=src["_call"])
            else:
                # The forward op ran as another layer (a softmax inside an
                # Attention layer): the forward description rebuilt from the
                # backward op's arguments.
                built = describe_forward(call)
                if built is None:
                    return
                op, attrs, ins, ys = built
                rec = {"op": op, "attrs": attrs, "inputs": ins, "outputs": ys}
            rec.update(base, grads=grads_of(call), _backward_of=target)
            self.layers.append(rec)
            return
        if mapper is None or namespace not in ("aten", "torchvision", "prims"):
            ins = [self._describe(t) for t in tree_flatten((args, kwargs))[0]
                   if isinstance(t, torch.Tensor)]
            self.layers.append(dict(base, op=f"{name}.{func._overloadname}", domain="aten",
                                    inputs=ins, outputs=outs, _backward_of=target))
            return
        if self._propagate(args, kwargs, out, view=False):
            return
        for op, attrs, ins, ys in mapper(call):
            self.layers.append(dict(base, op=op, attrs=attrs, inputs=ins, outputs=ys,
                                    _backward_of=self._pick(cands, op, target)))

    def _pick(self, cands: List[int], op: str, default: int) -> int:
        """Which of the forward layers of one op an ordinary backward op is
        charged to: one of the same op; a product's to the forward product;
        a sum (a bias's gradient) to the forward Add (F.linear on a 3-D
        input: a MatMul and an Add); else the first."""
        if not cands:
            return default
        ops = [self.layers[i]["op"] for i in cands]
        for i, o in zip(cands, ops):
            if o == op:
                return i
        if op in _PRODUCTS:
            for i, o in zip(cands, ops):
                if o in _PRODUCTS:
                    return i
        if op == "ReduceSum":
            for i, o in zip(cands, ops):
                if o == "Add":
                    return i
        return cands[0]

    def _on_aten(self, func: Any, args: Any, kwargs: Dict[str, Any], out: Any) -> None:
        packet = func.overloadpacket
        name = packet.__name__
        namespace = func.namespace
        schema = [a.name for a in func._schema.arguments]
        mapper = _aten.MAPPERS.get(name)
        if self.training:
            node = torch._C._current_autograd_node()
            if node is not None:
                self._on_backward(node, func, name, namespace, schema, mapper, args, kwargs, out)
                return
            start = len(self.layers)
            self._forward_op(func, name, namespace, schema, mapper, args, kwargs, out)
            self._note_nodes(start)
            return
        self._forward_op(func, name, namespace, schema, mapper, args, kwargs, out)

    def _forward_op(self, func: Any, name: str, namespace: str, schema: Any, mapper: Any,
                    args: Any, kwargs: Dict[str, Any], out: Any) -> None:
        if name in _aten.FREE and namespace == "aten":
            self._propagate(args, kwargs, out, view=True)
            if self.training:
                self._alias(name, args, kwargs, out)
            return
        if mapper is None or namespace not in ("aten", "torchvision", "prims"):
            self._record(name, None, args, kwargs, schema, out,
                         unsupported=f"{namespace}::{name}.{func._overloadname}")
            return
        self._record(name, mapper, args, kwargs, schema, out)

    def _propagate(self, args: Any, kwargs: Dict[str, Any], out: Any, view: bool,
                   lookup: bool = False) -> bool:
        """Marks the outputs constant when every tensor input is (or, for a
        tensor-making op, when there is none); returns whether it did."""
        ins = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        if ins and not all(self._is_const(t) for t in ins):
            return False
        outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        params = [t for t in ins if id(t) in self._param_names]
        if params and view:
            # A view of a parameter is that parameter (counted once, by its
            # name), as the exported model's initializer is; kept while the
            # view lives (an id is reused once its tensor is gone).
            source = params[0]
            for t in outs:
                self._views[id(t)] = (source, weakref.ref(t))
        elif params and lookup:
            # An embedding's rows at constant positions (GPT-2's position
            # embedding) are a layer that reads the parameter, not folded
            # away: the parameter is counted, as c3 counts what a folded
            # node is made from in an exported model.
            return False
        for t in outs:
            self._const[id(t)] = t
        return True

    def _record(self, name: str, mapper: Any, args: Any, kwargs: Dict[str, Any],
                schema: Any, out: Any, unsupported: Optional[str] = None) -> None:
        # Work on constants only is folded away, as ONNX inference engines
        # (and c3 on an exported model) do: its outputs are constants too.
        lookup = name in ("embedding", "index_select", "take", "gather")
        if self._propagate(args, kwargs, out, view=False, lookup=lookup):
            return
        if self.training:  # (names in reading order: inputs before outputs)
            for t in tree_flatten((args, kwargs))[0]:
                if isinstance(t, torch.Tensor):
                    self._tensor_name(t)
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
        self._nodes = {}
        self._last_nodes = []
        self._origin = {}
        self._seq_last = torch._C._autograd._get_sequence_nr()
        self._param_names = {}
        self._buffer_ids = set()
        self._views = {}
        self._tensor_names = {}
        self._next_name = 0
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
        self._tensor_names = {}
        self._origin = {}

    # --- results ---------------------------------------------------------------

    @property
    def trace(self) -> Dict[str, Any]:
        """The recorded layers as an operator trace (README, "The operator
        trace"): what ``c3 estimate trace.json`` reads."""
        # One layer in a module call: the module's path; several: the path
        # and the op. A name met again (a module called twice) gets -2, -3.
        # A backward record (training) is named after its forward layer,
        # NAME/backward/ATEN, and is no layer of its own: it counts in
        # neither.
        per_call: Dict[int, int] = {}
        for layer in self.layers:
            if "_backward_of" not in layer:
                per_call[layer["_call"]] = per_call.get(layer["_call"], 0) + 1
        used: Dict[str, int] = {}
        layers = []
        for layer in self.layers:
            rec = {k2: v for k2, v in layer.items() if not k2.startswith("_")}
            if "_backward_of" in layer:
                k = layer["_backward_of"]
                base = f"{layers[k]['name']}/backward/{layer['_aten']}"
                rec["backward_of"] = k
            else:
                path, op = layer["_path"], layer["op"]
                if path and layer["_call"] > 0 and per_call[layer["_call"]] == 1:
                    base = path
                else:
                    base = f"{path}/{op}" if path else op
            n = used.get(base, 0) + 1
            used[base] = n
            rec["name"] = base if n == 1 else f"{base}-{n}"
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


_PRODUCTS = ("MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "Attention")


def _run(hook: CostHook, model: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any],
         loss_fn: Any = None) -> None:
    if not hook.training:
        with torch.no_grad(), hook:
            model(*args, **kwargs)
        return
    # Forward with gradients on, the loss, and its backward pass, all under
    # the hook. The model's parameters' .grad are put back as they were: the
    # backward pass starts from none (as after zero_grad(set_to_none=True)),
    # with no accumulation into earlier gradients.
    params = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    saved = [p.grad for p in params]
    for p in params:
        p.grad = None
    try:
        with torch.enable_grad(), hook:
            out = model(*args, **kwargs)
            hook._calls += 1  # the loss, named "loss" (or loss/Op when several layers)
            hook._stack.append(("loss", hook._calls))
            try:
                loss = _loss(out, loss_fn)
            finally:
                hook._stack.pop()
            loss.backward()
    finally:
        for p, g in zip(params, saved):
            p.grad = g


def _tensors(obj: Any) -> List[torch.Tensor]:
    """The tensors in a model's output: nested tuples, lists, dicts and
    ModelOutput-like objects."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(v)]
    if hasattr(obj, "to_tuple"):
        return _tensors(obj.to_tuple())
    return [t for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor)]


def _loss(out: Any, loss_fn: Any) -> torch.Tensor:
    """loss_fn(out), or the sum of every floating tensor the model returned."""
    if loss_fn is not None:
        loss = loss_fn(out)
        if not isinstance(loss, torch.Tensor):
            raise ValueError(f"loss_fn returned {type(loss).__name__}, not a tensor")
        return loss
    floats = [t for t in _tensors(out) if t.is_floating_point() or t.is_complex()]
    if not floats:
        raise ValueError(
            "training=True: the model returned no floating-point tensor to take the loss "
            "of; pass loss_fn=, a function of the model's output returning the loss")
    loss = floats[0].sum()
    for t in floats[1:]:
        loss = loss + t.sum()
    if not loss.requires_grad:
        raise ValueError(
            "training=True: no output of the model depends on a parameter that requires "
            "grad; pass loss_fn= (a function of the output returning the loss) or unfreeze "
            "the parameters")
    return loss


def _check_run(training: Any, loss_fn: Any) -> None:
    _c3pkg._flag("training", training)
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"loss_fn: a function of the model's output, not {type(loss_fn).__name__}")
    if loss_fn is not None and not training:
        raise ValueError("loss_fn needs training=True")


def estimate(model: Any, *args: Any, fma: bool = True, training: bool = False,
             loss_fn: Any = None, device: Optional[str] = None,
             rules: Union[str, Iterable[str]] = (), attention: str = "masked",
             weights: Optional[str] = None, activations: Optional[str] = None,
             strict: bool = False, freeze: Union[str, Iterable[str]] = (),
             optimizer: Optional[str] = None, master_weights: Optional[str] = None,
             recompute: Union[str, Iterable[str]] = (),
             hook_options: Optional[Dict[str, Any]] = None,
             model_kwargs: Optional[Dict[str, Any]] = None, **kwargs: Any) -> _c3pkg.Report:
    """Runs ``model(*args, **kwargs)`` under a :class:`CostHook` in
    ``torch.no_grad()`` and returns the report.

    c3's options are keywords of their own (``device="h100"``, ``rules``,
    ``attention``, ``weights``, ``activations``, ``strict``, ``fma``, and
    the training ones below), as :func:`c3.estimate` takes them; every
    other keyword goes to the model, and ``model_kwargs`` passes one whose
    name is also c3's (``model_kwargs={"device": ...}``). ``hook_options``
    are further :class:`CostHook` arguments.

    With ``training=True``: runs the forward pass with gradients on, then
    the loss (``loss_fn(output)``, or the sum of every floating-point tensor
    the model returns) and its backward pass, all under the hook; each
    layer's ``backward`` is then the cost of its gradients (see
    :class:`CostHook`); ``freeze``, ``optimizer``, ``master_weights`` and
    ``recompute`` as for :func:`c3.estimate`. The inputs get no gradient;
    parameters get one when they require it. Their ``.grad`` are left as
    they were."""
    options: Dict[str, Any] = dict(
        device=device, rules=rules, attention=attention, weights=weights,
        activations=activations, strict=strict,
    )
    for name, value, unset in (("freeze", freeze, ()), ("optimizer", optimizer, None),
                               ("master_weights", master_weights, None),
                               ("recompute", recompute, ())):
        if value != unset:
            options[name] = value
    options.update(_c3pkg._mapping("hook_options", hook_options))
    _check_run(training, loss_fn)
    if training:
        options["training"] = True
    hook = CostHook(fma=fma, **options)
    call = dict(kwargs)
    call.update(_c3pkg._mapping("model_kwargs", model_kwargs))
    _run(hook, model, args, call, loss_fn=loss_fn)
    return hook.report


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


from . import _profile  # noqa: E402  (uses CostHook and _run above)

profile = _profile.profile


def trace(path: Union[str, "os.PathLike[str]"], model: Any, *args: Any, training: bool = False,
          loss_fn: Any = None, **kwargs: Any) -> Dict[str, Any]:
    """Runs ``model(*args, **kwargs)`` under a :class:`CostHook` in
    ``torch.no_grad()`` and writes its operator trace to ``path`` (the JSON
    ``c3 estimate`` reads), to analyse or share later; returns the trace.
    ``training=True`` (and ``loss_fn``) as for :func:`estimate`: the trace
    has the backward records too, for c3 to cost in training mode."""
    _check_run(training, loss_fn)
    hook = CostHook(training=training)
    _run(hook, model, args, kwargs, loss_fn=loss_fn)
    data = hook.trace
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return data
