#!/usr/bin/env python3
"""Make the ONNX shape-inference conformance fixtures for c3.

Where the fixtures come from
----------------------------
Every case is one node test case of the ``onnx`` Python package, as returned
by ``onnx.backend.test.case.node.collect_testcases()`` of onnx 1.23.2 (the
version is written into the manifest; the script refuses another version
unless ``--allow-other-version`` is given).  These are the same cases the
package ships as ``onnx/backend/test/data/node/*``, generated in memory: each
has a small ModelProto (usually one node; the ``*_expanded*`` cases hold the
op's function body instead) and one data set of input and expected output
values.

What is written
---------------
For each case, ``<case_name>.onnx`` in ``--out`` (default
``tests/fixtures/onnx-node`` in the repo), made from the case's model by:

1. clearing the shape of every graph output (the element type is kept; for
   sequence / optional outputs the nested tensor shapes are cleared too) and
   dropping every top-level ``graph.value_info``, so the expected shapes are
   not in the model any more;
2. turning every tensor graph input whose data is an integer tensor
   (int8..int64, uint8..uint64; not bool) of at most 64 elements into an
   initializer holding that data, and removing it from ``graph.input``.  This
   gives shape inference the constant shapes, axes, pads, indices... it needs.
   IR 4 is the first to allow initializers that are not graph inputs, so a
   model below IR 4 that gets such an initializer is raised to IR 4.  All
   other inputs (float, bool, string, large integer tensors, sequences,
   optionals) stay graph inputs with their declared types and shapes.

The written models are meant for shape inference, not for
``onnx.checker.check_model``: the checker wants a ``shape`` field on every
top-level tensor output, and the tensor outputs here have none (an empty
``shape`` would claim a scalar).

The truth goes in one ``manifest.json`` beside the models::

    {"cases": {"test_abs": {"domain": "", "onnx_ok": true, "op": "Abs",
                            "opset": {"": 13},
                            "outputs": [{"dtype": "float32", "name": "y",
                                         "shape": [3, 4, 5]}],
                            "tensor_outputs_only": true}, ...},
     "onnx_version": "1.23.2"}

(keys sorted, one case per line).  ``op``/``domain`` are those of the
graph's first node, ``opset`` the model's opset_import.  ``outputs`` are the
truth, taken from the case's expected output values (not from the model):
a tensor output is ``{"name", "dtype", "shape"}`` with the ONNX element type
written in lower case (float32, float64, float16, bfloat16, int8..uint64,
bool, string, float8e4m3fn, int4, ...).  A sequence output is
``{"name", "kind": "sequence", "dtype", "elements": [{"dtype", "shape"}, ...]}``
(``dtype`` is the declared element type, so it is there even for an empty
sequence); an optional output is ``{"name", "kind": "optional", "element":
<tensor or sequence description without name, or null when empty>}``.
A case with any non-tensor output has ``"tensor_outputs_only": false``.

``onnx_ok`` says whether ``onnx.shape_inference.infer_shapes(model,
strict_mode=False, data_prop=True)`` on the written model recovers every
output exactly: the same element type and the same rank with every dim a
known, equal value.  For a sequence it asks for the element type, and for
the shape when all elements share one; when they do not, any dim ONNX does
state must hold for every element.  An inference error counts as not ok.

How to run
----------
From the repository root::

    python3 -m venv /tmp/venv-onnx
    /tmp/venv-onnx/bin/pip install onnx==1.23.2 numpy
    /tmp/venv-onnx/bin/python scripts/onnx_conformance.py

Stale ``test_*.onnx`` files in the output folder are removed.  It prints the
counts (cases, tensor-only cases, onnx_ok) and the ops ONNX gets wrong most.

``--light-out DIR`` also copies the model-zoo "light" models that the onnx
package ships (``onnx/backend/test/data/light/light_*.onnx``, under 10 MB
each) into DIR, e.g. ``examples/onnx``.
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

EXPECTED_ONNX_VERSION = "1.23.2"
MAX_CONST_ELEMENTS = 64
LIGHT_MAX_BYTES = 10 * 1024 * 1024

INTEGER_TYPES = {
    TensorProto.INT8,
    TensorProto.INT16,
    TensorProto.INT32,
    TensorProto.INT64,
    TensorProto.UINT8,
    TensorProto.UINT16,
    TensorProto.UINT32,
    TensorProto.UINT64,
}


def dtype_name(elem_type: int) -> str:
    """ONNX element type as a lower-case name (FLOAT -> float32, DOUBLE -> float64)."""
    name = TensorProto.DataType.Name(elem_type)
    return {"FLOAT": "float32", "DOUBLE": "float64"}.get(name, name.lower())


def elem_type_of(value) -> int:
    """ONNX element type of a test value (ndarray, numpy scalar or TensorProto)."""
    if isinstance(value, TensorProto):
        return value.data_type
    arr = np.asarray(value)
    if arr.dtype.kind in "OUS":
        return TensorProto.STRING
    return onnx.helper.np_dtype_to_tensor_dtype(arr.dtype)


def shape_of(value) -> list[int]:
    if isinstance(value, TensorProto):
        return [int(d) for d in value.dims]
    return [int(d) for d in np.asarray(value).shape]


def clear_shapes(type_proto: onnx.TypeProto) -> None:
    """Drop every tensor shape in a type, nested ones included; keep elem types."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        type_proto.tensor_type.ClearField("shape")
    elif kind == "sparse_tensor_type":
        type_proto.sparse_tensor_type.ClearField("shape")
    elif kind == "sequence_type":
        clear_shapes(type_proto.sequence_type.elem_type)
    elif kind == "optional_type":
        clear_shapes(type_proto.optional_type.elem_type)
    elif kind == "map_type":
        clear_shapes(type_proto.map_type.value_type)


