#!/usr/bin/env python3
"""ai.onnx.ml graphs as skl2onnx and onnxmltools (LightGBM, XGBoost) write
them, with onnxruntime's shapes (issue 54 item 2).

    scripts/ml_models.py OUT_DIR

Neither converter is needed: each graph is written here node for node the
way the converter lays it out (the attribute names, which label list, the
ZipMap or ArrayFeatureExtractor after the classifier), with trees and
support vectors of a few values, so the fixtures stay a few hundred bytes.
The batch is the symbol N, as the converters declare it; onnxruntime runs
each model on 3 rows, and a test gives c3 `--dim N=3`.

Writes, for each NAME, OUT_DIR/NAME.onnx and OUT_DIR/NAME.shapes.json: the
shape of every tensor a node makes as onnxruntime returns it (the ZipMap
outputs are sequences of maps and have none) and its element type.
"""
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROWS = 3
F = 4


def stump(n_classes, weights_per_leaf):
    """One tree of a root split on feature 0 and two leaves, in the
    TreeEnsembleClassifier attribute layout; each leaf carries a weight for
    each of `weights_per_leaf` class ids."""
    attrs = dict(
        nodes_treeids=[0, 0, 0],
        nodes_nodeids=[0, 1, 2],
        nodes_featureids=[0, 0, 0],
        nodes_values=[0.5, 0.0, 0.0],
        nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        nodes_truenodeids=[1, 0, 0],
        nodes_falsenodeids=[2, 0, 0],
        nodes_hitrates=[1.0, 1.0, 1.0],
        nodes_missing_value_tracks_true=[0, 0, 0],
    )
    ids, nodes, weights = [], [], []
    for leaf in (1, 2):
        for c in range(weights_per_leaf):
            ids.append(c % n_classes)
            nodes.append(leaf)
            weights.append(0.25 * (leaf + c))
    attrs.update(class_treeids=[0] * len(ids), class_nodeids=nodes,
                 class_ids=ids, class_weights=weights)
    return attrs


def classifier_graph(name, op, attrs, zipmap_labels=None):
    """X [N, F] -> op -> label, probabilities (-> ZipMap -> output_probability
    when `zipmap_labels` is a (attribute, values) pair), as the converters
    name them."""
    label_type = (TensorProto.STRING if "classlabels_strings" in attrs
                  else TensorProto.INT64)
    nodes = [helper.make_node(op, ["input"], ["label", "probabilities"],
                              name=op, domain="ai.onnx.ml", **attrs)]
    outputs = [helper.make_tensor_value_info("label", label_type, ["N"])]
    if zipmap_labels:
        key, values = zipmap_labels
        nodes.append(helper.make_node("ZipMap", ["probabilities"], ["output_probability"],
                                      name="ZipMap", domain="ai.onnx.ml", **{key: values}))
        key_type = TensorProto.STRING if key == "classlabels_strings" else TensorProto.INT64
        outputs.append(helper.make_value_info(
            "output_probability",
            helper.make_sequence_type_proto(
                helper.make_map_type_proto(key_type, helper.make_tensor_type_proto(
                    TensorProto.FLOAT, [])))))
    else:
        outputs.append(helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", None]))
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", F])],
        outputs)
    return graph


