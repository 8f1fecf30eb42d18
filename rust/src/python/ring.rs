//! `TakeRing`: a whole run of batches of fixed-width columns (an epoch of a training loop), read
//! ahead on native threads into a fixed ring of caller-allocated slots (page-locked tensors).
//!
//! [`TakePipeline`](super::pipeline::TakePipeline) is given each batch by the training thread:
//! per batch the thread allocates outputs, hands over the indices and wakes a reader. With a
//! ring, the training thread's part per batch is taking the next filled slot (`next`, no call
//! into Python, no wake-up when the batch is ready) and, now and then, giving slots back
//! (`release`) once what it did with them (a copy to a GPU) is done. The readers know every
//! batch's indices from the start, and batch `b` goes into slot `b % slots` as soon as batch
//! `b - slots` has given it back.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use pyo3::prelude::*;

use super::errors::{run, to_pyerr, IntoPyResult};
use super::outputs::{writable_array, Claim};
use super::pipeline::{plan_columns, read_batch};
use crate::error::{catch, Error, Result};
use crate::table::TableSnapshot;

/// How a batch ended: read (`true`), holding nulls in a column (`false`: the caller reads it
/// another way), or an error.
type Outcome = Result<bool>;

#[derive(Default)]
struct State {
    /// The next batch a reader takes.
    next: u64,
    /// Batches below this have given their slots back: batch `b` may be read once
    /// `b < released + slots`.
    released: u64,
    /// Outcomes of batches read and not collected yet.
    done: HashMap<u64, Outcome>,
    /// Readers waiting for a slot; whether the consumer waits for a batch (wake-ups are
    /// system calls: made only when someone waits).
    readers_waiting: usize,
    consumer_waiting: bool,
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Readers wait here for a slot (or the end).
    slot_free: Condvar,
    /// The consumer waits here for its batch.
    batch_done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What the readers need: the rows of every batch and where each slot's columns are.
struct Plan {
    snapshot: Arc<TableSnapshot>,
    /// Field index and bytes per row of each column.
    fields: Vec<(usize, usize)>,
    indices: Vec<u64>,
    addresses: bool,
    batch_size: usize,
    /// `(address, bytes)` of each slot's column arrays, each `batch_size` rows long.
    slots: Vec<Vec<(usize, usize)>>,
}

impl Plan {
    fn batches(&self) -> u64 {
        self.indices.len().div_ceil(self.batch_size) as u64
    }

    fn rows(&self, batch: u64) -> &[u64] {
        let start = batch as usize * self.batch_size;
        &self.indices[start..(start + self.batch_size).min(self.indices.len())]
    }

