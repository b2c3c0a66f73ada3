//! `--fit DIM`: the largest size of a dimension whose training step fits
//! the device's memory, found by estimating the model at sizes doubling
//! from 1 and then halving the interval between the last that fits and
//! the first that does not. A step's memory grows with a batch or a
//! sequence length, so the answer is the boundary.

use super::{Estimate, EstimateOptions, Model};
use crate::error::{Error, Result};

/// Sizes past this are not tried: 2^31 of a batch is beyond any device.
const MAX_FIT: i64 = 1 << 31;

impl Model {
    /// The estimate at the options' bindings (or, when `dim` is not bound,
    /// at the largest size that fits, 1 when none does), with the largest
    /// size of `dim` that fits recorded in its training figures.
    pub fn estimate_fitted(&self, opts: &EstimateOptions, dim: &str) -> Result<Estimate> {
        let at = |v: i64| -> Result<Estimate> {
            let mut o = opts.clone();
            o.dims.insert(dim.to_string(), v);
            self.estimate(&o)
        };
        let fits = |e: &Estimate| -> Result<bool> {
            let t = e.report.training.as_ref();
            match t.and_then(|t| t.fits()) {
                Some((fits, _)) => Ok(fits),
                None => Err(Error::Usage(format!(
                    "--fit needs a device whose memory the catalog gives; {} has none",
                    opts.device.as_deref().unwrap_or("no device")
                ))),
            }
        };
        let first = at(1)?;
        let largest = if !fits(&first)? {
            None
        } else {
            let (mut lo, mut hi) = (1i64, 2i64);
            loop {
                if hi > MAX_FIT {
                    break;
                }
                if fits(&at(hi)?)? {
                    lo = hi;
                    hi *= 2;
                } else {
                    break;
                }
            }
            let hi = hi.min(MAX_FIT + 1);
            let (mut lo, mut hi) = (lo, hi);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if fits(&at(mid)?)? {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            Some(lo)
        };
        let mut shown = match opts.dims.get(dim) {
            Some(_) => self.estimate(opts)?,
            None if largest.is_some_and(|v| v > 1) => at(largest.unwrap_or(1))?,
            None => first,
        };
        if let Some(t) = &mut shown.report.training {
            t.fit = Some((dim.to_string(), largest));
        }
        Ok(shown)
    }
}
