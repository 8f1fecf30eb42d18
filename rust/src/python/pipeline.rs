//! `TakePipeline`: batches of fixed-width columns read ahead on native threads, each gathered
//! straight into arrays the caller allocated (page-locked tensors of a training loop), with no
//! Python on the reading side at all.
//!
//! The training thread submits batch after batch (`submit(indices, outputs)` returns a ticket)
//! and collects them in its own order (`wait(ticket)`, the GIL released while it waits). The
//! worker threads never take the GIL: the output arrays are kept alive by the pipeline, in
//! Python objects it holds, from `submit` until `wait` hands them back, and a pipeline that is
//! dropped or closed first waits for the reads in flight (they write into those arrays).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use pyo3::prelude::*;

use super::errors::{run, to_pyerr, IntoPyResult};
use super::file::extract_indices;
use super::outputs::{writable_array, Claim};
use crate::error::{catch, Error, Result};
use crate::file::reader::fixed_byte_width;
use crate::table::scan::ScanOptions;
use crate::table::TableSnapshot;

/// One batch to read: where each column's values go (`(address, bytes)` of arrays the pipeline
/// keeps alive until the batch is collected).
struct Job {
    ticket: u64,
    indices: Vec<u64>,
    addresses: bool,
    outputs: Vec<(usize, usize)>,
    /// The outputs' bytes, held for this job until it is read.
    _claim: Claim,
}

/// How a batch ended: read (`true`), or holding nulls in a column (`false`: the caller reads
/// it another way), or an error.
type Outcome = Result<bool>;

#[derive(Default)]
struct Finished {
    outcomes: Mutex<HashMap<u64, Outcome>>,
    ready: Condvar,
}

/// Batches of fixed-width columns read on native threads into caller-allocated arrays.
#[pyclass(name = "TakePipeline", module = "lancepy._lancepy")]
pub struct TakePipeline {
    /// Field index and bytes per row of each column, in output order.
    columns: Vec<(String, usize, usize)>,
    jobs: Option<mpsc::Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
    finished: Arc<Finished>,
    /// The output arrays of each batch in flight, kept alive until it is collected.
    outputs: HashMap<u64, Vec<Py<PyAny>>>,
    next_ticket: AtomicU64,
}

/// `(name, field index, bytes per row)` of each of `columns`; an error for a column that is not
/// of a fixed width.
pub(super) fn plan_columns(snapshot: &TableSnapshot, columns: Vec<String>) -> Result<Vec<(String, usize, usize)>> {
    let projection = snapshot.projection(Some(&columns))?;
    let schema = snapshot.output_schema(&projection, ScanOptions::default());
    let mut planned = Vec::with_capacity(columns.len());
    for ((name, &fidx), field) in columns.into_iter().zip(&projection).zip(schema.fields()) {
        let width = fixed_byte_width(field.data_type())
            .ok_or_else(|| Error::invalid_input(format!("column {name:?} ({}) is not of a fixed width", field.data_type())))?;
        planned.push((name, fidx, width));
    }
    Ok(planned)
}

impl TakePipeline {
    /// A pipeline over `snapshot` reading `columns` (each a fixed-width type) on `threads` threads.
    pub fn start(snapshot: Arc<TableSnapshot>, columns: Vec<String>, threads: usize) -> Result<Self> {
        let planned = plan_columns(&snapshot, columns)?;
        let (send, receive) = mpsc::channel::<Job>();
        let receive = Arc::new(Mutex::new(receive));
        let finished = Arc::new(Finished::default());
        let mut workers = Vec::with_capacity(threads.max(1));
        for i in 0..threads.max(1) {
            let (receive, finished, snapshot) = (receive.clone(), finished.clone(), snapshot.clone());
            let fields: Vec<(usize, usize)> = planned.iter().map(|c| (c.1, c.2)).collect();
            // The pipeline's reads count for the trackers current where it was started.
            let trackers = crate::io::scopes();
            let worker = std::thread::Builder::new()
                .name(format!("lancepy-take-{i}"))
                .spawn(move || {
                    crate::io::with_scopes(&trackers, || loop {
                        // The lock is held only to take the next job.
                        let job = receive.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok(job) = job else { return }; // the pipeline is closed
                        let outcome = catch(|| read_batch(&snapshot, &fields, &job.indices, job.addresses, &job.outputs));
                        let ticket = job.ticket;
                        drop(job); // its bytes are written: released before the batch is handed back
                        let mut done = finished.outcomes.lock().unwrap_or_else(|p| p.into_inner());
                        done.insert(ticket, outcome);
                        finished.ready.notify_all();
                    })
                })
                .map_err(|e| Error::Internal(format!("starting a reading thread: {e}")))?;
            workers.push(worker);
        }
        Ok(Self {
            columns: planned,
            jobs: Some(send),
            workers,
            finished,
            outputs: HashMap::new(),
            next_ticket: AtomicU64::new(0),
        })
    }

