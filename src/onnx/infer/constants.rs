//! The walk's constants: initializers and Constant tensors whose data is
//! read only when a shape function asks for it.

use std::path::{Path, PathBuf};
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
    /// records before). The name is not kept: decoding reads none, and
    /// only data in an external file fails to load in a way that names
    /// its tensor (a decoder export's 70k initializers: 70k copies).
    Raw {
        dims: Vec<i64>,
        data_type: Option<i32>,
        raw_data: Option<bytes::Bytes>,
    },
    /// Anything else, copied whole.
    Whole(Box<TensorProto>),
}

impl Kept {
    fn of(t: &TensorProto) -> Kept {
        // Every field but these three and the name is unset, so the record
        // they make again ([`Kept::record`]) is the one copied, unnamed.
        let TensorProto {
            dims,
            data_type,
            float_data: None,
            int32_data: None,
            string_data,
            int64_data: None,
            raw_data,
            external_data,
            data_location: None,
            double_data: None,
            uint64_data: None,
            stored,
            name: _,
        } = t
        else {
            return Kept::Whole(Box::new(t.clone()));
        };
        if !(string_data.is_empty() && external_data.is_empty() && stored.is_empty()) {
            return Kept::Whole(Box::new(t.clone()));
        }
        Kept::Raw {
            dims: dims.clone(),
            data_type: *data_type,
            raw_data: raw_data.clone(),
        }
    }

    /// Its name, for a message of data that cannot be read: only data in
    /// an external file, never one kept [`Kept::Raw`].
    fn name(&self) -> &str {
        match self {
            Kept::Whole(t) => t.name.as_deref().unwrap_or(""),
            Kept::Raw { .. } => "",
        }
    }

    /// Decodes the record's data as [`tensor::decode`] does the record.
    fn decode(&self, dir: &Path) -> std::result::Result<TensorValue, tensor::DecodeError> {
        match self {
            Kept::Whole(t) => tensor::decode(t, dir),
            // The record made again in a scratch one of this thread's, its
            // dimensions copied into room kept from the last load: a load
            // (one a shape constant read, 54k in a decoder export of 70k
            // initializers) copies neither name nor dimensions into fresh
            // memory.
            Kept::Raw {
                dims,
                data_type,
                raw_data,
            } => SCRATCH.with_borrow_mut(|t| {
                t.dims.clear();
                t.dims.extend_from_slice(dims);
                t.data_type = *data_type;
                t.raw_data.clone_from(raw_data);
                let decoded = tensor::decode(t, dir);
                t.raw_data = None;
                decoded
            }),
        }
    }

    /// The record as it was, but for a [`Kept::Raw`] one's name: borrowed,
    /// or made again from its three fields.
    #[cfg(test)]
    fn record(&self) -> std::borrow::Cow<'_, TensorProto> {
        match self {
            Kept::Whole(t) => std::borrow::Cow::Borrowed(&**t),
            Kept::Raw {
                dims,
                data_type,
                raw_data,
            } => std::borrow::Cow::Owned(TensorProto {
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

thread_local! {
    /// The record a [`Kept::Raw`] constant is decoded from ([`Kept::decode`]).
    static SCRATCH: std::cell::RefCell<TensorProto> = std::cell::RefCell::default();
}

impl ConstantData for LazyTensor {
    fn load(&self) -> std::result::Result<TensorValue, String> {
        self.tensor.decode(&self.loads.dir).map_err(|e| match e {
            tensor::DecodeError::NotCarried(m) => m,
            tensor::DecodeError::Unreadable(m) => {
                let m = format!("tensor '{}': {m}", self.tensor.name());
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

    /// A constant kept in three fields is made again as it was, its name
    /// aside, and one with any other field set is kept whole: loading reads
    /// the same record either way. A field the slim form dropped fails the
    /// first assertion.
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
        // Decoding a kept constant is decoding its record, whichever form
        // keeps it, and twice in a row (the scratch record reused) too; a
        // wrong length is refused as in the record.
        let short = TensorProto {
            raw_data: Some(Bytes::from(vec![0u8; 20])),
            ..raw.clone()
        };
        let dir = std::path::Path::new(".");
        for t in [&raw, &bare, &short] {
            let kept = Kept::of(t);
            assert!(matches!(kept, Kept::Raw { .. }));
            let unnamed = TensorProto {
                name: None,
                ..t.clone()
            };
            assert_eq!(&*kept.record(), &unnamed);
            for _ in 0..2 {
                assert_eq!(kept.decode(dir), tensor::decode(t, dir));
            }
        }
        assert!(Kept::of(&short).decode(dir).is_err());
        for t in &whole {
            let kept = Kept::of(t);
            assert!(matches!(kept, Kept::Whole(_)), "{t:?}");
            assert_eq!(&*kept.record(), t);
            assert_eq!(kept.decode(dir), tensor::decode(t, dir));
        }
        // The value loaded is the record's: six zeros.
        let loads = Arc::new(Loads::new(PathBuf::from(".")));
        let f = tensor_fact(&raw, &loads).unwrap();
        let v = f.constant.unwrap().load().unwrap();
        assert_eq!(v, TensorValue::floats(vec![0.0; 6]));
    }
}
