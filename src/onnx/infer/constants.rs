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
    tensor: TensorProto,
    /// Shared by every constant of the walk (one count, not a copy of the
    /// folder's path each).
    loads: Arc<Loads>,
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
        tensor::decode(&self.tensor, &self.loads.dir).map_err(|e| match e {
            tensor::DecodeError::NotCarried(m) => m,
            tensor::DecodeError::Unreadable(m) => {
                let m = format!(
                    "tensor '{}': {m}",
                    self.tensor.name.as_deref().unwrap_or("")
                );
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
            tensor: t.clone(),
            loads: Arc::clone(loads),
        })),
        ..Fact::new(dtype, shape)
    })
}