    /// Reads batch `batch` into its slot.
    fn read(&self, batch: u64) -> Result<bool> {
        let rows = self.rows(batch);
        let slot = &self.slots[(batch % self.slots.len() as u64) as usize];
        let outputs: Vec<(usize, usize)> =
            slot.iter().zip(&self.fields).map(|(&(ptr, _), &(_, width))| (ptr, rows.len() * width)).collect();
        // The ring's contract with `read_batch`: the slot's arrays are held by the ring (its
        // `arrays`) until every reader has stopped, each is at least `batch_size × width` bytes
        // (checked in `start`), and no one else writes them while this batch owns the slot: other
        // readers write other slots (batch numbers below `released + slots` map to distinct
        // slots), the consumer only reads a slot between `next` and `release`, and the ring's
        // claim keeps lancepy's other native writers away.
        read_batch(&self.snapshot, &self.fields, rows, self.addresses, &outputs)
    }
}

/// A run of batches read ahead on native threads into a ring of caller-allocated slots.
#[pyclass(name = "TakeRing", module = "lancepy._lancepy")]
pub struct TakeRing {
    shared: Arc<Shared>,
    plan: Arc<Plan>,
    workers: Vec<JoinHandle<()>>,
    /// The next batch `next` hands out.
    cursor: u64,
    /// The slots' arrays, alive while readers may write them.
    arrays: Vec<Py<PyAny>>,
    /// The slots' bytes, claimed while the ring is open (no other native writer gets them).
    claim: Option<Claim>,
}

impl TakeRing {
    /// Starts `threads` readers of `indices` (logical row indices, or row addresses with
    /// `addresses`) in batches of `batch_size`, into `slots` (per slot, one array per column).
    pub fn start(
        snapshot: Arc<TableSnapshot>,
        columns: Vec<String>,
        slots: Vec<Vec<Bound<'_, PyAny>>>,
        indices: Vec<u64>,
        batch_size: usize,
        threads: usize,
        addresses: bool,
    ) -> PyResult<Self> {
        let bad = |msg: String| to_pyerr(Error::invalid_input(msg));
        if batch_size == 0 {
            return Err(bad("batch_size must be positive".into()));
        }
        if slots.is_empty() {
            return Err(bad("a ring needs at least one slot".into()));
        }
        if threads == 0 || threads > 256 {
            return Err(bad(format!("threads must be 1 to 256, got {threads}")));
        }
        let planned = plan_columns(&snapshot, columns).py()?;
        let mut spans = Vec::with_capacity(slots.len());
        let mut arrays = Vec::new();
        for slot in &slots {
            if slot.len() != planned.len() {
                return Err(bad(format!("a slot holds {} arrays for {} columns", slot.len(), planned.len())));
            }
            let mut columns = Vec::with_capacity(slot.len());
            for (array, (name, _, width)) in slot.iter().zip(&planned) {
                let (ptr, len) = writable_array(array)?;
                let need = batch_size.checked_mul(*width).ok_or_else(|| bad("batch_size is too large".into()))?;
                if len != need {
                    return Err(bad(format!(
                        "a slot's array for {name:?} holds {len} bytes; {batch_size} rows of {width} bytes need {need}"
                    )));
                }
                columns.push((ptr, len));
                arrays.push(array.clone().unbind());
            }
            spans.push(columns);
        }
        let flat: Vec<(usize, usize)> = spans.iter().flatten().copied().collect();
        let claim = Claim::new(&flat).py()?; // also refuses slots that share memory
        let plan = Arc::new(Plan {
            snapshot,
            fields: planned.iter().map(|c| (c.1, c.2)).collect(),
            indices,
            addresses,
            batch_size,
            slots: spans,
        });
        let shared =
            Arc::new(Shared { state: Mutex::new(State::default()), slot_free: Condvar::new(), batch_done: Condvar::new() });
        let mut ring = Self { shared, plan, workers: Vec::new(), cursor: 0, arrays, claim: Some(claim) };
        let readers = threads.min(ring.plan.batches().max(1) as usize);
        let trackers = crate::io::scopes(); // the readers' reads count where the ring was started
        for i in 0..readers {
            let (shared, plan, trackers) = (ring.shared.clone(), ring.plan.clone(), trackers.clone());
            let worker = std::thread::Builder::new()
                .name(format!("lancepy-ring-{i}"))
                .spawn(move || crate::io::with_scopes(&trackers, || read_loop(&shared, &plan)))
                .map_err(|e| to_pyerr(Error::Internal(format!("starting a reading thread: {e}"))));
            match worker {
                Ok(w) => ring.workers.push(w),
                Err(e) => {
                    ring.shut_down();
                    return Err(e);
                }
            }
        }
        Ok(ring)
    }