def models():
    """NAME -> (graph, ai.onnx.ml opset)."""
    out = {}
    # skl2onnx RandomForestClassifier, int labels: classlabels_int64s, ZipMap.
    labels = [0, 1, 2]
    out["rf_int"] = classifier_graph(
        "rf_int", "TreeEnsembleClassifier",
        dict(stump(3, 3), classlabels_int64s=labels, post_transform="NONE"),
        ("classlabels_int64s", labels))
    # The same with string labels.
    names = ["a", "b", "c"]
    out["rf_str"] = classifier_graph(
        "rf_str", "TreeEnsembleClassifier",
        dict(stump(3, 3), classlabels_strings=names, post_transform="NONE"),
        ("classlabels_strings", names))
    # onnxmltools XGBoost binary: one weight per leaf (class id 0), LOGISTIC.
    out["xgb_binary"] = classifier_graph(
        "xgb_binary", "TreeEnsembleClassifier",
        dict(stump(1, 1), classlabels_int64s=[0, 1], post_transform="LOGISTIC",
             base_values=[0.0]))
    # onnxmltools XGBoost multi-class: a weight per class per leaf, SOFTMAX.
    out["xgb_multi"] = classifier_graph(
        "xgb_multi", "TreeEnsembleClassifier",
        dict(stump(4, 4), classlabels_int64s=[0, 1, 2, 3], post_transform="SOFTMAX",
             base_values=[0.5] * 4))
    # onnxmltools LightGBM binary: as XGBoost's, then a ZipMap.
    out["lgbm_binary"] = classifier_graph(
        "lgbm_binary", "TreeEnsembleClassifier",
        dict(stump(1, 1), classlabels_int64s=[0, 1], post_transform="LOGISTIC"),
        ("classlabels_int64s", [0, 1]))
    # skl2onnx SVC(probability=True), 3 classes of one support vector each.
    svc = dict(kernel_type="RBF", kernel_params=[0.25, 0.0, 3.0],
               support_vectors=[0.1 * i for i in range(3 * F)])
    out["svc_proba"] = classifier_graph(
        "svc_proba", "SVMClassifier",
        dict(svc, classlabels_ints=labels, vectors_per_class=[1, 1, 1],
             coefficients=[1.0, -1.0, 0.5, 1.0, -0.5, -1.0], rho=[0.1, 0.2, 0.3],
             prob_a=[-1.0] * 3, prob_b=[0.1] * 3),
        ("classlabels_int64s", labels))
    # SVC(probability=False), binary: two scores per row.
    out["svc_binary"] = classifier_graph(
        "svc_binary", "SVMClassifier",
        dict(kernel_type="RBF", kernel_params=[0.25, 0.0, 3.0],
             support_vectors=[0.1 * i for i in range(2 * F)],
             classlabels_ints=[0, 1], vectors_per_class=[1, 1],
             coefficients=[1.0, -1.0], rho=[0.1]))
    # SVC(probability=False), 4 classes: one score per pair of classes, 6.
    out["svc_votes"] = classifier_graph(
        "svc_votes", "SVMClassifier",
        dict(kernel_type="RBF", kernel_params=[0.25, 0.0, 3.0],
             support_vectors=[0.1 * i for i in range(4 * F)],
             classlabels_strings=["a", "b", "c", "d"], vectors_per_class=[1, 1, 1, 1],
             coefficients=[0.5] * 12, rho=[0.1] * 6))
    # Linear mode (no support vectors): a row of F coefficients per class.
    out["svm_linear"] = classifier_graph(
        "svm_linear", "SVMClassifier",
        dict(kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0], classlabels_ints=labels,
             coefficients=[0.1 * i for i in range(3 * F)], rho=[0.0]))
    # skl2onnx LogisticRegression binary: one coefficient row, two scores.
    out["linear_binary"] = classifier_graph(
        "linear_binary", "LinearClassifier",
        dict(classlabels_ints=[0, 1], coefficients=[0.5] * F, intercepts=[0.1],
             post_transform="LOGISTIC"),
        ("classlabels_int64s", [0, 1]))
    out["tree5"] = tree_ensemble()
    out["class_list"] = class_list()
    out["columns"] = columns()
    return out