def tensor_desc(value) -> dict:
    return {"dtype": dtype_name(elem_type_of(value)), "shape": shape_of(value)}


def describe(value, declared: onnx.TypeProto) -> dict:
    """Truth for one output value, shaped by its declared (original) type."""
    kind = declared.WhichOneof("value")
    if kind == "tensor_type":
        return tensor_desc(value)
    if kind == "sequence_type":
        elem = declared.sequence_type.elem_type
        elements = [describe(v, elem) for v in value]
        elem_type = elem.tensor_type.elem_type
        dtype = dtype_name(elem_type) if elem_type else elements[0]["dtype"]
        return {"kind": "sequence", "dtype": dtype, "elements": elements}
    if kind == "optional_type":
        elem = declared.optional_type.elem_type
        inner = None if value is None else describe(value, elem)
        return {"kind": "optional", "element": inner}
    raise ValueError(f"unsupported output type {kind!r}")


def tensor_ok(inferred: onnx.TypeProto, dtype: str, shape: list[int]) -> bool:
    if inferred.WhichOneof("value") != "tensor_type":
        return False
    tt = inferred.tensor_type
    if tt.elem_type == 0 or dtype_name(tt.elem_type) != dtype:
        return False
    if not tt.HasField("shape") or len(tt.shape.dim) != len(shape):
        return False
    return all(
        d.HasField("dim_value") and d.dim_value == want
        for d, want in zip(tt.shape.dim, shape)
    )


def type_ok(inferred: onnx.TypeProto, truth: dict) -> bool:
    """Does the inferred type state the truth exactly (see module docstring)?"""
    kind = truth.get("kind", "tensor")
    if kind == "tensor":
        return tensor_ok(inferred, truth["dtype"], truth["shape"])
    if kind == "sequence":
        if inferred.WhichOneof("value") != "sequence_type":
            return False
        elem = inferred.sequence_type.elem_type
        if elem.WhichOneof("value") != "tensor_type":
            return False
        tt = elem.tensor_type
        if tt.elem_type == 0 or dtype_name(tt.elem_type) != truth["dtype"]:
            return False
        shapes = [e["shape"] for e in truth["elements"]]
        if shapes and all(s == shapes[0] for s in shapes):
            return tensor_ok(elem, truth["dtype"], shapes[0])
        if not tt.HasField("shape"):
            return True
        # Shapes differ (or no element): whatever ONNX states must hold for all.
        for s in shapes:
            if len(s) != len(tt.shape.dim):
                return False
            for d, want in zip(tt.shape.dim, s):
                if d.HasField("dim_value") and d.dim_value != want:
                    return False
        return True
    if kind == "optional":
        if inferred.WhichOneof("value") != "optional_type":
            return False
        if truth["element"] is None:
            return True
        return type_ok(inferred.optional_type.elem_type, truth["element"])
    return False


def to_initializer(value, name: str) -> TensorProto | None:
    """The value as an initializer if it is a small integer tensor, else None."""
    if isinstance(value, TensorProto):
        if value.data_type not in INTEGER_TYPES:
            return None
        if int(np.prod(value.dims, dtype=np.int64)) > MAX_CONST_ELEMENTS:
            return None
        init = TensorProto()
        init.CopyFrom(value)
        init.name = name
        return init
    if not isinstance(value, (np.ndarray, np.generic)):
        return None
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" or arr.size > MAX_CONST_ELEMENTS:
        return None
    if elem_type_of(arr) not in INTEGER_TYPES:
        return None
    return numpy_helper.from_array(arr, name)


