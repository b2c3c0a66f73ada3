"""`c3.Report`: the result of an estimate, with chainer_computational_cost's
`show_report` and `show_summary_report`."""

from __future__ import annotations

import copy
import json
import sys
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from . import _c3

# chainer_computational_cost's column names, and c3's for the same thing.
_COLUMN_ALIASES = {
    "type": "op",
    "input_shapes": "inputs",
    "input_shape": "inputs",
    "output_shapes": "outputs",
    "output_shape": "outputs",
    "traffic": "mrw",
}

_MODES = ("table", "md", "csv")
_UNITS = {None: "none", "K": "K", "M": "M", "G": "G", "T": "T", "auto": "auto", "none": "none"}


class Report:
    """Costs of one forward pass, as ``c3 estimate --format json`` gives them.

    Attributes:
        layers: one dict per layer in order (``name``, ``op``, ``flops``,
            ``iops``, ``mread``, ``mwrite``, ``mrw``, ``runs``, ``inputs``,
            ``outputs``, ``attrs`` (the attributes the rule shows, the
            original tool's ``params``), ``params`` (elements of the weight
            tensors the layer reads), ``weight_bytes``, ``live_bytes``
            (activation bytes live while it runs); roofline keys with a
            device), exact ints, bytes in bytes.
        summary: one dict per operator type (``op``, ``layers``, the figures,
            ``params`` and ``weight_bytes`` over its distinct weights).
        total: the figures summed over the layers (``flops``, ``iops``,
            ``mread``, ``mwrite``, ``mrw``, ``layers``; roofline times), and
            the model's ``params`` and ``weight_bytes`` (each distinct
            weight once), ``peak_activation_bytes`` and ``peak_at`` (the
            layer where it occurs).
        unsupported: layers no rule counts (``name``, ``op``, ``reason``):
            never counted as zero silently.
        meta: where the report comes from and the options it was made with.
    """

    def __init__(
        self,
        data: Dict[str, Any],
        meta: Dict[str, Any],
        source: Tuple[Any, str, str, Dict[str, Any]],
    ) -> None:
        self._data = data
        self._source = source
        self.meta: Dict[str, Any] = meta
        self.layers: List[Dict[str, Any]] = data.get("layers", [])
        self.summary: List[Dict[str, Any]] = data.get("summary", [])
        self.total: Dict[str, Any] = data.get("total", {})
        self.unsupported: List[Dict[str, Any]] = data.get("unsupported", [])

    @property
    def params(self) -> int:
        """Elements of the model's distinct weight tensors (``total["params"]``)."""
        return int(self.total.get("params", 0))

    @property
    def buffers(self) -> int:
        """Elements of the model's buffers (state such as BatchNorm's running
        statistics, as ``c3.torch`` marks them), apart from ``params``
        (``total["buffers"]``)."""
        return int(self.total.get("buffers", 0))

    @property
    def peak_activation_bytes(self) -> int:
        """The most activation bytes live at once (``total["peak_activation_bytes"]``)."""
        return int(self.total.get("peak_activation_bytes", 0))

    def __repr__(self) -> str:
        t = self.total
        return (
            f"<c3.Report {len(self.layers)} layers, {t.get('flops', 0)} FLOPs, "
            f"{t.get('mrw', 0)} bytes read+written, {len(self.unsupported)} unsupported>"
        )

    def to_dict(self) -> Dict[str, Any]:
        """The whole result (a copy), as ``c3 estimate --format json``."""
        return copy.deepcopy(self._data)

    def to_json(self, indent: Optional[int] = None) -> str:
        """The whole result as JSON, as ``c3 estimate --format json``."""
        return json.dumps(self._data, indent=indent)

    def _render(
        self, parts: str, unit: Optional[str], mode: str, n_digits: int,
        columns: Optional[Sequence[str]], depth: Optional[int] = None,
    ) -> str:
        if mode not in _MODES and mode != "json":
            raise _c3.UsageError(f"mode {mode!r}: expected one of {', '.join(_MODES)}")
        if unit not in _UNITS:
            raise _c3.UsageError(f"unit {unit!r}: expected None, 'K', 'M', 'G', 'T' or 'auto'")
        cols = "default" if columns is None else ",".join(
            _COLUMN_ALIASES.get(c, c) for c in columns
        )
        payload, kind, name, options = self._source
        options = dict(options, strict=False)
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int)):
            raise TypeError(f"depth: an int from 1 to 64, not {type(depth).__name__}")
        return _c3.estimate(
            payload, kind, name, format=mode, unit=_UNITS[unit], digits=int(n_digits),
            columns=cols, parts=parts, depth=depth, **options,
        )

    def show_report(
        self,
        unit: Optional[str] = None,
        mode: str = "table",
        n_digits: int = 3,
        columns: Optional[Sequence[str]] = None,
        file: Optional[TextIO] = None,
        depth: Optional[int] = None,
    ) -> None:
        """Prints the per-layer report, as chainer_computational_cost's ``show_report``.

        Args:
            unit: ``None`` prints exact integers; ``'K'``, ``'M'``, ``'G'``,
                ``'T'`` scale FLOPs by powers of 1000 and bytes by powers of
                1024 (KiB, MiB...); ``'auto'`` picks one per column.
            mode: ``'table'`` (a boxed text table), ``'md'`` (Markdown) or
                ``'csv'``.
            n_digits: digits after the decimal point (0 to 10).
            columns: the columns, from ``name, op, flops, mread, mwrite, mrw,
                iops, runs, flops%, mread%, mwrite%, mrw%, inputs, outputs,
                attrs, params, weights, live`` (``type``, ``input_shapes``,
                ``output_shapes`` and ``traffic`` are accepted for the
                original's names; its ``params`` column, the attributes, is
                ``attrs`` here); default name, op, flops, mread, mwrite, mrw,
                params.
            file: where to print (``sys.stdout`` by default).
            depth: add the module tree, layers grouped by name this many
                levels deep (``--depth``; in ``'csv'`` mode, the tree alone).
        """
        out = sys.stdout if file is None else file
        out.write(self._render("layers", unit, mode, n_digits, columns, depth))

    def tree(self, depth: int = 2) -> List[Dict[str, Any]]:
        """The module tree: layers grouped by their names' leading parts (an
        exported path split at ``/``, a module path at ``/`` and ``.``), ``depth`` levels deep,
        depth first; each node ``{"path", "level", "layers", "flops",
        "mread", "mwrite"}``, the top level adding up to ``total``."""
        text = self._render("both", None, "json", 3, None, depth)
        return list(json.loads(text).get("tree", []))

    def show_summary_report(
        self,
        unit: Optional[str] = None,
        mode: str = "table",
        n_digits: int = 3,
        columns: Optional[Sequence[str]] = None,
        file: Optional[TextIO] = None,
    ) -> None:
        """Prints the per-operator-type summary, as chainer_computational_cost's
        ``show_summary_report``; the arguments are those of :meth:`show_report`."""
        out = sys.stdout if file is None else file
        out.write(self._render("summary", unit, mode, n_digits, columns))

    def to_pandas(self, part: str = "layers") -> Any:
        """The layers (or, with ``part="summary"``, the summary; ``"unsupported"``)
        as a ``pandas.DataFrame``. Needs pandas."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the machine
            raise ImportError("Report.to_pandas needs pandas: pip install pandas") from e
        rows = {"layers": self.layers, "summary": self.summary, "unsupported": self.unsupported}
        if part not in rows:
            raise ValueError(f"part {part!r}: expected layers, summary or unsupported")
        return pd.DataFrame(rows[part])
