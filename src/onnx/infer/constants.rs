//! The walk's constants: initializers and Constant tensors whose data is
//! read only when a shape function asks for it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::super::proto::TensorProto;
use super::super::tensor;
use crate::ir::Dim;
use crate::shape::fact::ConstantData;
use crate::shape::{Fact, TensorValue};

/// An initializer (or Constant tensor) whose data is read only when needed.
pub(super) struct LazyTensor {
    tensor: Kept,
    /// Shared by every constant of the walk (one count, not a copy of the
    /// folder's path each).
    loads: Arc<Loads>,
}

/// A constant's record, as loading it reads it.
enum Kept {
    /// What most hold: a name, dimensions, a type and at most `raw_data`
    /// (a slice of the file, not a copy), every other field unset. A third
    /// of the whole record's size: a model of a hundred thousand small
    /// weights holds them all at once (convnet_100000: 38 MB of copied
    /// records before).
    Raw {
        name: Option<String>,
        dims: Vec<i64>,
        data_type: Option<i32>,
        raw_data: Option<bytes::Bytes>,
    },
    /// Anything else, copied whole.
    Whole(Box<TensorProto>),
}

impl Kept {
    fn of(t: &TensorProto) -> Kept {
        // Every field but these four is unset, so the record they make
        // again ([`Kept::record`]) is the one copied.
        let TensorProto {
            dims,
            data_type,
            float_data: None,
            int32_data: None,
            string_data,
            int64_data: None,
            name,
            raw_data,
            external_data,
            data_location: None,
            double_data: None,
            uint64_data: None,
            stored,
        } = t
        else {
            return Kept::Whole(Box::new(t.clone()));
        };
        if !(string_data.is_empty() && external_data.is_empty() && stored.is_empty()) {
            return Kept::Whole(Box::new(t.clone()));
        }
        Kept::Raw {
            name: name.clone(),
            dims: dims.clone(),
            data_type: *data_type,
            raw_data: raw_data.clone(),
        }
    }

    /// The record as it was: borrowed, or made again from its four fields.
    fn record(&self) -> std::borrow::Cow<'_, TensorProto> {
        match self {
            Kept::Whole(t) => std::borrow::Cow::Borrowed(&**t),
            Kept::Raw {
                name,
                dims,
                data_type,
                raw_data,
            } => std::borrow::Cow::Owned(TensorProto {
                name: name.clone(),
                dims: dims.clone(),
                data_type: *data_type,
                raw_data: raw_data.clone(),
                ..TensorProto::default()
            }),
        }
    }
}

/// Where a walk's constants load from and report to.
pub(super) struct Loads {
    /// The model's folder: external data must stay inside it.
    dir: PathBuf,
    /// Where data that cannot be read is reported: shape functions take a
    /// failed load as an unknown value, but a missing external file is a
    /// broken model and must end inference with its own message.
    unreadable: Mutex<Option<String>>,
    /// Whether `unreadable` holds a message: read after every node, where
    /// taking the lock each time was a quarter of the node's own work.
    any_unreadable: AtomicBool,
}

impl Loads {
    /// Loads from `dir`, none failed yet.
    pub(super) fn new(dir: PathBuf) -> Loads {
        Loads {
            dir,
            unreadable: Mutex::default(),
            any_unreadable: AtomicBool::new(false),
        }
    }

    /// The message a failed load left, taken (each is reported once).
    pub(super) fn take_unreadable(&self) -> Option<String> {
        if !self.any_unreadable.load(Ordering::Acquire) {
            return None;
        }
        let mut slot = self.unreadable.lock().ok()?;
        self.any_unreadable.store(false, Ordering::Release);
        slot.take()
    }
}

impl ConstantData for LazyTensor {
    fn load(&self) -> std::result::Result<TensorValue, String> {
        let t = self.tensor.record();
        tensor::decode(&t, &self.loads.dir).map_err(|e| match e {
            tensor::DecodeError::NotCarried(m) => m,
            tensor::DecodeError::Unreadable(m) => {
                let m = format!("tensor '{}': {m}", t.name.as_deref().unwrap_or(""));
                if let Ok(mut slot) = self.loads.unreadable.lock() {
                    slot.get_or_insert_with(|| m.clone());
                    self.loads.any_unreadable.store(true, Ordering::Release);
                }
                m
            }
        })
    }
}

pub(super) fn tensor_fact(
    t: &TensorProto,
    loads: &Arc<Loads>,
) -> std::result::Result<Fact, String> {
    let dtype = tensor::dtype_of(t)?;
    let shape = t
        .dims
        .iter()
        .map(|&d| {
            u64::try_from(d)
                .map(Dim::Known)
                .map_err(|_| format!("negative dimension {d}"))
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(Fact {
        constant: Some(Arc::new(LazyTensor {
            tensor: Kept::of(t),
            loads: Arc::clone(loads),
        })),
        ..Fact::new(dtype, shape)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{StoredPayload, StringStringEntryProto};
    use bytes::Bytes;

    /// A constant kept in four fields is made again as it was, and one
    /// with any other field set is kept whole: loading reads the same
    /// record either way. A field the slim form dropped fails the first
    /// assertion.
    #[test]
    fn a_kept_constant_is_its_record() {
        let raw = TensorProto {
            name: Some("w".into()),
            dims: vec![2, 3],
            data_type: Some(1),
            raw_data: Some(Bytes::from(vec![0u8; 24])),
            ..TensorProto::default()
        };
        let bare = TensorProto {
            dims: vec![0],
            data_type: Some(7),
            ..TensorProto::default()
        };
        let other = |f: &dyn Fn(&mut TensorProto)| {
            let mut t = raw.clone();
            f(&mut t);
            t
        };
        let whole = [
            other(&|t| t.float_data = Some(Bytes::from(vec![0u8; 24]))),
            other(&|t| t.int64_data = Some(Bytes::from_static(&[1, 2]))),
            other(&|t| t.string_data = vec![Bytes::from_static(b"s")]),
            other(&|t| {
                t.data_location = Some(1);
                t.external_data = vec![StringStringEntryProto {
                    key: Some("location".into()),
                    value: Some("w.bin".into()),
                }];
            }),
            other(&|t| {
                t.stored = vec![StoredPayload {
                    field: Some(9),
                    offset: Some(64),
                    length: Some(24),
                }]
            }),
        ];
        for t in [&raw, &bare] {
            let kept = Kept::of(t);
            assert!(matches!(kept, Kept::Raw { .. }));
            assert_eq!(&*kept.record(), t);
        }
        for t in &whole {
            let kept = Kept::of(t);
            assert!(matches!(kept, Kept::Whole(_)), "{t:?}");
            assert_eq!(&*kept.record(), t);
        }
        // The value loaded is the record's: six zeros.
        let loads = Arc::new(Loads::new(PathBuf::from(".")));
        let f = tensor_fact(&raw, &loads).unwrap();
        let v = f.constant.unwrap().load().unwrap();
        assert_eq!(v, TensorValue::floats(vec![0.0; 6]));
    }
}