def make_fixture(case) -> tuple[onnx.ModelProto, dict, list[str]]:
    """Fixture model, manifest entry and notes (odd things seen) for one case."""
    notes = []
    inputs, outputs = case.data_sets[0]
    model = copy.deepcopy(case.model)
    graph = model.graph
    declared_outputs = [copy.deepcopy(o.type) for o in graph.output]

    # 1. Hide the answers.
    for out in graph.output:
        clear_shapes(out.type)
    graph.ClearField("value_info")

    # 2. Small integer inputs become initializers.
    kept = []
    for vi, value in zip(graph.input, inputs):
        init = None
        if vi.type.WhichOneof("value") == "tensor_type":
            init = to_initializer(value, vi.name)
        if init is None:
            kept.append(copy.deepcopy(vi))
            continue
        if init.data_type != vi.type.tensor_type.elem_type:
            notes.append(
                f"input {vi.name}: data {dtype_name(init.data_type)} vs declared "
                f"{dtype_name(vi.type.tensor_type.elem_type)}; kept as input"
            )
            kept.append(copy.deepcopy(vi))
            continue
        graph.initializer.append(init)
    kept += [copy.deepcopy(vi) for vi in graph.input[len(inputs):]]
    moved = len(graph.input) - len(kept)
    del graph.input[:]
    graph.input.extend(kept)
    if moved and model.ir_version < 4:
        model.ir_version = 4
        notes.append("ir_version raised to 4")

    # 3. The truth, from the expected outputs.
    truth = []
    for vi, declared, value in zip(graph.output, declared_outputs, outputs):
        desc = {"name": vi.name}
        desc.update(describe(value, declared))
        truth.append(desc)
        if declared.WhichOneof("value") == "tensor_type":
            decl = declared.tensor_type.elem_type
            if decl and dtype_name(decl) != desc["dtype"]:
                notes.append(
                    f"output {vi.name}: data {desc['dtype']} vs declared {dtype_name(decl)}"
                )
    if len(outputs) != len(graph.output):
        notes.append(f"{len(outputs)} output values for {len(graph.output)} outputs")

    # 4. Does ONNX itself get it right?
    onnx_ok = True
    try:
        inferred = onnx.shape_inference.infer_shapes(
            model, strict_mode=False, data_prop=True
        )
        by_name = {o.name: o.type for o in inferred.graph.output}
        for desc in truth:
            if not type_ok(by_name[desc["name"]], desc):
                onnx_ok = False
    except Exception as exc:  # noqa: BLE001 - any failure means "not ok"
        onnx_ok = False
        notes.append(f"infer_shapes raised {type(exc).__name__}: {exc}".splitlines()[0])

    first = graph.node[0]
    entry = {
        "op": first.op_type,
        "domain": first.domain,
        "opset": {o.domain: o.version for o in model.opset_import},
        "outputs": truth,
        "tensor_outputs_only": all("kind" not in d for d in truth),
        "onnx_ok": onnx_ok,
    }
    return model, entry, notes


def write_manifest(path: str, version: str, cases: dict) -> None:
    lines = ["{", '  "cases": {']
    names = sorted(cases)
    for i, name in enumerate(names):
        sep = "," if i + 1 < len(names) else ""
        body = json.dumps(cases[name], sort_keys=True)
        lines.append(f"    {json.dumps(name)}: {body}{sep}")
    lines += ["  },", f'  "onnx_version": {json.dumps(version)}', "}"]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def copy_light_models(dest: str) -> None:
    src = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    os.makedirs(dest, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if not (name.startswith("light_") and name.endswith(".onnx")):
            continue
        path = os.path.join(src, name)
        size = os.path.getsize(path)
        if size > LIGHT_MAX_BYTES:
            print(f"light: skipped {name} ({size} bytes)")
            continue
        shutil.copyfile(path, os.path.join(dest, name))
        print(f"light: copied {name} ({size} bytes)")


def main() -> int:
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(repo, "tests", "fixtures", "onnx-node"))
    ap.add_argument("--allow-other-version", action="store_true")
    ap.add_argument("--light-out", help="also copy the package's light_*.onnx models here")
    args = ap.parse_args()

    if onnx.__version__ != EXPECTED_ONNX_VERSION and not args.allow_other_version:
        print(
            f"onnx {onnx.__version__} found, fixtures are made with {EXPECTED_ONNX_VERSION}; "
            "pass --allow-other-version to go on anyway",
            file=sys.stderr,
        )
        return 2

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case generators warn about overflow/NaN
        cases = collect_testcases()

    os.makedirs(args.out, exist_ok=True)
    names = {c.name for c in cases}
    if len(names) != len(cases):
        raise SystemExit("case names are not unique")
    for stale in os.listdir(args.out):
        if stale.startswith("test_") and stale.endswith(".onnx") and stale[:-5] not in names:
            os.remove(os.path.join(args.out, stale))

    manifest = {}
    for case in cases:
        model, entry, notes = make_fixture(case)
        for note in notes:
            print(f"note: {case.name}: {note}")
        with open(os.path.join(args.out, case.name + ".onnx"), "wb") as f:
            f.write(model.SerializeToString(deterministic=True))
        manifest[case.name] = entry
    write_manifest(os.path.join(args.out, "manifest.json"), onnx.__version__, manifest)

    tensor_only = sum(e["tensor_outputs_only"] for e in manifest.values())
    ok = sum(e["onnx_ok"] for e in manifest.values())
    print(f"cases: {len(manifest)}  tensor_outputs_only: {tensor_only}  onnx_ok: {ok}")
    bad = collections.Counter(e["op"] for e in manifest.values() if not e["onnx_ok"])
    print("not onnx_ok by first-node op:", ", ".join(f"{op} {n}" for op, n in bad.most_common(30)))

    if args.light_out:
        copy_light_models(args.light_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