def tree_ensemble():
    """The opset-5 TreeEnsemble (what onnxmltools writes at ai.onnx.ml 5):
    the stump of two leaves, 3 targets, double input and output."""
    te = helper.make_node(
        "TreeEnsemble", ["input"], ["variable"], name="TreeEnsemble", domain="ai.onnx.ml",
        n_targets=3, tree_roots=[0], nodes_featureids=[0],
        nodes_splits=numpy_helper.from_array(np.array([0.5], dtype=np.float64)),
        nodes_modes=numpy_helper.from_array(np.array([0], dtype=np.uint8)),
        nodes_truenodeids=[0], nodes_trueleafs=[1], nodes_falsenodeids=[1],
        nodes_falseleafs=[1], leaf_targetids=[0, 2],
        leaf_weights=numpy_helper.from_array(np.array([1.0, 2.0], dtype=np.float64)))
    return helper.make_graph(
        [te], "tree5",
        [helper.make_tensor_value_info("input", TensorProto.DOUBLE, ["N", F])],
        [helper.make_tensor_value_info("variable", TensorProto.DOUBLE, ["N", None])])


def class_list():
    """skl2onnx's label from probabilities (MLPClassifier, VotingClassifier):
    ArgMax over classes, the class list indexed by it with
    ArrayFeatureExtractor (a 1-D X: onnxruntime returns [1, N]), Reshape to
    [N]."""
    classes = numpy_helper.from_array(np.array([3, 5, 7], dtype=np.int64), "classes")
    shape = numpy_helper.from_array(np.array([-1], dtype=np.int64), "shape")
    nodes = [
        helper.make_node("ArgMax", ["input"], ["argmax"], name="ArgMax", axis=1),
        helper.make_node("ArrayFeatureExtractor", ["classes", "argmax"], ["picked"],
                         name="ArrayFeatureExtractor", domain="ai.onnx.ml"),
        helper.make_node("Reshape", ["picked", "shape"], ["label"], name="Reshape"),
    ]
    return helper.make_graph(
        nodes, "class_list",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"])],
        [classes, shape])


def columns():
    """skl2onnx's column selection (ColumnTransformer): two columns of
    [N, F] by ArrayFeatureExtractor, [N, 2]."""
    cols = numpy_helper.from_array(np.array([0, 2], dtype=np.int64), "cols")
    nodes = [helper.make_node("ArrayFeatureExtractor", ["input", "cols"], ["picked"],
                              name="ArrayFeatureExtractor", domain="ai.onnx.ml")]
    return helper.make_graph(
        nodes, "columns",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", F])],
        [helper.make_tensor_value_info("picked", TensorProto.FLOAT, ["N", None])], [cols])


def ort_shapes(model):
    """onnxruntime's shape of every tensor a node makes, on ROWS rows."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    known = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o not in known:
                m.graph.output.append(helper.ValueInfoProto(name=o))
                known.add(o)
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    width = m.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    elem = helper.tensor_dtype_to_np_dtype(m.graph.input[0].type.tensor_type.elem_type)
    x = np.linspace(0.0, 1.0, ROWS * width).astype(elem).reshape(ROWS, width)
    names = [o.name for o in s.get_outputs()]
    shapes, types = {}, {}
    for n, v in zip(names, s.run(names, {"input": x})):
        if isinstance(v, np.ndarray):
            shapes[n] = list(v.shape)
            types[n] = "string" if v.dtype == object else str(v.dtype)
    return shapes, types


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name, graph in models().items():
        ops = {n.op_type for n in graph.node}
        ml = 5 if "TreeEnsemble" in ops else 3 if "TreeEnsembleClassifier" in ops else 1
        model = helper.make_model(graph, producer_name="c3 scripts/ml_models.py",
                                  opset_imports=[helper.make_opsetid("", 17),
                                                 helper.make_opsetid("ai.onnx.ml", ml)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out_dir, f"{name}.onnx"))
        shapes, types = ort_shapes(model)
        with open(os.path.join(out_dir, f"{name}.shapes.json"), "w") as f:
            json.dump({"shapes": shapes, "types": types}, f, indent=0, sort_keys=True)
            f.write("\n")
        print(name, shapes)


if __name__ == "__main__":
    main()
