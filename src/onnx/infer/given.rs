//! What `--input NAME=SHAPE` says beyond the input's own shape: where the
//! model declares that input with a named size (`[batch, 256]`) and the
//! shape gives a number there, the name is that number wherever else the
//! model writes it (other inputs, outputs, value_info), as `--dim` would
//! bind it.

use std::collections::BTreeMap;

use crate::proto::GraphProto;

/// The symbols `inputs` bind through the graph inputs' declared shapes, with
/// `dims` (the `--dim` bindings) added; an error when two of them give one
/// name two values.
pub(super) fn bindings(
    g: &GraphProto,
    dims: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Vec<u64>>,
) -> Result<BTreeMap<String, i64>, String> {
    let mut all = dims.clone();
    // Where each binding came from, for the error naming both.
    let mut from: BTreeMap<String, String> = dims
        .keys()
        .map(|k| (k.clone(), format!("--dim {k}")))
        .collect();
    for v in &g.input {
        let Some(name) = v.name.as_deref() else {
            continue;
        };
        let Some(given) = inputs.get(name) else {
            continue;
        };
        let Some(shape) = v
            .r#type
            .as_ref()
            .and_then(|t| t.tensor_type.as_ref())
            .and_then(|t| t.shape.as_ref())
        else {
            continue;
        };
        // A shape of another rank replaces the declared one whole: its
        // positions say nothing about the declared names.
        if shape.dim.len() != given.len() {
            continue;
        }
        let flag = format!(
            "--input {name}={}",
            given
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join("x")
        );
        for (d, &size) in shape.dim.iter().zip(given) {
            let Some(symbol) = d
                .dim_param
                .as_deref()
                .filter(|p| !p.is_empty() && *p != "?")
            else {
                continue;
            };
            if d.dim_value.is_some() {
                continue;
            }
            let Ok(size) = i64::try_from(size) else {
                return Err(format!("{flag}: size {size} is too large"));
            };
            match all.get(symbol) {
                Some(&had) if had != size => {
                    return Err(format!(
                        "{flag} makes {symbol} = {size}, but {} makes it {had}",
                        from[symbol]
                    ));
                }
                Some(_) => {}
                None => {
                    all.insert(symbol.to_string(), size);
                    from.insert(symbol.to_string(), flag.clone());
                }
            }
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::build::{tensor_type, value};

    fn input(name: &str, dims: &[&str]) -> crate::proto::ValueInfoProto {
        value(name, tensor_type(1, dims))
    }

    #[test]
    fn an_input_shape_binds_the_names_it_replaces() {
        let g = GraphProto {
            input: vec![input("x", &["batch", "256"]), input("m", &["batch", "seq"])],
            ..Default::default()
        };
        let given = BTreeMap::from([("x".to_string(), vec![2, 256])]);
        let got = bindings(&g, &BTreeMap::new(), &given).unwrap();
        assert_eq!(got, BTreeMap::from([("batch".to_string(), 2)]));
        // Agreeing with --dim is fine; contradicting it, or another input, is not.
        let dims = BTreeMap::from([("batch".to_string(), 2), ("seq".to_string(), 7)]);
        assert_eq!(bindings(&g, &dims, &given).unwrap(), dims);
        let e = bindings(&g, &BTreeMap::from([("batch".to_string(), 4)]), &given).unwrap_err();
        assert_eq!(
            e,
            "--input x=2x256 makes batch = 2, but --dim batch makes it 4"
        );
        let both = BTreeMap::from([
            ("x".to_string(), vec![2, 256]),
            ("m".to_string(), vec![3, 5]),
        ]);
        let e = bindings(&g, &BTreeMap::new(), &both).unwrap_err();
        assert_eq!(
            e,
            "--input m=3x5 makes batch = 3, but --input x=2x256 makes it 2"
        );
        // Another rank replaces the shape and binds nothing.
        let other = BTreeMap::from([("x".to_string(), vec![2, 16, 16])]);
        assert!(bindings(&g, &BTreeMap::new(), &other).unwrap().is_empty());
    }
}