    /// Stops the workers after the batches in flight (whose outputs they write) are read.
    fn shut_down(&mut self) {
        self.jobs = None; // the workers' `recv` fails once the queue is empty
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// Reads one batch (the rows at logical `indices`, or at row addresses with `addresses`) into
/// `outputs` (`(address, bytes)` per column): each column gathered straight from the files when
/// stored row by row, else decoded and copied. `Ok(false)` when a decoded column holds nulls (or
/// is not plain fixed-width values after all).
///
/// The caller guarantees that each output span is writable memory of exactly `bytes` bytes that
/// stays alive, and that nothing else writes it, until this function returns.
pub(super) fn read_batch(
    snapshot: &TableSnapshot,
    columns: &[(usize, usize)],
    indices: &[u64],
    addresses: bool,
    outputs: &[(usize, usize)],
) -> Result<bool> {
    let requests = if addresses { snapshot.address_requests(indices, false)? } else { snapshot.index_requests(indices)? };
    if requests.len() != indices.len() {
        return Err(Error::invalid_input("some row addresses are of deleted rows"));
    }
    for (&(fidx, _), &(ptr, len)) in columns.iter().zip(outputs) {
        // SAFETY: the caller's contract above. `TakePipeline::submit` checked that the array at
        // `ptr` is writable, C-contiguous and `len` bytes long, and the pipeline holds a reference
        // to it until `wait` hands the batch back, which happens only after this function
        // returned (the outcome is published last), or until every worker has stopped
        // (`shut_down`, run before the references are dropped); `TakeRing` does the same per
        // slot. The job's (or ring's) claim holds these bytes: no other native writer of
        // lancepy's (another job, `take_into`) gets them meanwhile.
        let dest = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
        if snapshot.take_fixed_into(&requests, fidx, dest)? {
            continue;
        }
        let batch = snapshot.take_requests(&requests, &[fidx])?;
        let column = batch.column(0);
        let Some(values) = super::ffi::fixed_bytes(column.as_ref()) else { return Ok(false) };
        if values.len() != dest.len() {
            return Err(Error::Internal(format!("a batch column holds {} bytes, not {}", values.len(), dest.len())));
        }
        dest.copy_from_slice(values.as_slice());
    }
    Ok(true)
}

#[pymethods]
impl TakePipeline {
    /// The columns read, in order.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.columns.iter().map(|c| c.0.clone()).collect()
    }

    /// Queues a batch: the rows at logical `indices` (or row addresses of live rows, with
    /// `addresses`), each column's values written into the matching array of `outputs`
    /// (writable, C-contiguous numpy arrays of exactly rows × value bytes). Returns the ticket
    /// to `wait` for.
    #[pyo3(signature = (indices, outputs, *, addresses=false))]
    fn submit(&mut self, indices: &Bound<'_, PyAny>, outputs: Vec<Bound<'_, PyAny>>, addresses: bool) -> PyResult<u64> {
        let indices = extract_indices(indices, || "row indices are 64-bit".to_string())?;
        if outputs.len() != self.columns.len() {
            return Err(to_pyerr(Error::invalid_input(format!("{} outputs for {} columns", outputs.len(), self.columns.len()))));
        }
        let mut spans = Vec::with_capacity(outputs.len());
        for (out, (name, _, width)) in outputs.iter().zip(&self.columns) {
            let (ptr, len) = writable_array(out)?;
            if Some(len) != indices.len().checked_mul(*width) {
                return Err(to_pyerr(Error::invalid_input(format!(
                    "the output for {name:?} holds {len} bytes; {} rows of {width} bytes need {}",
                    indices.len(),
                    indices.len().saturating_mul(*width)
                ))));
            }
            spans.push((ptr, len));
        }
        let jobs = self.jobs.as_ref().ok_or_else(|| to_pyerr(Error::invalid_input("the pipeline is closed")))?;
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        self.outputs.insert(ticket, outputs.into_iter().map(Bound::unbind).collect());
        let claim = match Claim::new(&spans) {
            Ok(claim) => claim,
            Err(e) => {
                self.outputs.remove(&ticket);
                return Err(to_pyerr(e));
            }
        };
        let job = Job { ticket, indices, addresses, outputs: spans, _claim: claim };
        if jobs.send(job).is_err() {
            self.outputs.remove(&ticket);
            return Err(to_pyerr(Error::Internal("the reading threads stopped".into())));
        }
        Ok(ticket)
    }

    /// Whether batch `ticket` is read (`wait` will not block).
    fn ready(&self, ticket: u64) -> bool {
        self.finished.outcomes.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&ticket)
    }

    /// Waits (the GIL released, Ctrl-C honoured) for batch `ticket`, and hands back its
    /// outputs, filled; `None` when a column of it holds nulls (the outputs are then undefined:
    /// read the batch another way). Raises the read's error, if any.
    fn wait(&mut self, py: Python<'_>, ticket: u64) -> PyResult<Option<Vec<Py<PyAny>>>> {
        if !self.outputs.contains_key(&ticket) {
            return Err(to_pyerr(Error::invalid_input(format!("no batch {ticket} is in flight"))));
        }
        let finished = self.finished.clone();
        // Interrupted (Ctrl-C), the batch may still be in flight: its outputs stay held.
        let outcome = run(py, || loop {
            let mut done = finished.outcomes.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(outcome) = done.remove(&ticket) {
                return Ok(outcome);
            }
            let (guard, _) = finished.ready.wait_timeout(done, Duration::from_millis(50)).unwrap_or_else(|p| p.into_inner());
            drop(guard);
            crate::interrupt::check()?;
        })?;
        let outputs = self.outputs.remove(&ticket).unwrap_or_default();
        Ok(outcome.py()?.then_some(outputs))
    }

    /// Stops the reading threads once the batches in flight are read. Idempotent; a dropped
    /// pipeline does the same.
    fn close(&mut self, py: Python<'_>) {
        py.allow_threads(|| self.shut_down());
        self.outputs.clear();
    }

    fn __repr__(&self) -> String {
        format!("TakePipeline(columns={:?}, threads={})", self.columns(), self.workers.len())
    }
}

impl Drop for TakePipeline {
    fn drop(&mut self) {
        // The workers write into arrays `outputs` keeps alive: they finish before those go.
        self.shut_down();
    }
}
