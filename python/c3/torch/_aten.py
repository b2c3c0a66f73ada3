"""From an aten operator call to the ONNX layers c3 counts.

Each mapper takes the call (`Call`: its arguments and outputs described) and
returns the layers, as trace records without names: ``(op, attrs, inputs,
outputs)``, where ``inputs``/``outputs`` are tensor descriptions (or None for
an absent optional input). ``FREE`` ops (views, metadata, constants) give no
layer. An op in neither table is reported as unsupported by the caller.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

Tensor = Dict[str, Any]  # {"shape": [...], "dtype": "float32", "const": bool}
Layer = Tuple[str, Dict[str, Any], List[Optional[Tensor]], List[Optional[Tensor]]]


class Call:
    """One aten call: ``arg(i, name)`` is its i-th argument (positional or by
    keyword), ``t(x)`` describes a tensor argument, ``outs`` its outputs."""

    def __init__(self, name: str, args: Sequence[Any], kwargs: Dict[str, Any],
                 schema_args: Sequence[str], describe: Callable[[Any], Optional[Tensor]],
                 outs: List[Tensor]) -> None:
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.schema_args = schema_args
        self.describe = describe
        self.outs = outs

    def arg(self, i: int, default: Any = None) -> Any:
        if i < len(self.args):
            return self.args[i]
        if i < len(self.schema_args):
            return self.kwargs.get(self.schema_args[i], default)
        return default

    def kw(self, name: str, default: Any = None) -> Any:
        if name in self.kwargs:
            return self.kwargs[name]
        if name in self.schema_args:
            i = list(self.schema_args).index(name)
            if i < len(self.args):
                return self.args[i]
        return default

    def t(self, x: Any) -> Optional[Tensor]:
        return self.describe(x)

    def ti(self, i: int) -> Optional[Tensor]:
        return self.describe(self.arg(i))

    def scalar(self, i: int) -> Optional[Tensor]:
        """A tensor argument, or a Python number as a constant scalar."""
        x = self.arg(i)
        d = self.describe(x)
        if d is not None:
            return d
        if isinstance(x, (int, float, bool)):
            # A literal: an input no layer makes and no parameter (named, so
            # that training gives it no gradient).
            return {"shape": [], "dtype": "float32", "name": "literal"}
        return None

    @property
    def y(self) -> List[Optional[Tensor]]:
        return self.outs[:1]


def _rank(t: Optional[Tensor]) -> int:
    return len(t["shape"]) if t else 0


def _axis(dim: Any, rank: int) -> int:
    d = int(dim)
    return d + rank if d < 0 else d


def _dims(dim: Any, rank: int) -> List[int]:
    if dim is None:
        return list(range(rank))
    if isinstance(dim, (list, tuple)):
        return [_axis(d, rank) for d in dim] if dim else list(range(rank))
    return [_axis(dim, rank)]


def _pair(v: Any, n: int) -> List[int]:
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        v = [int(x) for x in v]
        return v * n if len(v) == 1 and n > 1 else v
    return [int(v)] * n


# --- ops with no cost ---------------------------------------------------

#: Views and aliases: an output is (a view of) the first tensor input.
VIEWS = {
    "view", "_unsafe_view", "reshape", "_reshape_alias", "t", "transpose", "permute",
    "expand", "expand_as", "squeeze", "unsqueeze", "slice", "select", "narrow",
    "as_strided", "alias", "detach", "unbind", "split", "split_with_sizes", "chunk",
    "unflatten", "flatten", "view_as", "diagonal", "movedim", "unfold", "lift_fresh",
    "lift_fresh_copy", "_unsafe_split_with_sizes", "unsafe_split", "unsafe_chunk",
    "tensor_split", "view_as_real", "view_as_complex", "_reshape_copy", "numpy_T",
    "swapaxes", "transpose_", "unsqueeze_", "squeeze_", "t_", "as_strided_",
    "_conj", "conj", "resolve_conj", "resolve_neg", "_neg_view", "real", "imag",
    # dropout at inference: the identity
    "dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout",
}

#: Views, metadata and constant makers: no arithmetic, no memory traffic.
FREE = VIEWS | {
    # metadata and host-side scalars
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "size", "stride",
    "numel", "dim", "is_contiguous", "is_nonzero", "_local_scalar_dense", "item",
    "_assert_async", "_assert_scalar", "_functional_assert_async",
    "_functional_assert_scalar", "sym_constrain_range", "sym_constrain_range_for_size",
    "_assert_tensor_metadata", "record_stream", "set_", "is_same_size", "_has_compatible_shallow_copy_type",
    "_to_dense", "_nested_tensor_from_mask_left_aligned", "_version", "_is_any_true",
    "is_pinned", "_foreach_add_", "_resize_output_", "resize_", "resize_as_",
    "_unsafe_index_put", "_pin_memory", "pin_memory",
    # constants (ONNX folds these into initializers)
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
    "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like",
    "new_full", "arange", "linspace", "logspace", "eye", "scalar_tensor", "tensor",
    "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm",
    "normal", "uniform_", "normal_", "bernoulli_", "random_", "zero_", "fill_",
    "_to_copy_meta", "empty_permuted", "_efficientzerotensor", "scalar",
}

# --- elementwise ----------------------------------------------------------

_UNARY = {
    "relu": "Relu", "relu_": "Relu", "sigmoid": "Sigmoid", "sigmoid_": "Sigmoid",
    "tanh": "Tanh", "tanh_": "Tanh", "exp": "Exp", "exp_": "Exp", "log": "Log",
    "sqrt": "Sqrt", "neg": "Neg", "abs": "Abs", "sin": "Sin", "cos": "Cos",
    "tan": "Tan", "floor": "Floor", "ceil": "Ceil", "round": "Round", "sign": "Sign",
    "reciprocal": "Reciprocal", "erf": "Erf", "elu": "Elu", "elu_": "Elu",
    "selu": "Selu", "celu": "Celu", "softplus": "Softplus", "mish": "Mish",
    "hardswish": "HardSwish", "hardswish_": "HardSwish", "hardsigmoid": "HardSigmoid",
    "hardsigmoid_": "HardSigmoid", "silu": "Swish", "silu_": "Swish",
    "logical_not": "Not", "bitwise_not": "BitwiseNot", "isnan": "IsNaN", "isinf": "IsInf",
    "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh",
    "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "softsign": "Softsign",
    "sgn": "Sign", "trunc": "Floor", "neg_": "Neg", "abs_": "Abs", "sqrt_": "Sqrt",
    "log_sigmoid_forward": "Softplus", "relu6": "Clip", "hardtanh": "Clip",
    "hardtanh_": "Clip", "clamp": "Clip", "clamp_": "Clip", "clip": "Clip",
    "clip_": "Clip", "clamp_min": "Clip", "clamp_min_": "Clip", "clamp_max": "Clip",
    "clamp_max_": "Clip", "leaky_relu": "LeakyRelu", "leaky_relu_": "LeakyRelu",
    "erfinv": "Erf", "expm1": "Exp", "log1p": "Log", "bitwise_not_": "BitwiseNot",
    "logical_not_": "Not", "frac": "Floor", "threshold": "ThresholdedRelu",
    "nan_to_num": "Where", "positive": "Identity",
}

_BINARY = {
    "add": "Add", "add_": "Add", "sub": "Sub", "sub_": "Sub", "rsub": "Sub",
    "mul": "Mul", "mul_": "Mul", "div": "Div", "div_": "Div", "true_divide": "Div",
    "maximum": "Max", "minimum": "Min", "fmax": "Max", "fmin": "Min",
    "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
    "ge": "GreaterOrEqual", "logical_and": "And", "logical_or": "Or",
    "logical_xor": "Xor", "bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr",
    "bitwise_xor": "BitwiseXor", "__and__": "BitwiseAnd", "__or__": "BitwiseOr",
    "fmod": "Mod", "remainder": "Mod", "pow": "Pow", "pow_": "Pow", "atan2": "Div",
    "floor_divide": "Div", "xlogy": "Mul", "hypot": "Add", "copysign": "Mul",
    "eq_": "Equal", "lt_": "Less", "gt_": "Greater", "le_": "LessOrEqual",
    "ge_": "GreaterOrEqual", "prelu": "PRelu", "_prelu_kernel": "PRelu",
    "bitwise_left_shift": "BitShift", "bitwise_right_shift": "BitShift",
    "__lshift__": "BitShift", "__rshift__": "BitShift",
}


def _unary(op: str) -> Callable[[Call], List[Layer]]:
    def f(c: Call) -> List[Layer]:
        attrs: Dict[str, Any] = {}
        if op == "LeakyRelu" and c.arg(1) is not None:
            attrs["alpha"] = float(c.arg(1))
        if op == "Clip":
            # Clip(X, min?, max?): the bounds given, as constant scalars.
            scalar = {"shape": [], "dtype": c.y[0]["dtype"] if c.y[0] else "float32", "const": True}
            if c.name.startswith(("relu6", "hardtanh")):
                lo = hi = True
            elif c.name.startswith("clamp_min"):
                lo, hi = True, False
            elif c.name.startswith("clamp_max"):
                lo, hi = False, True
            else:
                lo, hi = c.arg(1) is not None, c.arg(2) is not None
            ins: List[Optional[Tensor]] = [c.ti(0), scalar if lo else None]
            if hi:
                ins.append(scalar)
            return [(op, attrs, ins, c.y)]
        return [(op, attrs, [c.ti(0)], c.y)]
    return f


def _binary(op: str) -> Callable[[Call], List[Layer]]:
    def f(c: Call) -> List[Layer]:
        a, b = c.scalar(0), c.scalar(1)
        if c.name == "rsub":
            a, b = b, a
        layers: List[Layer] = []
        alpha = c.kw("alpha", 1)
        if op in ("Add", "Sub") and alpha not in (1, None):
            # x + alpha * y: the scaling is a multiplication of its own.
            layers.append(("Mul", {}, [b, {"shape": [], "dtype": b["dtype"] if b else "float32",
                                           "const": True}], [b]))
        if op == "BitShift":
            layers.append((op, {"direction": "LEFT" if "left" in c.name else "RIGHT"}, [a, b], c.y))
        else:
            layers.append((op, {}, [a, b], c.y))
        return layers
    return f


def _ne(c: Call) -> List[Layer]:
    return [("Equal", {}, [c.scalar(0), c.scalar(1)], c.y), ("Not", {}, c.y, c.y)]


def _where(c: Call) -> List[Layer]:
    return [("Where", {}, [c.scalar(0), c.scalar(1), c.scalar(2)], c.y)]


def _masked_fill(c: Call) -> List[Layer]:
    return [("Where", {}, [c.ti(1), c.scalar(2), c.ti(0)], c.y)]


def _addcmul(c: Call) -> List[Layer]:
    # self + value * t1 * t2
    return [("Mul", {}, [c.ti(1), c.ti(2)], c.y), ("Add", {}, [c.ti(0), c.outs[0]], c.y)]


def _lerp(c: Call) -> List[Layer]:
    return [("Sub", {}, [c.ti(1), c.ti(0)], c.y), ("Mul", {}, [c.y[0], c.scalar(2)], c.y),
            ("Add", {}, [c.ti(0), c.y[0]], c.y)]


def _rsqrt(c: Call) -> List[Layer]:
    return [("Sqrt", {}, [c.ti(0)], c.y), ("Reciprocal", {}, c.y, c.y)]


def _log_n(c: Call) -> List[Layer]:
    # log2(x) = log(x) / log(2)
    return [("Log", {}, [c.ti(0)], c.y), ("Div", {}, [c.y[0], {"shape": [], "dtype": c.y[0]["dtype"], "const": True}], c.y)]


def _gelu(c: Call) -> List[Layer]:
    approx = c.kw("approximate", "none") or "none"
    return [("Gelu", {"approximate": str(approx)}, [c.ti(0)], c.y)]


def _copy(c: Call) -> List[Layer]:
    src = c.ti(0) if c.name != "copy_" else c.ti(1)
    if src is None:
        return []
    out = c.y[0]
    if out is not None and out["dtype"] != src["dtype"]:
        return [("Cast", {}, [src], c.y)]
    return [("Identity", {}, [src], c.y)]


# --- connections ------------------------------------------------------------

def _convolution(c: Call) -> List[Layer]:
    x, w = c.ti(0), c.ti(1)
    b = c.ti(2)
    n = _rank(w) - 2
    if c.name in ("convolution", "_convolution", "convolution_overrideable"):
        stride, padding, dilation = c.arg(3), c.arg(4), c.arg(5)
        transposed, output_padding, groups = c.arg(6), c.arg(7), c.arg(8)
    elif c.name.startswith("conv_transpose"):
        # conv_transpose{n}d(input, weight, bias, stride, padding, output_padding, groups, dilation)
        stride, padding, output_padding = c.arg(3, 1), c.arg(4, 0), c.arg(5, 0)
        groups, dilation, transposed = c.arg(6, 1), c.arg(7, 1), True
    else:  # conv{n}d, mkldnn_convolution, cudnn_convolution(...)
        stride, padding, dilation, groups = c.arg(3, 1), c.arg(4, 0), c.arg(5, 1), c.arg(6, 1)
        transposed, output_padding = False, 0
    if isinstance(padding, str):
        # "same"/"valid": the output shape says what the pads were.
        padding = 0
    pads = _pair(padding, n)
    attrs: Dict[str, Any] = {
        "strides": _pair(stride, n),
        "pads": pads + pads,
        "dilations": _pair(dilation, n),
        "group": int(groups or 1),
        "kernel_shape": list(w["shape"][2:]) if w else [],
    }
    if transposed:
        attrs["output_padding"] = _pair(output_padding, n)
        return [("ConvTranspose", attrs, [x, w, b], c.y)]
    return [("Conv", attrs, [x, w, b], c.y)]


def _addmm(c: Call) -> List[Layer]:
    beta, alpha = c.kw("beta", 1), c.kw("alpha", 1)
    attrs = {}
    if alpha != 1:
        attrs["alpha"] = float(alpha)
    if beta != 1:
        attrs["beta"] = float(beta)
    bias = c.ti(0) if beta != 0 else None
    return [("Gemm", attrs, [c.ti(1), c.ti(2), bias], c.y)]


def _mm(c: Call) -> List[Layer]:
    return [("MatMul", {}, [c.ti(0), c.ti(1)], c.y)]


def _baddbmm(c: Call) -> List[Layer]:
    layers: List[Layer] = [("MatMul", {}, [c.ti(1), c.ti(2)], c.y)]
    if c.kw("alpha", 1) != 1:
        layers.append(("Mul", {}, [c.y[0], {"shape": [], "dtype": c.y[0]["dtype"], "const": True}], c.y))
    if c.kw("beta", 1) != 0:
        layers.append(("Add", {}, [c.ti(0), c.y[0]], c.y))
    return layers


def _linear(c: Call) -> List[Layer]:
    x, w, b = c.ti(0), c.ti(1), c.ti(2)
    if _rank(x) == 2:
        return [("Gemm", {"transB": 1}, [x, w, b], c.y)]
    wt = dict(w, shape=list(reversed(w["shape"]))) if w else None
    layers: List[Layer] = [("MatMul", {}, [x, wt], c.y)]
    if b is not None:
        layers.append(("Add", {}, [c.y[0], b], c.y))
    return layers


def _einsum(c: Call) -> List[Layer]:
    ops = c.arg(1) or []
    return [("Einsum", {"equation": str(c.arg(0))}, [c.t(o) for o in ops], c.y)]


def _attention(c: Call) -> List[Layer]:
    q, k, v = c.ti(0), c.ti(1), c.ti(2)
    name = c.name
    if name in ("scaled_dot_product_attention", "_scaled_dot_product_attention_math",
                "_scaled_dot_product_flash_attention_for_cpu"):
        mask = c.t(c.kw("attn_mask"))
    elif name in ("_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                  "_scaled_dot_product_fused_attention_overrideable"):
        mask = c.t(c.kw("attn_bias"))
    else:
        mask = None
    causal = bool(c.kw("is_causal", False))
    attrs: Dict[str, Any] = {"is_causal": int(causal)}
    if _rank(q) == 4 and k is not None:
        attrs["q_num_heads"] = int(q["shape"][1])
        attrs["kv_num_heads"] = int(k["shape"][1])
    scale = c.kw("scale")
    if scale is not None:
        attrs["scale"] = float(scale)
    return [("Attention", attrs, [q, k, v, mask], c.y)]


# --- normalization ----------------------------------------------------------

def _layer_norm(c: Call) -> List[Layer]:
    x = c.ti(0)
    shape = c.arg(1) or []
    return [("LayerNormalization", {"axis": -len(shape), "epsilon": float(c.arg(4, 1e-5) or 1e-5)},
             [x, c.ti(2), c.ti(3)], c.y)]


def _rms_norm(c: Call) -> List[Layer]:
    shape = c.arg(1) or []
    eps = c.arg(3)
    attrs: Dict[str, Any] = {"axis": -len(shape)}
    if eps is not None:
        attrs["epsilon"] = float(eps)
    return [("RMSNormalization", attrs, [c.ti(0), c.ti(2)], c.y)]


def _batch_norm(c: Call) -> List[Layer]:
    x, w, b, mean, var = (c.ti(i) for i in range(5))
    ch = [int(x["shape"][1])] if x and _rank(x) > 1 else [1]
    const = {"shape": ch, "dtype": x["dtype"] if x else "float32", "const": True}
    return [("BatchNormalization", {},
             [x, w or const, b or const, mean or const, var or const], c.y)]


def _group_norm(c: Call) -> List[Layer]:
    x = c.ti(0)
    groups = int(c.arg(6, 1))
    return [("GroupNormalization", {"num_groups": groups, "epsilon": float(c.arg(7, 1e-5))},
             [x, c.ti(1), c.ti(2)], c.y)]


def _softmax(op: str) -> Callable[[Call], List[Layer]]:
    def f(c: Call) -> List[Layer]:
        x = c.ti(0)
        return [(op, {"axis": _axis(c.arg(1, -1), _rank(x))}, [x], c.y)]
    return f


# --- pooling ------------------------------------------------------------------

def _max_pool(c: Call) -> List[Layer]:
    x = c.ti(0)
    n = _rank(x) - 2
    k = _pair(c.arg(1), n)
    s = _pair(c.arg(2), n) or k
    p = _pair(c.arg(3, 0), n) or [0] * n
    d = _pair(c.arg(4, 1), n) or [1] * n
    attrs = {"kernel_shape": k, "strides": s, "pads": p + p, "dilations": d,
             "ceil_mode": int(bool(c.arg(5, False)))}
    return [("MaxPool", attrs, [x], c.y)]


def _avg_pool(c: Call) -> List[Layer]:
    x = c.ti(0)
    n = _rank(x) - 2
    k = _pair(c.arg(1), n)
    s = _pair(c.arg(2), n) or k
    p = _pair(c.arg(3, 0), n) or [0] * n
    attrs = {"kernel_shape": k, "strides": s, "pads": p + p,
             "ceil_mode": int(bool(c.arg(4, False))),
             "count_include_pad": int(bool(c.arg(5, True)))}
    return [("AveragePool", attrs, [x], c.y)]


def _adaptive_pool(kind: str) -> Callable[[Call], List[Layer]]:
    def f(c: Call) -> List[Layer]:
        x, y = c.ti(0), c.y[0]
        spatial_in, spatial_out = x["shape"][2:], y["shape"][2:]
        if all(o == 1 for o in spatial_out):
            return [(f"Global{kind}Pool", {}, [x], c.y)]
        # The fixed window that gives the same output, as ONNX exporters write it.
        s = [i // o if o else 1 for i, o in zip(spatial_in, spatial_out)]
        k = [i - (o - 1) * st for i, o, st in zip(spatial_in, spatial_out, s)]
        return [(f"{kind}Pool", {"kernel_shape": k, "strides": s}, [x], c.y)]
    return f


# --- reductions -------------------------------------------------------------

def _reduce(op: str) -> Callable[[Call], List[Layer]]:
    def f(c: Call) -> List[Layer]:
        x = c.ti(0)
        if c.name in ("max", "min") and c.t(c.arg(1)) is not None:
            # max.other / min.other: the elementwise maximum of two tensors
            return [("Max" if c.name == "max" else "Min", {}, [x, c.ti(1)], c.y)]
        dim = c.kw("dim", c.arg(1) if not isinstance(c.arg(1), bool) else None)
        if not isinstance(dim, (list, tuple, int)) or isinstance(dim, bool):
            dim = None
        axes = _dims(dim, _rank(x))
        keep = c.kw("keepdim", False)
        if op in ("ArgMax", "ArgMin"):
            return [(op, {"axis": axes[0] if axes else 0, "keepdims": int(bool(keep))}, [x], c.y)]
        layers: List[Layer] = [(op, {"keepdims": int(bool(keep))},
                                [x, {"shape": [len(axes)], "dtype": "int64", "const": True}], c.y)]
        if c.name in ("var", "std", "var_mean", "std_mean"):
            # mean, squared deviations, their mean (and a square root for std)
            layers = [("ReduceMean", {"keepdims": 1}, [x], c.y), ("Sub", {}, [x, c.y[0]], [x]),
                      ("Mul", {}, [x, x], [x]), ("ReduceMean", {"keepdims": int(bool(keep))}, [x], c.y)]
            if c.name.startswith("std"):
                layers.append(("Sqrt", {}, c.y, c.y))
        return layers
    return f


def _cumsum(c: Call) -> List[Layer]:
    x = c.ti(0)
    return [("CumSum", {}, [x, {"shape": [], "dtype": "int64", "const": True}], c.y)]


def _topk(c: Call) -> List[Layer]:
    x = c.ti(0)
    dim = c.arg(2, -1)
    return [("TopK", {"axis": _axis(dim, _rank(x)), "largest": int(bool(c.arg(3, True)))},
             [x, {"shape": [1], "dtype": "int64", "const": True}], c.outs[:2])]


def _sort(c: Call) -> List[Layer]:
    x = c.ti(0)
    dim = c.kw("dim", -1)
    if not isinstance(dim, int) or isinstance(dim, bool):
        dim = -1
    return [("TopK", {"axis": _axis(dim, _rank(x))},
             [x, {"shape": [1], "dtype": "int64", "const": True}], c.outs[:2])]


# --- data movement ------------------------------------------------------------

def _cat(c: Call) -> List[Layer]:
    ts = [c.t(t) for t in (c.arg(0) or [])]
    ts = [t for t in ts if t is not None and 0 not in t["shape"]]
    y = c.y[0]
    if not ts or y is None:
        return []  # every piece empty: nothing to copy
    dim = c.arg(1, 0)
    axis = _axis(dim, _rank(y))
    if c.name == "stack":
        ts = [dict(t, shape=t["shape"][:axis] + [1] + t["shape"][axis:]) for t in ts]
    return [("Concat", {"axis": axis}, ts, c.y)]


def _gather(op: str) -> Callable[[Call], List[Layer]]:
    def f(c: Call) -> List[Layer]:
        if c.name == "embedding":
            return [("Gather", {"axis": 0}, [c.ti(0), c.ti(1)], c.y)]
        if c.name == "index_select":
            x = c.ti(0)
            return [("Gather", {"axis": _axis(c.arg(1), _rank(x))}, [x, c.ti(2)], c.y)]
        if c.name == "gather":
            x = c.ti(0)
            return [("GatherElements", {"axis": _axis(c.arg(1), _rank(x))}, [x, c.ti(2)], c.y)]
        # index.Tensor: advanced indexing by a list of index tensors
        x = c.ti(0)
        idx = [c.t(i) for i in (c.arg(1) or [])]
        idx = [i for i in idx if i is not None]
        if len(idx) == 1:
            return [("Gather", {"axis": 0}, [x, idx[0]], c.y)]
        return [("GatherND", {}, [x, idx[0]], c.y)]
    return f


def _scatter(c: Call) -> List[Layer]:
    x = c.ti(0)
    if c.name in ("index_put", "index_put_", "_index_put_impl_", "_unsafe_index_put"):
        idx = [c.t(i) for i in (c.arg(1) or []) if c.t(i) is not None]
        upd = c.scalar(2)
        return [("ScatterND", {}, [x, idx[0] if idx else None, upd], c.y)]
    if c.name in ("slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter"):
        src = c.ti(1)
        return [("ScatterND", {}, [x, {"shape": list(src["shape"]) + [1] if src else [1],
                                      "dtype": "int64", "const": True}, src], c.y)]
    if c.name in ("masked_scatter", "masked_scatter_"):
        return [("Where", {}, [c.ti(1), c.ti(2), x], c.y)]
    dim = c.arg(1)
    src = c.scalar(3)
    attrs: Dict[str, Any] = {"axis": _axis(dim, _rank(x))}
    if c.name.startswith("scatter_add"):
        attrs["reduction"] = "add"
    elif c.name.startswith("scatter_reduce"):
        attrs["reduction"] = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min"}.get(
            str(c.arg(4)), "add")
    return [("ScatterElements", attrs, [x, c.ti(2), src], c.y)]


def _pad(c: Call) -> List[Layer]:
    x = c.ti(0)
    mode = {"reflection_pad": "reflect", "replication_pad": "edge"}
    m = "constant"
    for k, v in mode.items():
        if c.name.startswith(k):
            m = v
    if c.name == "pad":
        m = str(c.arg(2, "constant"))
    return [("Pad", {"mode": m}, [x, {"shape": [2 * _rank(x)], "dtype": "int64", "const": True}], c.y)]


def _repeat(c: Call) -> List[Layer]:
    x = c.ti(0)
    y = c.y[0]
    reps = {"shape": [_rank(y)], "dtype": "int64", "const": True}
    if x is not None and _rank(x) < _rank(y):
        x = dict(x, shape=[1] * (_rank(y) - _rank(x)) + list(x["shape"]))
    return [("Tile", {}, [x, reps], c.y)]


def _trilu(c: Call) -> List[Layer]:
    return [("Trilu", {"upper": int(c.name.startswith("triu"))}, [c.ti(0)], c.y)]


def _resize(c: Call) -> List[Layer]:
    x = c.ti(0)
    name = c.name
    if "nearest" in name:
        mode, coord = "nearest", "asymmetric"
    elif "bicubic" in name:
        mode, coord = "cubic", "half_pixel"
    else:
        mode, coord = "linear", "half_pixel"
    if "align_corners" in c.schema_args and c.kw("align_corners"):
        coord = "align_corners"
    sizes = {"shape": [_rank(x)], "dtype": "int64", "const": True}
    return [("Resize", {"mode": mode, "coordinate_transformation_mode": coord},
             [x, None, None, sizes], c.y)]


def _flip(c: Call) -> List[Layer]:
    x = c.ti(0)
    return [("Slice", {}, [x, {"shape": [1], "dtype": "int64", "const": True},
                           {"shape": [1], "dtype": "int64", "const": True}], c.y)]


def _index_fill(c: Call) -> List[Layer]:
    """index_fill(self, dim, index, value): the indexed slices overwritten."""
    x, idx = c.ti(0), c.ti(2)
    if x is None or idx is None:
        return []
    dim = _axis(c.arg(1), _rank(x))
    n = _numel_of(idx)
    upd = dict(x, shape=[n if i == dim else s for i, s in enumerate(x["shape"])])
    upd.pop("const", None)
    return [("ScatterND", {}, [x, {"shape": [n, 1], "dtype": "int64"}, upd], c.y)]


def _numel_of(t: Tensor) -> int:
    n = 1
    for s in t["shape"]:
        n *= int(s)
    return n


def _unique(c: Call) -> List[Layer]:
    return [("Unique", {"sorted": 1}, [c.ti(0)], c.outs[:1])]


def _nonzero(c: Call) -> List[Layer]:
    return [("NonZero", {}, [c.ti(0)], c.y)]


def _one_hot(c: Call) -> List[Layer]:
    return [("OneHot", {}, [c.ti(0), {"shape": [], "dtype": "int64", "const": True},
                            {"shape": [2], "dtype": c.y[0]["dtype"], "const": True}], c.y)]


def _nms(c: Call) -> List[Layer]:
    boxes, scores = c.ti(0), c.ti(1)
    b = dict(boxes, shape=[1] + list(boxes["shape"])) if boxes else None
    s = dict(scores, shape=[1, 1] + list(scores["shape"])) if scores else None
    return [("NonMaxSuppression", {}, [b, s], c.y)]


def _roi_align(c: Call) -> List[Layer]:
    x, rois = c.ti(0), c.ti(1)
    r = dict(rois, shape=[rois["shape"][0], 4]) if rois else None
    n = {"shape": [rois["shape"][0] if rois else 0], "dtype": "int64"}
    return [("RoiAlign", {"output_height": int(c.arg(3, 1)), "output_width": int(c.arg(4, 1)),
                          "sampling_ratio": int(c.arg(5, 0))}, [x, r, n], c.y)]


def _rnn(op: str) -> Callable[[Call], List[Layer]]:
    def f(c: Call) -> List[Layer]:
        x = c.ti(0)
        params = [c.t(p) for p in (c.arg(2) or [])]
        hidden = c.outs[1]["shape"][-1] if len(c.outs) > 1 and c.outs[1] else 0
        gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        layers_n = int(c.arg(4, 1))
        bidir = bool(c.arg(7, False))
        batch_first = bool(c.arg(8, False))
        xs = list(x["shape"]) if x else []
        if batch_first and len(xs) == 3:
            xs = [xs[1], xs[0], xs[2]]
        dirs = 2 if bidir else 1
        out: List[Layer] = []
        in_size = xs[-1] if xs else 0
        seq, batch = (xs[0], xs[1]) if len(xs) == 3 else (xs[0] if xs else 1, 1)
        dt = x["dtype"] if x else "float32"
        for layer in range(layers_n):
            w = {"shape": [dirs, gates * hidden, in_size], "dtype": dt, "const": True}
            r = {"shape": [dirs, gates * hidden, hidden], "dtype": dt, "const": True}
            bias = {"shape": [dirs, 2 * gates * hidden], "dtype": dt, "const": True} if len(params) > 2 * dirs * layers_n else None
            xi = {"shape": [seq, batch, in_size], "dtype": dt}
            y = {"shape": [seq, dirs, batch, hidden], "dtype": dt}
            attrs = {"hidden_size": hidden, "direction": "bidirectional" if bidir else "forward"}
            out.append((op, attrs, [xi, w, r, bias], [y]))
            in_size = dirs * hidden
        return out
    return f


def _mkldnn_rnn_layer(c: Call) -> List[Layer]:
    """One direction of one layer of a CPU LSTM/GRU/RNN (oneDNN kernel)."""
    x, w_ih, w_hh = c.ti(0), c.ti(1), c.ti(2)
    mode = int(c.kw("mode", 2))
    op = {0: "RNN", 1: "RNN", 2: "LSTM", 3: "GRU"}.get(mode, "LSTM")
    hidden = int(c.kw("hidden_size", 0))
    xs = list(x["shape"]) if x else []
    if c.kw("batch_first", False) and len(xs) == 3:
        xs = [xs[1], xs[0], xs[2]]
    seq, batch = (xs[0], xs[1]) if len(xs) == 3 else (xs[0] if xs else 1, 1)
    dt = x["dtype"] if x else "float32"
    w = dict(w_ih, shape=[1] + list(w_ih["shape"])) if w_ih else None
    r = dict(w_hh, shape=[1] + list(w_hh["shape"])) if w_hh else None
    gates = w_ih["shape"][0] if w_ih else 0
    bias = ({"shape": [1, 2 * gates], "dtype": dt, "const": True}
            if c.kw("has_biases", True) else None)
    attrs: Dict[str, Any] = {"hidden_size": hidden,
                             "direction": "reverse" if c.kw("reverse", False) else "forward"}
    if op == "RNN":
        attrs["activations"] = ["Relu" if mode == 0 else "Tanh"]
    xi = {"shape": [seq, batch, xs[-1] if xs else 0], "dtype": dt}
    y = {"shape": [seq, 1, batch, hidden], "dtype": dt}
    return [(op, attrs, [xi, w, r, bias], [y])]


# --- losses and training-mode ops ------------------------------------------------

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _nll_loss(c: Call) -> List[Layer]:
    """nll_loss_forward(self, target, weight, reduction, ignore_index)."""
    attrs: Dict[str, Any] = {"reduction": _REDUCTIONS.get(int(c.arg(3, 1)), "mean")}
    if c.arg(4) is not None:
        attrs["ignore_index"] = int(c.arg(4))
    return [("NegativeLogLikelihoodLoss", attrs, [c.ti(0), c.ti(1), c.ti(2)], c.y)]


def _mse_loss(c: Call) -> List[Layer]:
    """mse_loss(self, target, reduction): the difference, its square and,
    unless reduction is none, their mean or sum (MSE is no ONNX operator)."""
    x, t = c.ti(0), c.ti(1)
    if x is None:
        return []
    d = dict(x)
    d.pop("name", None)
    d.pop("const", None)
    layers: List[Layer] = [("Sub", {}, [x, t], [d]), ("Mul", {}, [d, d], [d])]
    reduction = _REDUCTIONS.get(int(c.arg(2, 1)), "mean")
    if reduction != "none":
        op = "ReduceMean" if reduction == "mean" else "ReduceSum"
        layers.append((op, {"keepdims": 0}, [d, {"shape": [_rank(x)], "dtype": "int64", "const": True}], c.y))
    return layers


def _mse_loss_backward(c: Call) -> List[Layer]:
    """mse_loss_backward(grad_output, self, target, reduction):
    2 (x - t) / n · grad, as a subtraction, a scaling and a product."""
    g, x, t = c.ti(0), c.ti(1), c.ti(2)
    if x is None:
        return []
    scale = {"shape": [], "dtype": x["dtype"], "const": True}
    return [("Sub", {}, [x, t], c.y), ("Mul", {}, [c.y[0], scale], c.y), ("Mul", {}, [c.y[0], g], c.y)]


def _native_dropout(c: Call) -> List[Layer]:
    """native_dropout(input, p, train): Dropout in training mode, its mask
    the second output."""
    x = c.ti(0)
    dt = x["dtype"] if x else "float32"
    train = c.arg(2)
    ins: List[Optional[Tensor]] = [x, {"shape": [], "dtype": dt, "const": True},
                                   {"shape": [], "dtype": "bool", "const": True}]
    if train is False:
        return [("Identity", {}, [x], c.y)]
    return [("Dropout", {}, ins, c.outs[:2])]


def _dropout_backward(c: Call) -> List[Layer]:
    """native_dropout_backward(grad_output, mask, scale): grad · mask · scale."""
    g, mask = c.ti(0), c.ti(1)
    dt = g["dtype"] if g else "float32"
    return [("Mul", {}, [g, mask], c.y), ("Mul", {}, [c.y[0], {"shape": [], "dtype": dt, "const": True}], c.y)]


def _view_backward(c: Call) -> List[Layer]:
    """select_backward, slice_backward, diagonal_backward(grad_output,
    input_sizes, ...): the gradient written into zeros of the input's shape,
    as ONNX pads a tensor (select's gradient gets its dimension back first)."""
    g = c.ti(0)
    y = c.y[0]
    if g is None or y is None:
        return []
    if c.name == "select_backward" and _rank(g) < _rank(y):
        dim = _axis(c.arg(2, 0), _rank(y))
        g = dict(g, shape=list(g["shape"][:dim]) + [1] + list(g["shape"][dim:]))
    if _rank(g) != _rank(y):  # diagonal: not a padding, a scatter into zeros
        idx = {"shape": list(g["shape"]) + [_rank(y)], "dtype": "int64", "const": True}
        return [("ScatterND", {}, [dict(y, const=True), idx, g], c.y)]
    return [("Pad", {"mode": "constant"}, [g, {"shape": [2 * _rank(g)], "dtype": "int64", "const": True}], c.y)]


def _unfold_backward(c: Call) -> List[Layer]:
    """unfold_backward(grad_in, input_sizes, dim, size, step): overlapping
    windows added back into the input's shape."""
    g, y = c.ti(0), c.y[0]
    if g is None or y is None:
        return []
    return [("ScatterElements", {"axis": 0, "reduction": "add"},
             [dict(y, const=True), {"shape": g["shape"], "dtype": "int64", "const": True}, g], c.y)]


#: aten op name (the overload packet's name) -> mapper
MAPPERS: Dict[str, Callable[[Call], List[Layer]]] = {}
for _k, _v in _UNARY.items():
    MAPPERS[_k] = _unary(_v)
for _k, _v in _BINARY.items():
    MAPPERS[_k] = _binary(_v)
MAPPERS.update({
    "ne": _ne, "ne_": _ne, "where": _where, "masked_fill": _masked_fill,
    "masked_fill_": _masked_fill, "addcmul": _addcmul, "addcdiv": _addcmul, "lerp": _lerp,
    "rsqrt": _rsqrt, "rsqrt_": _rsqrt, "log2": _log_n, "log10": _log_n,
    "gelu": _gelu, "gelu_": _gelu,
    "clone": _copy, "_to_copy": _copy, "copy_": _copy, "copy": _copy, "contiguous": _copy,
    "to": _copy, "_copy_from_and_resize": _copy, "_copy_from": _copy,
    "convolution": _convolution, "_convolution": _convolution, "conv1d": _convolution,
    "conv2d": _convolution, "conv3d": _convolution, "conv_transpose1d": _convolution,
    "conv_transpose2d": _convolution, "conv_transpose3d": _convolution,
    "mkldnn_convolution": _convolution, "convolution_overrideable": _convolution,
    "cudnn_convolution": _convolution,
    "addmm": _addmm, "mm": _mm, "bmm": _mm, "matmul": _mm, "dot": _mm, "mv": _mm,
    "baddbmm": _baddbmm, "linear": _linear, "einsum": _einsum,
    "scaled_dot_product_attention": _attention,
    "_scaled_dot_product_attention_math": _attention,
    "_scaled_dot_product_flash_attention_for_cpu": _attention,
    "_scaled_dot_product_flash_attention": _attention,
    "_scaled_dot_product_efficient_attention": _attention,
    "_scaled_dot_product_cudnn_attention": _attention,
    "_scaled_dot_product_fused_attention_overrideable": _attention,
    "native_layer_norm": _layer_norm, "layer_norm": _layer_norm,
    "_fused_rms_norm": _rms_norm, "rms_norm": _rms_norm,
    "native_batch_norm": _batch_norm, "_native_batch_norm_legit_no_training": _batch_norm,
    "_native_batch_norm_legit": _batch_norm, "batch_norm": _batch_norm,
    "cudnn_batch_norm": _batch_norm, "miopen_batch_norm": _batch_norm,
    "native_group_norm": _group_norm,
    "_softmax": _softmax("Softmax"), "softmax": _softmax("Softmax"),
    "_safe_softmax": _softmax("Softmax"),
    "_log_softmax": _softmax("LogSoftmax"), "log_softmax": _softmax("LogSoftmax"),
    "max_pool1d": _max_pool, "max_pool2d": _max_pool, "max_pool3d": _max_pool,
    "max_pool2d_with_indices": _max_pool, "max_pool3d_with_indices": _max_pool,
    "max_pool1d_with_indices": _max_pool,
    "avg_pool1d": _avg_pool, "avg_pool2d": _avg_pool, "avg_pool3d": _avg_pool,
    "_adaptive_avg_pool2d": _adaptive_pool("Average"), "adaptive_avg_pool1d": _adaptive_pool("Average"),
    "_adaptive_avg_pool3d": _adaptive_pool("Average"), "adaptive_avg_pool2d": _adaptive_pool("Average"),
    "adaptive_max_pool2d": _adaptive_pool("Max"), "adaptive_max_pool1d": _adaptive_pool("Max"),
    "adaptive_max_pool3d": _adaptive_pool("Max"),
    "sum": _reduce("ReduceSum"), "nansum": _reduce("ReduceSum"), "mean": _reduce("ReduceMean"),
    "prod": _reduce("ReduceProd"), "amax": _reduce("ReduceMax"), "amin": _reduce("ReduceMin"),
    "max": _reduce("ReduceMax"), "min": _reduce("ReduceMin"), "any": _reduce("ReduceMax"),
    "all": _reduce("ReduceMin"), "logsumexp": _reduce("ReduceLogSumExp"),
    "norm": _reduce("ReduceL2"), "linalg_vector_norm": _reduce("ReduceL2"),
    "var": _reduce("ReduceMean"), "std": _reduce("ReduceMean"), "var_mean": _reduce("ReduceMean"),
    "std_mean": _reduce("ReduceMean"), "argmax": _reduce("ArgMax"), "argmin": _reduce("ArgMin"),
    "count_nonzero": _reduce("ReduceSum"),
    "cumsum": _cumsum, "cumsum_": _cumsum, "topk": _topk, "sort": _sort, "argsort": _sort,
    "nonzero": _nonzero, "index_fill": _index_fill, "index_fill_": _index_fill,
    "_unique": _unique, "_unique2": _unique, "unique_dim": _unique,
    "unique_consecutive": _unique, "one_hot": _one_hot,
    "cat": _cat, "concat": _cat, "stack": _cat,
    "embedding": _gather("Gather"), "index_select": _gather("Gather"), "gather": _gather("GatherElements"),
    "index": _gather("Gather"),
    "scatter": _scatter, "scatter_": _scatter, "scatter_add": _scatter, "scatter_add_": _scatter,
    "scatter_reduce": _scatter, "scatter_reduce_": _scatter, "index_put": _scatter,
    "index_put_": _scatter, "_index_put_impl_": _scatter, "slice_scatter": _scatter,
    "select_scatter": _scatter, "diagonal_scatter": _scatter, "as_strided_scatter": _scatter,
    "masked_scatter": _scatter, "masked_scatter_": _scatter,
    "constant_pad_nd": _pad, "pad": _pad, "reflection_pad1d": _pad, "reflection_pad2d": _pad,
    "reflection_pad3d": _pad, "replication_pad1d": _pad, "replication_pad2d": _pad,
    "replication_pad3d": _pad,
    "repeat": _repeat, "tril": _trilu, "triu": _trilu, "tril_": _trilu, "triu_": _trilu,
    "upsample_nearest1d": _resize, "upsample_nearest2d": _resize, "upsample_nearest3d": _resize,
    "_upsample_nearest_exact1d": _resize, "_upsample_nearest_exact2d": _resize,
    "_upsample_nearest_exact3d": _resize,
    "upsample_linear1d": _resize, "upsample_bilinear2d": _resize, "upsample_trilinear3d": _resize,
    "_upsample_bilinear2d_aa": _resize, "upsample_bicubic2d": _resize, "_upsample_bicubic2d_aa": _resize,
    "flip": _flip, "roll": _flip,
    "nms": _nms, "roi_align": _roi_align,
    "nll_loss_forward": _nll_loss, "nll_loss2d_forward": _nll_loss, "mse_loss": _mse_loss,
    "mse_loss_backward": _mse_loss_backward, "native_dropout": _native_dropout,
    "native_dropout_backward": _dropout_backward, "select_backward": _view_backward,
    "slice_backward": _view_backward, "diagonal_backward": _view_backward,
    "unfold_backward": _unfold_backward,
    "_batch_norm_with_update": _batch_norm, "_batch_norm_no_update": _batch_norm,
    "mkldnn_rnn_layer": _mkldnn_rnn_layer, "lstm": _rnn("LSTM"), "gru": _rnn("GRU"), "rnn_tanh": _rnn("RNN"), "rnn_relu": _rnn("RNN"),
})