    /// Stops the readers after the batches they are reading (which write into the slots).
    fn shut_down(&mut self) {
        {
            let mut st = self.shared.lock();
            st.closed = true;
        }
        self.shared.slot_free.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// A reader: takes the next batch whose slot is free, reads it, publishes the outcome.
fn read_loop(shared: &Shared, plan: &Plan) {
    let batches = plan.batches();
    let slots = plan.slots.len() as u64;
    loop {
        let batch = {
            let mut st = shared.lock();
            loop {
                if st.closed || st.next >= batches {
                    return;
                }
                if st.next < st.released + slots {
                    st.next += 1;
                    break st.next - 1;
                }
                st.readers_waiting += 1;
                st = shared.slot_free.wait(st).unwrap_or_else(|p| p.into_inner());
                st.readers_waiting -= 1;
            }
        };
        let outcome = catch(|| plan.read(batch));
        let mut st = shared.lock();
        st.done.insert(batch, outcome);
        if st.consumer_waiting {
            shared.batch_done.notify_all();
        }
    }
}

#[pymethods]
impl TakeRing {
    /// How many batches the run holds.
    #[getter]
    fn batches(&self) -> u64 {
        self.plan.batches()
    }

    /// The number of the batch `next` hands out next.
    #[getter]
    fn position(&self) -> u64 {
        self.cursor
    }

    /// The next batch, in order: `(slot, rows, read)` — its rows fill the first `rows` rows of
    /// slot `slot`'s arrays, or, with `read` false, a column of it holds nulls (read the batch
    /// another way) — or `None` after the last. Waits (the GIL released, Ctrl-C honoured) while
    /// it is being read; raises the read's error. The slot stays the caller's until `release`.
    fn next(&mut self, py: Python<'_>) -> PyResult<Option<(usize, usize, bool)>> {
        if self.claim.is_none() {
            return Err(to_pyerr(Error::invalid_input("the ring is closed")));
        }
        let batch = self.cursor;
        if batch >= self.plan.batches() {
            return Ok(None);
        }
        let ready = {
            let mut st = self.shared.lock();
            if batch >= st.released + self.plan.slots.len() as u64 {
                // Its slot is still the caller's: it would wait forever.
                return Err(to_pyerr(Error::invalid_input(format!(
                    "batch {batch} goes into the slot batch {} holds: release it first",
                    batch - self.plan.slots.len() as u64
                ))));
            }
            st.done.remove(&batch)
        };
        let outcome = match ready {
            Some(outcome) => outcome,
            None => {
                let shared = self.shared.clone();
                run(py, || loop {
                    let mut st = shared.lock();
                    if let Some(outcome) = st.done.remove(&batch) {
                        st.consumer_waiting = false;
                        return Ok(outcome);
                    }
                    st.consumer_waiting = true;
                    let (st, _) =
                        shared.batch_done.wait_timeout(st, Duration::from_millis(50)).unwrap_or_else(|p| p.into_inner());
                    drop(st);
                    crate::interrupt::check()?;
                })?
            }
        };
        self.cursor += 1;
        let read = outcome.py()?;
        let slot = (batch % self.plan.slots.len() as u64) as usize;
        Ok(Some((slot, self.plan.rows(batch).len(), read)))
    }

    /// Whether batch number `batch` is read (`next` will not wait for it).
    fn ready(&self, batch: u64) -> bool {
        batch < self.cursor || self.shared.lock().done.contains_key(&batch)
    }

    /// Gives back the slots of every batch below `upto` (only batches `next` handed out): the
    /// readers may overwrite them from now on.
    fn release(&mut self, upto: u64) -> PyResult<()> {
        if upto > self.cursor {
            return Err(to_pyerr(Error::invalid_input(format!(
                "batch {} is not handed out yet: release up to {} at most",
                upto.saturating_sub(1),
                self.cursor
            ))));
        }
        let mut st = self.shared.lock();
        if upto > st.released {
            st.released = upto;
            if st.readers_waiting > 0 {
                self.shared.slot_free.notify_all();
            }
        }
        Ok(())
    }

    /// Stops the readers once the batches they are reading are done. Idempotent; a dropped
    /// ring does the same.
    fn close(&mut self, py: Python<'_>) {
        py.allow_threads(|| self.shut_down());
        self.claim = None;
        self.arrays.clear();
    }

    fn __repr__(&self) -> String {
        format!(
            "TakeRing(batches={}, slots={}, position={}, threads={})",
            self.plan.batches(),
            self.plan.slots.len(),
            self.cursor,
            self.workers.len()
        )
    }
}

impl Drop for TakeRing {
    fn drop(&mut self) {
        // The readers write into arrays `arrays` keeps alive: they stop before those go.
        self.shut_down();
    }
}
