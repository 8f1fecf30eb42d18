//! Caller memory that native threads write into (`take_into`, `TakePipeline`): the arrays
//! are checked once (`writable_array`) and claimed while written (`Claim`), so that no two
//! writers in lancepy ever hold the same bytes.

use std::sync::Mutex;

use pyo3::prelude::*;

use super::errors::to_pyerr;
use crate::error::{Error, Result};

/// `(address, bytes)` of `obj`'s memory, through numpy's array interface (version 3), when it
/// is writable and C-contiguous; an error otherwise.
pub(super) fn writable_array(obj: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    let bad = |why: &str| to_pyerr(Error::invalid_input(format!("take_into: the output {why}")));
    let iface = obj.getattr("__array_interface__").map_err(|_| bad("has no __array_interface__ (pass a numpy array)"))?;
    let (ptr, readonly): (usize, bool) = iface.get_item("data")?.extract()?;
    if readonly || ptr == 0 {
        return Err(bad("is read-only"));
    }
    let strides = iface.get_item("strides").ok();
    if strides.is_some_and(|s| !s.is_none()) {
        return Err(bad("is not C-contiguous"));
    }
    let shape: Vec<usize> = iface.get_item("shape")?.extract()?;
    let typestr: String = iface.get_item("typestr")?.extract()?;
    let itemsize: usize = typestr.get(2..).and_then(|n| n.parse().ok()).ok_or_else(|| bad("has an unknown item type"))?;
    let len = shape.iter().try_fold(itemsize, |a, &d| a.checked_mul(d)).ok_or_else(|| bad("is too large"))?;
    if ptr.checked_add(len).is_none() {
        return Err(bad("lies beyond the address space"));
    }
    Ok((ptr, len))
}

/// The byte ranges native writers hold now.
static CLAIMED: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// Byte ranges claimed for one writer until dropped.
pub(super) struct Claim {
    spans: Vec<(usize, usize)>,
}

impl Claim {
    /// Claims `spans` (`(address, bytes)`); an error, nothing claimed, if one of them overlaps
    /// another or a range claimed by a writer still at work.
    pub(super) fn new(spans: &[(usize, usize)]) -> Result<Self> {
        let mut claimed = CLAIMED.lock().unwrap_or_else(|p| p.into_inner());
        let overlaps = |a: &(usize, usize), b: &(usize, usize)| a.1 > 0 && b.1 > 0 && a.0 < b.0 + b.1 && b.0 < a.0 + a.1;
        for (i, s) in spans.iter().enumerate() {
            if claimed.iter().chain(&spans[..i]).any(|c| overlaps(s, c)) {
                return Err(Error::invalid_input(
                    "take_into: the output shares memory with an output being written (pass a fresh array for each batch)",
                ));
            }
        }
        claimed.extend_from_slice(spans);
        Ok(Self { spans: spans.to_vec() })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut claimed = CLAIMED.lock().unwrap_or_else(|p| p.into_inner());
        for s in &self.spans {
            if let Some(i) = claimed.iter().position(|c| c == s) {
                claimed.swap_remove(i);
            }
        }
    }
}
