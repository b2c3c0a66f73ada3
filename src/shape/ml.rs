//! The ai.onnx.ml operators: classifiers, regressors, encoders and maps.

use super::ctx::{InferCtx, Result, ShapeError, dim, err, join};
use super::dims::like_input;
use super::fact::{Fact, ValueKind};
use super::indexing::same_shape_as;
use super::{InferFn, OpEntry};
use crate::ir::{DType, Dim};

/// ArrayFeatureExtractor: the last dimension becomes the number of indices
/// (all of `Y`'s elements). A 1-D `X` (skl2onnx's class list indexed by an
/// argmax) gives `[1, |Y|]`, as onnxruntime returns it.
fn array_feature_extractor(ctx: &mut InferCtx) -> Result<()> {
    let dtype = ctx.require(0)?.dtype;
    let k = ctx.input(1).and_then(Fact::elements);
    let shape = match (ctx.shape(0), k) {
        (Some(s), _) if s.is_empty() => {
            return err("ArrayFeatureExtractor input X must have at least one dimension");
        }
        (Some(s), Some(k)) if s.len() == 1 => Some(vec![Dim::Known(1), dim(&k)?]),
        (Some(s), Some(k)) => {
            let mut s = s.clone();
            let last = s.len() - 1;
            s[last] = dim(&k)?;
            Some(s)
        }
        _ => None,
    };
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

/// LabelEncoder: the input's shape, the type of the `values_*` attribute.
fn label_encoder(ctx: &mut InferCtx) -> Result<()> {
    let dtype = if let Some(t) = ctx.attr_tensor("values_tensor") {
        ctx.tensors.fact_of(t)?.dtype
    } else if ctx.has_attr("values_strings") {
        Some(DType::String)
    } else if ctx.has_attr("values_int64s") {
        Some(DType::Int64)
    } else if ctx.has_attr("values_floats") {
        Some(DType::Float32)
    } else {
        // ai.onnx.ml 1 maps strings to int64 and back, like CategoryMapper.
        return category_mapper(ctx);
    };
    same_shape_as(ctx, dtype)
}

/// Element-wise ml operators whose result is float (Normalizer, Scaler).
fn ml_float_map(ctx: &mut InferCtx) -> Result<()> {
    same_shape_as(ctx, Some(DType::Float32))
}

/// The batch of an ml operator's `[N, F]` input (a 1-D input is one
/// sample); `None` when the input's shape is unknown.
fn ml_batch(ctx: &InferCtx, i: usize) -> Result<Option<Dim>> {
    match ctx.shape(i).map(Vec::as_slice) {
        Some([n, _]) => Ok(Some(n.clone())),
        Some([_]) => Ok(Some(Dim::Known(1))),
        Some(s) => err(format!(
            "{} input [{}] must be [N, F] or [F]",
            ctx.op,
            join(s)
        )),
        None => Ok(None),
    }
}

/// `[N, width]` when both are known.
fn batch_by(n: Option<Dim>, width: Option<usize>) -> Option<Vec<Dim>> {
    Some(vec![n?, Dim::Known(width? as u64)])
}

/// Regressors: `[N, targets]`; TreeEnsemble keeps the input's type.
/// SVMRegressor has no target count: one score per row, `[N, 1]`.
fn regressor(ctx: &mut InferCtx) -> Result<()> {
    let (targets, dtype) = match ctx.op {
        "TreeEnsemble" => (ctx.attr_int("n_targets"), ctx.require(0)?.dtype),
        "TreeEnsembleRegressor" => (ctx.attr_int("n_targets"), Some(DType::Float32)),
        _ => (Some(ctx.attr_int_or("targets", 1)), Some(DType::Float32)),
    };
    let targets = match targets {
        Some(t) => Some(usize::try_from(t).map_err(|_| ShapeError(format!("{t} targets")))?),
        None => None,
    };
    let shape = batch_by(ml_batch(ctx, 0)?, targets);
    ctx.set(0, Fact::tensor(dtype, shape));
    Ok(())
}

/// A classifier's label type and class count, from whichever label list it
/// has: `classlabels_strings`, or the int64 list (`classlabels_int64s` on
/// TreeEnsembleClassifier, `classlabels_ints` on the others). onnxruntime
/// needs one except on LinearClassifier, which then labels 0 and 1.
fn class_labels(ctx: &InferCtx) -> Result<(DType, usize)> {
    let ints = match ctx.op {
        "TreeEnsembleClassifier" => "classlabels_int64s",
        _ => "classlabels_ints",
    };
    match ctx.attr_strings("classlabels_strings") {
        Some(s) if !s.is_empty() => Ok((DType::String, s.len())),
        _ => match ctx.attr_ints(ints) {
            Some(i) if !i.is_empty() => Ok((DType::Int64, i.len())),
            _ if ctx.op == "LinearClassifier" => Ok((DType::Int64, 0)),
            _ => err(format!("{} needs classlabels_strings or {ints}", ctx.op)),
        },
    }
}

/// SVMClassifier's scores per row, as onnxruntime writes them: one per
/// class, except an SVC (support vectors given) without `prob_a`, which
/// gives one per pair of classes, `C (C - 1) / 2`, and 2 when binary.
fn svm_scores(ctx: &InferCtx, classes: usize) -> usize {
    let vectors: i64 = ctx
        .attr_ints("vectors_per_class")
        .unwrap_or_default()
        .iter()
        .sum();
    let proba = ctx.attr_floats("prob_a").is_some_and(|p| !p.is_empty());
    match (vectors > 0, proba) {
        (true, false) if classes > 2 => classes * (classes - 1) / 2,
        (true, false) => 2,
        _ => classes,
    }
}

/// Classifiers: labels `[N]` (strings or int64, as the class labels are),
/// scores `[N, classes]` as onnxruntime gives them.
fn classifier(ctx: &mut InferCtx) -> Result<()> {
    let (labels, n_labels) = class_labels(ctx)?;
    let classes = match ctx.op {
        // One intercept for two labels is a binary model with two scores.
        "LinearClassifier" => match ctx.attr_floats("intercepts").unwrap_or_default().len() {
            1 if n_labels == 2 => 2,
            n => n,
        },
        "SVMClassifier" => svm_scores(ctx, n_labels),
        _ => n_labels,
    };
    let n = ml_batch(ctx, 0)?;
    ctx.set(0, Fact::tensor(Some(labels), n.clone().map(|n| vec![n])));
    ctx.set(
        1,
        Fact::tensor(Some(DType::Float32), batch_by(n, Some(classes))),
    );
    Ok(())
}

/// FeatureVectorizer: inputs side by side, `[N, sum(inputdimensions)]`.
fn feature_vectorizer(ctx: &mut InferCtx) -> Result<()> {
    let width = ctx
        .attr_ints("inputdimensions")
        .map(|d| {
            d.iter()
                .try_fold(0usize, |acc, &w| acc.checked_add(usize::try_from(w).ok()?))
                .ok_or_else(|| ShapeError("invalid inputdimensions".into()))
        })
        .transpose()?;
    let shape = batch_by(ml_batch(ctx, 0)?, width);
    ctx.set(0, Fact::tensor(Some(DType::Float32), shape));
    Ok(())
}

/// OneHotEncoder: one float per category after the input's dimensions.
fn one_hot_encoder(ctx: &mut InferCtx) -> Result<()> {
    let cats = ctx
        .attr_ints("cats_int64s")
        .map(|c| c.len())
        .or_else(|| ctx.attr_strings("cats_strings").map(|c| c.len()))
        .unwrap_or(0);
    let shape = ctx.require(0)?.shape.clone().map(|mut s| {
        s.push(Dim::Known(cats as u64));
        s
    });
    ctx.set(0, Fact::tensor(Some(DType::Float32), shape));
    Ok(())
}

/// CategoryMapper maps strings to int64 and int64 to strings.
fn category_mapper(ctx: &mut InferCtx) -> Result<()> {
    let dtype = match ctx.require(0)?.dtype {
        Some(DType::String) => Some(DType::Int64),
        Some(DType::Int64) => Some(DType::String),
        _ => None,
    };
    same_shape_as(ctx, dtype)
}

/// The count of a vocabulary or `max_map` attribute as a dimension.
fn count_dim(n: i64, what: &str) -> Result<Dim> {
    u64::try_from(n)
        .map(Dim::Known)
        .map_err(|_| ShapeError(format!("{what} is {n}")))
}

/// CastMap: a map int64 -> string/float becomes a `[1, N]` tensor of the
/// `cast_to` type, as onnxruntime writes it. N is `max_map` for the SPARSE
/// form, the map's entry count for DENSE (not known here: a fresh symbol).
fn cast_map(ctx: &mut InferCtx) -> Result<()> {
    let dtype = match ctx.attr_string_or("cast_to", "TO_FLOAT").as_str() {
        "TO_FLOAT" => DType::Float32,
        "TO_STRING" => DType::String,
        "TO_INT64" => DType::Int64,
        other => {
            return err(format!(
                "CastMap cast_to {other:?} is not TO_FLOAT, TO_STRING or TO_INT64"
            ));
        }
    };
    let n = match ctx.attr_string_or("map_form", "DENSE").as_str() {
        "DENSE" => ctx.fresh_dim("castmap"),
        "SPARSE" => count_dim(ctx.attr_int_or("max_map", 1), "max_map")?,
        other => return err(format!("CastMap map_form {other:?} is not DENSE or SPARSE")),
    };
    ctx.set(0, Fact::new(dtype, vec![Dim::Known(1), n]));
    Ok(())
}

/// DictVectorizer: one map becomes a `[1, V]` tensor of the map's value type
/// (onnxruntime's layout), one column per vocabulary entry.
fn dict_vectorizer(ctx: &mut InferCtx) -> Result<()> {
    let v = match (
        ctx.attr_strings("string_vocabulary"),
        ctx.attr_ints("int64_vocabulary"),
    ) {
        (Some(s), None) => s.len(),
        (None, Some(i)) => i.len(),
        _ => {
            return err(
                "DictVectorizer needs exactly one of string_vocabulary and int64_vocabulary",
            );
        }
    };
    let dtype = ctx.require(0)?.dtype;
    let shape = vec![Dim::Known(1), count_dim(v as i64, "the vocabulary size")?];
    ctx.set(0, Fact::tensor(dtype, Some(shape)));
    Ok(())
}

/// ZipMap: each row of `[N, C]` scores (or one `[C]` row) becomes a map from
/// the C class labels to float; the result is a sequence of maps, described
/// by the map's value type.
fn zip_map(ctx: &mut InferCtx) -> Result<()> {
    let labels = match (
        ctx.attr_strings("classlabels_strings"),
        ctx.attr_ints("classlabels_int64s"),
    ) {
        (Some(s), None) => s.len(),
        (None, Some(i)) => i.len(),
        _ => return err("ZipMap needs exactly one of classlabels_strings and classlabels_int64s"),
    };
    let classes = match ctx.shape(0).map(Vec::as_slice) {
        Some([c]) | Some([_, c]) => c.known(),
        Some(s) => return err(format!("ZipMap input [{}] must be [N, C] or [C]", join(s))),
        None => None,
    };
    if let Some(c) = classes
        && c != labels as u64
    {
        return err(format!(
            "ZipMap has {labels} class labels for {c} scores per row"
        ));
    }
    ctx.set(
        0,
        Fact {
            kind: ValueKind::Sequence,
            ..Fact::tensor(Some(DType::Float32), None)
        },
    );
    Ok(())
}

/// This family's operators.
pub fn ops() -> Vec<OpEntry> {
    let table: [(&'static str, InferFn); 19] = [
        ("ArrayFeatureExtractor", array_feature_extractor),
        ("Binarizer", like_input),
        ("CastMap", cast_map),
        ("CategoryMapper", category_mapper),
        ("DictVectorizer", dict_vectorizer),
        ("FeatureVectorizer", feature_vectorizer),
        ("LinearClassifier", classifier),
        ("OneHotEncoder", one_hot_encoder),
        ("SVMClassifier", classifier),
        ("TreeEnsembleClassifier", classifier),
        ("Imputer", like_input),
        ("LabelEncoder", label_encoder),
        ("Normalizer", ml_float_map),
        ("Scaler", ml_float_map),
        ("TreeEnsemble", regressor),
        ("TreeEnsembleRegressor", regressor),
        ("LinearRegressor", regressor),
        ("SVMRegressor", regressor),
        ("ZipMap", zip_map),
    ];
    table
        .iter()
        .map(|(op, f)| ("ai.onnx.ml", *op, *f))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::indexing::tests::*;
    use crate::shape::ctx::run_op as run_in;

    use crate::ir::DType;

    use crate::shape::{Fact, ValueKind};

    #[test]
    fn binary_linear_classifier_gives_two_scores() {
        // One intercept with two labels is a binary model: scores [n, 2].
        let x = f32s(vec![sym("n"), k(3)]);
        let attrs = [
            ints("classlabels_ints", &[0, 1]),
            floats("intercepts", &[0.5]),
        ];
        let out = run_in(
            "ai.onnx.ml",
            "LinearClassifier",
            1,
            &attrs,
            vec![x.clone()],
            2,
        )
        .unwrap();
        assert_eq!(out[0], Fact::new(DType::Int64, vec![sym("n")]));
        assert_eq!(shape(&out[1]), vec![sym("n"), k(2)]);
        // A regressor without its optional n_targets: width unknown, no error.
        let out = run_in("ai.onnx.ml", "TreeEnsembleRegressor", 1, &[], vec![x], 1).unwrap();
        assert_eq!(out[0].shape, None);
    }

    #[test]
    fn map_operators_follow_onnxruntime_layouts() {
        let ml = "ai.onnx.ml";
        // CastMap SPARSE: [1, max_map] of the cast_to type.
        let attrs = [
            string("map_form", "SPARSE"),
            int("max_map", 7),
            string("cast_to", "TO_INT64"),
        ];
        let out = run_in(ml, "CastMap", 1, &attrs, vec![map_of(DType::Float32)], 1).unwrap();
        assert_eq!(out[0], Fact::new(DType::Int64, vec![k(1), k(7)]));
        // DENSE (the default): one column per map entry, a count unknown here.
        let out = run_in(ml, "CastMap", 1, &[], vec![map_of(DType::String)], 1).unwrap();
        assert_eq!(out[0].dtype, Some(DType::Float32));
        assert_eq!(shape(&out[0])[0], k(1));
        assert!(is_fresh(&shape(&out[0])[1]));
        let bad = [string("cast_to", "TO_DOUBLE")];
        assert!(run_in(ml, "CastMap", 1, &bad, vec![map_of(DType::Float32)], 1).is_err());
        // DictVectorizer: [1, vocabulary] of the map's value type.
        let attrs = [strs("string_vocabulary", &["a", "b", "c"])];
        let out = run_in(
            ml,
            "DictVectorizer",
            1,
            &attrs,
            vec![map_of(DType::Float64)],
            1,
        )
        .unwrap();
        assert_eq!(out[0], Fact::new(DType::Float64, vec![k(1), k(3)]));
        assert!(
            run_in(
                ml,
                "DictVectorizer",
                1,
                &[],
                vec![map_of(DType::Float32)],
                1
            )
            .is_err()
        );
        // ZipMap: a sequence of float maps; the label count must match C.
        let attrs = [ints("classlabels_int64s", &[0, 1, 2])];
        let x = f32s(vec![sym("n"), k(3)]);
        let out = run_in(ml, "ZipMap", 1, &attrs, vec![x], 1).unwrap();
        assert_eq!(out[0].kind, ValueKind::Sequence);
        assert_eq!(out[0].dtype, Some(DType::Float32));
        let x = f32s(vec![sym("n"), k(4)]);
        assert!(run_in(ml, "ZipMap", 1, &attrs, vec![x], 1).is_err());
        // SVMRegressor: one score per row.
        let x = f32s(vec![sym("n"), k(5)]);
        let out = run_in(ml, "SVMRegressor", 1, &[], vec![x], 1).unwrap();
        assert_eq!(out[0], Fact::new(DType::Float32, vec![sym("n"), k(1)]));
    }

    #[test]
    fn tree_ensemble_gives_one_column_per_target() {
        let x = Some(Fact::new(DType::Float64, vec![sym("n"), k(2)]));
        let out = run_in(
            "ai.onnx.ml",
            "TreeEnsemble",
            5,
            &[int("n_targets", 4)],
            vec![x],
            1,
        )
        .unwrap();
        assert_eq!(out[0], Fact::new(DType::Float64, vec![sym("n"), k(4)]));
    }

    const ML: &str = "ai.onnx.ml";

    /// A classifier over X [n, 4]: its label and score facts.
    fn classify(op: &str, attrs: &[crate::proto::AttributeProto]) -> (Fact, Fact) {
        let x = f32s(vec![sym("n"), k(4)]);
        let out = run_in(ML, op, 1, attrs, vec![x], 2).unwrap();
        (out[0].clone(), out[1].clone())
    }

    #[test]
    fn tree_ensemble_classifier_counts_int64_or_string_labels() {
        // skl2onnx's RandomForestClassifier with int labels: classlabels_int64s
        // [0, 1, 2] -> int64 labels [n], 3 scores per row.
        let (y, z) = classify(
            "TreeEnsembleClassifier",
            &[ints("classlabels_int64s", &[0, 1, 2])],
        );
        assert_eq!(y, Fact::new(DType::Int64, vec![sym("n")]));
        assert_eq!(z, Fact::new(DType::Float32, vec![sym("n"), k(3)]));
        // onnxmltools' XGBoost and LightGBM binary: one weight per leaf
        // (class id 0 only), still a score per label: [n, 2].
        let (_, z) = classify(
            "TreeEnsembleClassifier",
            &[
                ints("classlabels_int64s", &[0, 1]),
                ints("class_ids", &[0, 0]),
                string("post_transform", "LOGISTIC"),
            ],
        );
        assert_eq!(shape(&z), vec![sym("n"), k(2)]);
        // String labels: string labels [n], one score per string (4).
        let (y, z) = classify(
            "TreeEnsembleClassifier",
            &[strs("classlabels_strings", &["a", "b", "c", "d"])],
        );
        assert_eq!(y, Fact::new(DType::String, vec![sym("n")]));
        assert_eq!(shape(&z), vec![sym("n"), k(4)]);
        // onnxruntime needs one of the two lists; classlabels_ints is
        // LinearClassifier's and SVMClassifier's name, not this op's.
        let x = f32s(vec![sym("n"), k(4)]);
        let bad = [ints("classlabels_ints", &[0, 1])];
        let e = run_in(ML, "TreeEnsembleClassifier", 1, &bad, vec![x], 2).unwrap_err();
        assert!(e.0.contains("classlabels_int64s"), "{}", e.0);
    }

    #[test]
    fn tree_ensemble_classifier_scores_feed_a_zipmap() {
        // The [n, 3] scores meet ZipMap's 3 labels (they came out [n, 0]).
        let labels = [ints("classlabels_int64s", &[0, 1, 2])];
        let (_, z) = classify("TreeEnsembleClassifier", &labels);
        let out = run_in(ML, "ZipMap", 1, &labels, vec![Some(z)], 1).unwrap();
        assert_eq!(out[0].kind, ValueKind::Sequence);
    }

    #[test]
    fn svm_classifier_scores_are_onnxruntimes() {
        let svc = |classes: usize, proba: bool, strings: bool| {
            let mut attrs = vec![ints("vectors_per_class", &vec![1; classes])];
            if strings {
                let names = ["a", "b", "c", "d"];
                attrs.push(strs("classlabels_strings", &names[..classes]));
            } else {
                attrs.push(ints(
                    "classlabels_ints",
                    &(0..classes as i64).collect::<Vec<_>>(),
                ));
            }
            if proba {
                let pairs = classes * (classes - 1) / 2;
                attrs.push(floats("prob_a", &vec![-1.0; pairs]));
                attrs.push(floats("prob_b", &vec![0.1; pairs]));
            }
            classify("SVMClassifier", &attrs)
        };
        // SVC(probability=True), 3 classes: one probability per class, 3.
        let (y, z) = svc(3, true, false);
        assert_eq!(y, Fact::new(DType::Int64, vec![sym("n")]));
        assert_eq!(z, Fact::new(DType::Float32, vec![sym("n"), k(3)]));
        // Without prob_a, one score per pair of classes: 4 * 3 / 2 = 6.
        let (y, z) = svc(4, false, true);
        assert_eq!(y, Fact::new(DType::String, vec![sym("n")]));
        assert_eq!(shape(&z), vec![sym("n"), k(4 * 3 / 2)]);
        // Binary without prob_a: one decision value, written as 2 scores.
        let (_, z) = svc(2, false, false);
        assert_eq!(shape(&z), vec![sym("n"), k(2)]);
        // Linear mode (no support vectors): a score per class, 3.
        let (_, z) = classify(
            "SVMClassifier",
            &[
                ints("classlabels_ints", &[0, 1, 2]),
                floats("coefficients", &[0.5; 3 * 4]),
            ],
        );
        assert_eq!(shape(&z), vec![sym("n"), k(3)]);
    }

    #[test]
    fn linear_classifier_without_labels_labels_int64() {
        // onnxruntime labels a one-intercept model 0 or 1 without a list:
        // int64 labels, one score column (the intercept count).
        let (y, z) = classify("LinearClassifier", &[floats("intercepts", &[0.5])]);
        assert_eq!(y.dtype, Some(DType::Int64));
        assert_eq!(shape(&z), vec![sym("n"), k(1)]);
    }

    #[test]
    fn array_feature_extractor_has_onnxruntimes_shapes() {
        let afe = |x: Option<Fact>, y: Option<Fact>| {
            run_in(ML, "ArrayFeatureExtractor", 1, &[], vec![x, y], 1)
        };
        // skl2onnx's class list [3] indexed by an argmax [n, 1]: a 1-D X
        // gives [1, |Y|] = [1, n].
        let classes = i64s(vec![k(3)], &[3, 5, 7]);
        let argmax = Some(Fact::new(DType::Int64, vec![sym("n"), k(1)]));
        let out = afe(classes, argmax).unwrap();
        assert_eq!(out[0], Fact::new(DType::Int64, vec![k(1), sym("n")]));
        // Columns [0, 2] of [n, 4]: [n, 2].
        let cols = i64s(vec![k(2)], &[0, 2]);
        let out = afe(f32s(vec![sym("n"), k(4)]), cols).unwrap();
        assert_eq!(out[0], Fact::new(DType::Float32, vec![sym("n"), k(2)]));
        // Higher ranks keep all but the last axis: [2, 5, 7] by 3 indices
        // given as [3, 1] -> [2, 5, 3 * 1].
        let idx = Some(Fact::new(DType::Int64, vec![k(3), k(1)]));
        let out = afe(f32s(vec![k(2), k(5), k(7)]), idx).unwrap();
        assert_eq!(shape(&out[0]), vec![k(2), k(5), k(3)]);
        // A scalar X has no axis to select from.
        assert!(afe(f32s(vec![]), i64s(vec![k(1)], &[0])).is_err());
    }
}
