"""The aten operators of a backward pass that are the gradient of an ONNX
operator, for a training trace (``CostHook(training=True)``): ``GRADIENTS``.
The forward mappers they reuse are in ``_aten``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._aten import (
    Call,
    Layer,
    Tensor,
    _adaptive_pool,
    _attention,
    _avg_pool,
    _axis,
    _convolution,
    _max_pool,
    _nll_loss,
    _rank,
)


# --- backward ops that are the gradient of an ONNX operator ------------------------
#
# In a training trace (CostHook(training=True)) such an aten op is written as
# the forward layer's own description with "grads": the positions, among the
# ONNX operator's inputs, of the gradients the aten op computes; c3 costs it
# with the rule's backward formulas. GRADIENTS maps the aten name to
# (the ONNX ops it can be the gradient of, a function of the call giving the
# grads, a function of the call describing the forward layer from the
# backward op's own arguments: used when the forward layer it belongs to is
# of another op, e.g. the softmax of an attention that ran decomposed).


def _mask(i: int, n: int, positions: Sequence[int]) -> Callable[[Call], List[int]]:
    """The grads named by a bool[n] output mask at argument i."""
    def f(c: Call) -> List[int]:
        m = c.arg(i)
        if m is None:
            return list(positions)
        return [p for p, on in zip(positions, list(m)[:n]) if on]
    return f


def _fixed(*positions: int) -> Callable[[Call], List[int]]:
    return lambda c: list(positions)


def _plain(t: Optional[Tensor]) -> Optional[Tensor]:
    """A tensor description without its name: the shape of a forward tensor
    the backward op does not have (rebuilt from a gradient's shape)."""
    if t is None:
        return None
    d = dict(t)
    d.pop("name", None)
    d.pop("const", None)
    return d


def _sub_call(c: Call, name: str, args: Sequence[Any], schema: Sequence[str],
              outs: List[Optional[Tensor]]) -> Call:
    return Call(name, args, {}, schema, c.describe, outs)  # type: ignore[arg-type]


def _g_unary(op: str, x: int = 1, attrs: Optional[Callable[[Call], Dict[str, Any]]] = None) -> Callable[[Call], Optional[Layer]]:
    """An elementwise op's gradient(grad_output, self-or-result, ...): the
    forward input (or output, the same shape) is argument x."""
    def f(c: Call) -> Optional[Layer]:
        xt = c.ti(x)
        return (op, attrs(c) if attrs else {}, [xt], [_plain(xt)])
    return f


def _g_clip(c: Call) -> Optional[Layer]:
    xt = c.ti(1)
    scalar = {"shape": [], "dtype": xt["dtype"] if xt else "float32", "const": True}
    return ("Clip", {}, [xt, scalar, scalar], [_plain(xt)])


def _g_softmax(op: str) -> Callable[[Call], Optional[Layer]]:
    def f(c: Call) -> Optional[Layer]:
        y = c.ti(1)
        return (op, {"axis": _axis(c.arg(2, -1), _rank(y))}, [_plain(y)], [y])
    return f


def _g_conv(c: Call) -> Optional[Layer]:
    """convolution_backward(grad_output, input, weight, bias_sizes, stride,
    padding, dilation, transposed, output_padding, groups, output_mask)."""
    w = c.ti(2)
    sub = _sub_call(c, "convolution", [c.arg(1), c.arg(2), None] + [c.arg(i) for i in range(4, 10)],
                    [], [_plain(c.ti(0))])
    op, attrs, ins, ys = _convolution(sub)[0]
    bias = c.arg(3)
    if bias is not None and len(bias) and w is not None:
        ins = [ins[0], ins[1], {"shape": [int(s) for s in bias], "dtype": w["dtype"], "const": True}]
    return (op, attrs, ins, ys)


def _g_batch_norm(c: Call) -> Optional[Layer]:
    x, w, mean, var = c.ti(1), c.ti(2), c.ti(3), c.ti(4)
    ch = [int(x["shape"][1])] if x and _rank(x) > 1 else [1]
    const = {"shape": ch, "dtype": x["dtype"] if x else "float32", "const": True}
    return ("BatchNormalization", {}, [x, w or const, const, mean or const, var or const], [_plain(x)])


def _g_cudnn_batch_norm(c: Call) -> Optional[Layer]:
    x, w, mean, var = c.ti(0), c.ti(2), c.ti(3), c.ti(4)
    ch = [int(x["shape"][1])] if x and _rank(x) > 1 else [1]
    const = {"shape": ch, "dtype": x["dtype"] if x else "float32", "const": True}
    return ("BatchNormalization", {}, [x, w or const, const, mean or const, var or const], [_plain(x)])


def _g_layer_norm(c: Call) -> Optional[Layer]:
    x = c.ti(1)
    shape = c.arg(2) or []
    return ("LayerNormalization", {"axis": -len(shape)}, [x, c.ti(5), c.ti(6)], [_plain(x)])


def _g_rms_norm(c: Call) -> Optional[Layer]:
    x = c.ti(1)
    shape = c.arg(2) or []
    return ("RMSNormalization", {"axis": -len(shape)}, [x, c.ti(4)], [_plain(x)])


def _g_group_norm(c: Call) -> Optional[Layer]:
    x, w = c.ti(1), c.ti(4)
    return ("GroupNormalization", {"num_groups": int(c.arg(8, 1))}, [x, w, w], [_plain(x)])


def _g_pool(mapper: Callable[[Call], List[Layer]], n_args: int) -> Callable[[Call], Optional[Layer]]:
    """A pooling gradient(grad_output, self, <the forward's arguments>): the
    forward layer from the pooling mapper, its output shaped like grad_output."""
    def f(c: Call) -> Optional[Layer]:
        sub = _sub_call(c, c.name.replace("_backward", ""), [c.arg(i) for i in range(1, 1 + n_args)],
                        [], [_plain(c.ti(0))])
        return mapper(sub)[0]
    return f


def _g_embedding(c: Call) -> Optional[Layer]:
    g = c.ti(0)
    n = int(c.arg(2, 0))
    width = int(g["shape"][-1]) if g and g["shape"] else 1
    table = {"shape": [n, width], "dtype": g["dtype"] if g else "float32", "const": True}
    return ("Gather", {"axis": 0}, [table, c.ti(1)], [_plain(g)])


def _g_attention(q: int, mask: Any, causal: Optional[int]) -> Callable[[Call], Optional[Layer]]:
    """A fused attention's backward: the Attention layer from its query, key,
    value (arguments q, q+1, q+2), mask (an argument's position or keyword
    name) and causal flag."""
    def f(c: Call) -> Optional[Layer]:
        m = c.kw(mask) if isinstance(mask, str) else (c.arg(mask) if mask is not None else None)
        sub = _sub_call(c, "scaled_dot_product_attention",
                        [c.arg(q), c.arg(q + 1), c.arg(q + 2), m,
                         0.0, bool(c.arg(causal)) if causal is not None else False, c.kw("scale")],
                        ["query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale"],
                        [_plain(c.ti(q))])
        return _attention(sub)[0]
    return f


def _g_nll(c: Call) -> Optional[Layer]:
    sub = _sub_call(c, "nll_loss_forward", [c.arg(1), c.arg(2), c.arg(3), c.arg(4), c.arg(5)], [],
                    [{"shape": [], "dtype": c.ti(1)["dtype"] if c.ti(1) else "float32"}])
    return _nll_loss(sub)[0]


def _g_resize(c: Call) -> Optional[Layer]:
    """upsample_*_backward(grad_output, output_size, input_size, ...): the
    forward input has input_size, the output grad_output's shape."""
    g = c.ti(0)
    x = {"shape": [int(s) for s in (c.arg(2) or [])], "dtype": g["dtype"] if g else "float32"}
    mode, coord = ("nearest", "asymmetric") if "nearest" in c.name else ("linear", "half_pixel")
    if "align_corners" in c.schema_args and c.kw("align_corners"):
        coord = "align_corners"
    sizes = {"shape": [_rank(x)], "dtype": "int64", "const": True}
    return ("Resize", {"mode": mode, "coordinate_transformation_mode": coord},
            [x, None, None, sizes], [_plain(g)])


def _g_pad(c: Call) -> Optional[Layer]:
    x = c.ti(1)
    mode = "reflect" if c.name.startswith("reflection") else "edge"
    return ("Pad", {"mode": mode}, [x, {"shape": [2 * _rank(x)], "dtype": "int64", "const": True}], [_plain(c.ti(0))])


def _g_prelu(c: Call) -> Optional[Layer]:
    x = c.ti(1)
    return ("PRelu", {}, [x, c.ti(2)], [_plain(x)])


_ACTIVATION = ("Relu", "ThresholdedRelu")
GRADIENTS: Dict[str, Tuple[Tuple[str, ...], Callable[[Call], List[int]], Callable[[Call], Optional[Layer]]]] = {
    "convolution_backward": (("Conv", "ConvTranspose"), _mask(10, 3, (0, 1, 2)), _g_conv),
    "threshold_backward": (_ACTIVATION, _fixed(0), _g_unary("Relu")),
    "native_batch_norm_backward": (("BatchNormalization",), _mask(9, 3, (0, 1, 2)), _g_batch_norm),
    "batch_norm_backward": (("BatchNormalization",), _mask(9, 3, (0, 1, 2)), _g_batch_norm),
    "cudnn_batch_norm_backward": (("BatchNormalization",), _fixed(0, 1, 2), _g_cudnn_batch_norm),
    "miopen_batch_norm_backward": (("BatchNormalization",), _fixed(0, 1, 2), _g_cudnn_batch_norm),
    "native_layer_norm_backward": (("LayerNormalization",), _mask(7, 3, (0, 1, 2)), _g_layer_norm),
    "_fused_rms_norm_backward": (("RMSNormalization",), _mask(5, 2, (0, 1)), _g_rms_norm),
    "native_group_norm_backward": (("GroupNormalization",), _mask(9, 3, (0, 1, 2)), _g_group_norm),
    "_softmax_backward_data": (("Softmax",), _fixed(0), _g_softmax("Softmax")),
    "_log_softmax_backward_data": (("LogSoftmax",), _fixed(0), _g_softmax("LogSoftmax")),
    "gelu_backward": (("Gelu",), _fixed(0),
                      _g_unary("Gelu", attrs=lambda c: {"approximate": str(c.kw("approximate", "none") or "none")})),
    "silu_backward": (("Swish",), _fixed(0), _g_unary("Swish")),
    "tanh_backward": (("Tanh",), _fixed(0), _g_unary("Tanh")),
    "sigmoid_backward": (("Sigmoid",), _fixed(0), _g_unary("Sigmoid")),
    "hardtanh_backward": (("Clip",), _fixed(0), _g_clip),
    "hardswish_backward": (("HardSwish",), _fixed(0), _g_unary("HardSwish")),
    "hardsigmoid_backward": (("HardSigmoid",), _fixed(0), _g_unary("HardSigmoid")),
    "leaky_relu_backward": (("LeakyRelu",), _fixed(0),
                            _g_unary("LeakyRelu", attrs=lambda c: {"alpha": float(c.arg(2, 0.01))})),
    "elu_backward": (("Elu", "Selu", "Celu"), _fixed(0), _g_unary("Elu", x=5)),
    "softplus_backward": (("Softplus",), _fixed(0), _g_unary("Softplus")),
    "log_sigmoid_backward": (("Softplus",), _fixed(0), _g_unary("Softplus")),
    "mish_backward": (("Mish",), _fixed(0), _g_unary("Mish")),
    "max_pool2d_with_indices_backward": (("MaxPool",), _fixed(0), _g_pool(_max_pool, 6)),
    "max_pool3d_with_indices_backward": (("MaxPool",), _fixed(0), _g_pool(_max_pool, 6)),
    "avg_pool2d_backward": (("AveragePool",), _fixed(0), _g_pool(_avg_pool, 6)),
    "avg_pool3d_backward": (("AveragePool",), _fixed(0), _g_pool(_avg_pool, 6)),
    "_adaptive_avg_pool2d_backward": (("GlobalAveragePool", "AveragePool"), _fixed(0),
                                      _g_pool(_adaptive_pool("Average"), 1)),
    "_adaptive_avg_pool3d_backward": (("GlobalAveragePool", "AveragePool"), _fixed(0),
                                      _g_pool(_adaptive_pool("Average"), 1)),
    "adaptive_max_pool2d_backward": (("GlobalMaxPool", "MaxPool"), _fixed(0), _g_pool(_adaptive_pool("Max"), 1)),
    "adaptive_max_pool3d_backward": (("GlobalMaxPool", "MaxPool"), _fixed(0), _g_pool(_adaptive_pool("Max"), 1)),
    "embedding_dense_backward": (("Gather",), _fixed(0), _g_embedding),
    "_scaled_dot_product_flash_attention_for_cpu_backward": (("Attention",), _fixed(0, 1, 2),
                                                             _g_attention(1, "attn_mask", 7)),
    "_scaled_dot_product_flash_attention_backward": (("Attention",), _fixed(0, 1, 2), _g_attention(1, None, 11)),
    "_scaled_dot_product_efficient_attention_backward": (("Attention",), _mask(10, 4, (0, 1, 2, 3)),
                                                         _g_attention(1, 4, 11)),
    "_scaled_dot_product_cudnn_attention_backward": (("Attention",), _fixed(0, 1, 2), _g_attention(1, 8, 14)),
    "_scaled_dot_product_fused_attention_overrideable_backward": (("Attention",), _mask(5, 4, (0, 1, 2, 3)),
                                                                  _g_attention(1, 4, 13)),
    "nll_loss_backward": (("NegativeLogLikelihoodLoss",), _fixed(0), _g_nll),
    "nll_loss2d_backward": (("NegativeLogLikelihoodLoss",), _fixed(0), _g_nll),
    "upsample_nearest2d_backward": (("Resize",), _fixed(0), _g_resize),
    "upsample_bilinear2d_backward": (("Resize",), _fixed(0), _g_resize),
    "reflection_pad2d_backward": (("Pad",), _fixed(0), _g_pad),
    "replication_pad2d_backward": (("Pad",), _fixed(0), _g_pad),
    "_prelu_kernel_backward": (("PRelu",), _fixed(0, 1), _g_prelu),
}
