//! A scan read on demand, a round of tasks at a time.
//!
//! A round is a core's worth of scan tasks, read in parallel. Tasks after the current round
//! can be read ahead on the I/O pool while the consumer works on the current one (a reader's
//! `batch_readahead`, in tasks): on object storage, where a task mostly waits for its
//! requests, one round is read ahead by default, so a stream's time is not the sum of its
//! rounds' latencies; locally none is (decoding is the work, and the consumer asking for
//! the next batch is what starts it). Memory stays bounded by the current round and the
//! rounds read ahead.
//!
//! Given the rows a task is planned to read ([`ScanStream::with_round_rows`]), a round also
//! takes more tasks while they hold fewer rows than that per core (fragments smaller than a
//! task make tasks of a few rows; one round each would pay a pool's hand-off per few rows),
//! and can coalesce consecutive batches into batches of up to the batch size
//! ([`ScanStream::coalesce_into`]).

use std::collections::VecDeque;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::RecordBatch;

use super::scan::{ScanOptions, ScanTask, TableSnapshot};
use crate::error::{catch, Error, Result};

/// The batches of a scan's tasks, in task order.
pub struct ScanStream {
    snapshot: Arc<TableSnapshot>,
    tasks: VecDeque<ScanTask>,
    ready: VecDeque<RecordBatch>,
    projection: Arc<[usize]>,
    opts: ScanOptions,
    /// Tasks per round.
    round: usize,
    /// Rounds to keep read ahead of the one being consumed.
    rounds_ahead: usize,
    /// The rounds read ahead, oldest first.
    ahead: VecDeque<Round>,
    /// Rows a round reaches before it stops taking tasks (beyond its first `round`).
    round_rows: u64,
    /// Concatenate consecutive batches into batches of up to this many rows.
    coalesce: Option<u64>,
    /// The last batches of the rounds consumed so far, fewer rows together than `coalesce`:
    /// held for the next round's to join (rounds of many small fragments would otherwise
    /// end each in a small batch, and the consumer joins or evaluates one more).
    carry: Vec<RecordBatch>,
    /// Most rows of a batch handed out (tasks may read more at a time).
    out_rows: usize,
}

/// A round being read on the I/O pool.
struct Round {
    /// The process that started the job: a child forked since then has this receiver but
    /// not the job, and reads the round itself.
    pid: u32,
    tasks: Vec<ScanTask>,
    rx: mpsc::Receiver<Result<Vec<RecordBatch>>>,
}

impl ScanStream {
    /// A stream of `tasks` (from [`TableSnapshot::plan_scan`]) of the fields `projection`,
    /// with at least `read_ahead` tasks read ahead of the round being consumed (by default
    /// one round on object storage, none locally).
    pub fn new(
        snapshot: Arc<TableSnapshot>,
        tasks: Vec<ScanTask>,
        projection: Vec<usize>,
        opts: ScanOptions,
        read_ahead: Option<usize>,
    ) -> Self {
        let round = crate::parallel::cpu_pool().current_num_threads().max(1);
        let read_ahead = read_ahead.unwrap_or(if snapshot.is_remote() { round } else { 0 });
        let opts = snapshot.admission_for(&tasks, opts);
        Self {
            snapshot,
            tasks: tasks.into(),
            ready: VecDeque::new(),
            projection: projection.into(),
            opts,
            round,
            rounds_ahead: read_ahead.div_ceil(round),
            ahead: VecDeque::new(),
            round_rows: 0,
            coalesce: None,
            carry: Vec::new(),
            out_rows: usize::MAX,
        }
    }

    /// Locally, rounds take tasks until they hold `task_rows` rows per core (at least a task
    /// per core): tasks of fragments smaller than that are read many to a round. On object
    /// storage a round stays a task per core: rounds are what is read ahead there, and a
    /// round of many small fragments would fetch them all ahead of the consumer.
    pub fn with_round_rows(mut self, task_rows: u64) -> Self {
        if !self.snapshot.is_remote() {
            self.round_rows = task_rows.max(1).saturating_mul(self.round as u64);
        }
        self
    }

    /// With `coalesce`, consecutive batches are concatenated into batches of up to `rows`
    /// rows, across rounds (a batch is never split here; see [`ScanStream::cut_into`]).
    pub fn coalesce_into(mut self, rows: u64, coalesce: bool) -> Self {
        self.coalesce = coalesce.then_some(rows.max(1));
        self
    }

    /// Hands out what the tasks read in batches of at most `rows` rows (zero-copy slices),
    /// for tasks planned larger than the batches asked for (see
    /// [`TableSnapshot::read_unit_rows`]).
    pub fn cut_into(mut self, rows: u64) -> Self {
        self.out_rows = usize::try_from(rows).unwrap_or(usize::MAX).max(1);
        self
    }

    fn take_round(&mut self) -> Vec<ScanTask> {
        let mut n = self.round.min(self.tasks.len());
        let mut rows: u64 = self.tasks.iter().take(n).map(|t| t.rows.end - t.rows.start).sum();
        while n < self.tasks.len() && rows < self.round_rows {
            rows += self.tasks[n].rows.end - self.tasks[n].rows.start;
            n += 1;
        }
        self.tasks.drain(..n).collect()
    }

    /// A round's `batches` with runs of consecutive ones concatenated up to the coalescing
    /// size; while rounds remain, the last run, if short of it, is held back for the next.
    fn coalesced(&mut self, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
        let Some(max) = self.coalesce else {
            return Ok(batches);
        };
        let mut runs = coalesce_runs(std::mem::take(&mut self.carry).into_iter().chain(batches), max);
        let more = !(self.tasks.is_empty() && self.ahead.is_empty());
        if more {
            if let Some(last) = runs.last() {
                if last.iter().map(|b| b.num_rows() as u64).sum::<u64>() < max {
                    self.carry = runs.pop().unwrap_or_default();
                }
            }
        }
        runs.into_iter().map(concat_run).collect()
    }

    /// Starts reading `tasks` on the I/O pool.
    fn start(&self, tasks: Vec<ScanTask>) -> Round {
        let (tx, rx) = mpsc::sync_channel(1);
        let (snapshot, projection, opts, job) = (self.snapshot.clone(), self.projection.clone(), self.opts, tasks.clone());
        let trackers = crate::io::scopes();
        crate::parallel::io_pool().spawn(move || {
            // A panic on a pool thread would abort the process: it becomes an error instead.
            let batches = crate::io::with_scopes(&trackers, || catch(|| snapshot.run_tasks(job, &projection, opts)));
            // The stream may have been dropped meanwhile; then nobody wants the batches.
            let _ = tx.send(batches);
        });
        Round { pid: std::process::id(), tasks, rx }
    }

    /// Waits for `round` (polling for Ctrl-C under an interruptible operation).
    fn finish(&self, round: Round) -> Result<Vec<RecordBatch>> {
        if round.pid != std::process::id() {
            return self.snapshot.run_tasks(round.tasks, &self.projection, self.opts);
        }
        let token = crate::interrupt::current();
        let mut got = None;
        let mut wait = |timeout: Duration| {
            if token.as_ref().is_some_and(|t| t.is_cancelled()) {
                return true;
            }
            match round.rx.recv_timeout(timeout) {
                Ok(r) => {
                    got = Some(r);
                    true
                }
                Err(RecvTimeoutError::Timeout) => false,
                Err(RecvTimeoutError::Disconnected) => true,
            }
        };
        match &token {
            Some(t) => t.wait(&mut wait),
            None => while !wait(Duration::from_secs(60)) {},
        }
        crate::interrupt::check()?;
        got.unwrap_or_else(|| Err(Error::internal("a scan's read-ahead job ended without a result")))
    }

    fn next_round(&mut self) -> Result<Vec<RecordBatch>> {
        if self.rounds_ahead == 0 {
            let tasks = self.take_round();
            return self.snapshot.run_tasks(tasks, &self.projection, self.opts);
        }
        let current = match self.ahead.pop_front() {
            Some(round) => round,
            None => {
                let tasks = self.take_round();
                self.start(tasks)
            }
        };
        while self.ahead.len() < self.rounds_ahead && !self.tasks.is_empty() {
            let tasks = self.take_round();
            let round = self.start(tasks);
            self.ahead.push_back(round);
        }
        self.finish(current)
    }
}

/// `batches` with runs of consecutive ones concatenated into batches of up to `max_rows`
/// rows (a batch is never split; one over `max_rows` stays as it is).
pub fn coalesce_batches(batches: Vec<RecordBatch>, max_rows: u64) -> Result<Vec<RecordBatch>> {
    if batches.len() < 2 {
        return Ok(batches);
    }
    coalesce_runs(batches, max_rows).into_iter().map(concat_run).collect()
}

/// `batches` cut into runs of consecutive batches of up to `max_rows` rows together (a
/// batch over `max_rows` is a run of its own).
fn coalesce_runs(batches: impl IntoIterator<Item = RecordBatch>, max_rows: u64) -> Vec<Vec<RecordBatch>> {
    let mut runs: Vec<Vec<RecordBatch>> = Vec::new();
    let mut run: Vec<RecordBatch> = Vec::new();
    let mut rows = 0u64;
    for b in batches {
        if !run.is_empty() && rows + b.num_rows() as u64 > max_rows {
            runs.push(std::mem::take(&mut run));
            rows = 0;
        }
        rows += b.num_rows() as u64;
        run.push(b);
    }
    if !run.is_empty() {
        runs.push(run);
    }
    runs
}

/// One batch of a run's batches (the batch itself when the run has one).
fn concat_run(mut run: Vec<RecordBatch>) -> Result<RecordBatch> {
    if run.len() == 1 {
        return Ok(run.pop().expect("a run of one batch"));
    }
    let schema = run.first().map(|b| b.schema()).ok_or_else(|| Error::internal("an empty run of batches"))?;
    Ok(arrow_select::concat::concat_batches(&schema, run.iter())?)
}

impl Iterator for ScanStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(b) = self.ready.pop_front() {
                return Some(Ok(b));
            }
            if self.tasks.is_empty() && self.ahead.is_empty() {
                if self.carry.is_empty() {
                    return None;
                }
            }
            let batches = if self.tasks.is_empty() && self.ahead.is_empty() {
                concat_run(std::mem::take(&mut self.carry)).map(|b| vec![b])
            } else {
                self.next_round().and_then(|b| self.coalesced(b))
            };
            match batches {
                Ok(batches) => {
                    for b in batches {
                        if b.num_rows() <= self.out_rows {
                            self.ready.push_back(b);
                            continue;
                        }
                        let mut at = 0;
                        while at < b.num_rows() {
                            let len = self.out_rows.min(b.num_rows() - at);
                            self.ready.push_back(b.slice(at, len));
                            at += len;
                        }
                    }
                }
                Err(e) => {
                    self.tasks.clear();
                    self.ahead.clear();
                    self.carry.clear();
                    return Some(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};

    use super::ScanStream;
    use crate::file::{FileVersion, LanceSchema};
    use crate::format::tablepb;
    use crate::io::Store;
    use crate::table::scan::{ScanOptions, TableSnapshot};
    use crate::table::write::{write_fragments, FragmentWriteOptions};

    /// 100 rows (`id` 0..100) in files of 30 rows; the data files' names.
    fn snapshot() -> (Arc<TableSnapshot>, Store, Vec<String>) {
        let store = Store::open(&format!("memory://stream-{}", uuid::Uuid::new_v4().simple())).unwrap();
        let arrow = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let schema = LanceSchema::from_arrow(&arrow).unwrap();
        let batch = RecordBatch::try_new(arrow, vec![Arc::new(Int64Array::from_iter_values(0..100))]).unwrap();
        let opts = FragmentWriteOptions {
            max_rows_per_file: 30,
            max_bytes_per_file: u64::MAX,
            version: FileVersion::V2_1,
            external_blobs: Default::default(),
            max_page_bytes: crate::file::writer::DEFAULT_MAX_PAGE_BYTES,
            blob_pack_file_max: crate::table::blob_write::PACK_FILE_MAX,
            max_rows_per_group: crate::file::legacy::DEFAULT_ROWS_PER_BATCH,
        };
        let mut files = Vec::new();
        let mut frags =
            write_fragments(&store, &schema, vec![Ok(batch)].into_iter(), opts, |f| files.push(f.to_string())).unwrap();
        for (i, f) in frags.iter_mut().enumerate() {
            f.id = i as u64;
        }
        let manifest = tablepb::Manifest { fields: schema.to_pb_fields().unwrap(), fragments: frags, ..Default::default() };
        (Arc::new(TableSnapshot::new(store.clone(), &manifest).unwrap()), store, files)
    }

    fn ids(batches: impl Iterator<Item = crate::error::Result<RecordBatch>>) -> Vec<i64> {
        batches.flat_map(|b| b.unwrap().column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec()).collect()
    }

    #[test]
    fn batches_come_in_task_order_whatever_is_read_ahead() {
        let (snap, _, _) = snapshot();
        let proj = snap.projection(None).unwrap();
        let opts = ScanOptions::default();
        for read_ahead in [None, Some(0), Some(1), Some(3), Some(50)] {
            let tasks = snap.plan_scan(None, 0, None, 7, opts).unwrap();
            let stream = ScanStream::new(snap.clone(), tasks, proj.clone(), opts, read_ahead);
            assert_eq!(ids(stream), (0..100).collect::<Vec<_>>(), "read_ahead {read_ahead:?}");
        }
    }

    #[test]
    fn read_units_are_cut_into_the_batches_asked_for() {
        let (snap, _, _) = snapshot();
        let proj = snap.projection(None).unwrap();
        let opts = ScanOptions::default();
        // 8-byte rows: a unit is a multiple of the batch, capped at 64K rows.
        assert_eq!(snap.read_unit_rows(&proj, 7), 7 * (65_536 / 7));
        assert_eq!(snap.read_unit_rows(&proj, 100_000), 100_000);
        assert_eq!(snap.read_unit_rows(&proj, 0), 65_536);
        for (read_rows, out_rows) in [(20, 7), (30, 30), (7, 3), (100, 1)] {
            let tasks = snap.plan_scan(None, 3, Some(90), read_rows, opts).unwrap();
            let batches: Vec<RecordBatch> =
                ScanStream::new(snap.clone(), tasks, proj.clone(), opts, None).cut_into(out_rows).map(|b| b.unwrap()).collect();
            assert!(batches.iter().all(|b| b.num_rows() as u64 <= out_rows && b.num_rows() > 0));
            assert_eq!(ids(batches.into_iter().map(Ok)), (3..93).collect::<Vec<_>>(), "{read_rows} / {out_rows}");
        }
    }

    #[test]
    fn an_error_read_ahead_ends_the_stream() {
        let (snap, store, files) = snapshot();
        let proj = snap.projection(None).unwrap();
        let opts = ScanOptions::default();
        let tasks = snap.plan_scan(None, 0, None, 10, opts).unwrap();
        let mut stream = ScanStream::new(snap, tasks, proj, opts, Some(2));
        assert!(stream.next().unwrap().is_ok());
        // The last file disappears: the stream reaches it, fails once, then ends.
        store.delete(files.last().unwrap()).unwrap();
        let rest: Vec<_> = stream.collect();
        assert!(rest.last().unwrap().is_err(), "{:?}", rest.iter().map(|r| r.is_ok()).collect::<Vec<_>>());
        assert!(rest[..rest.len() - 1].iter().all(|r| r.is_ok()));
    }

    #[test]
    fn coalesced_batches_fill_up_across_rounds() {
        // Tasks of at most 7 rows (files of 30), rounds of a task per core: rounds end short
        // of the rows asked for, and their last rows join the next round's.
        let (snap, _, _) = snapshot();
        let proj = snap.projection(None).unwrap();
        let opts = ScanOptions::default();
        for (read_ahead, rows) in [(None, 20), (Some(2), 20), (None, 7), (None, 1000), (Some(5), 33)] {
            let tasks = snap.plan_scan(None, 0, None, 7, opts).unwrap();
            let batches: Vec<RecordBatch> = ScanStream::new(snap.clone(), tasks, proj.clone(), opts, read_ahead)
                .coalesce_into(rows, true)
                .map(|b| b.unwrap())
                .collect();
            let sizes: Vec<usize> = batches.iter().map(|b| b.num_rows()).collect();
            // Greedy across rounds: no two neighbours would have fitted in one batch.
            assert!(sizes.windows(2).all(|w| (w[0] + w[1]) as u64 > rows), "{rows}: {sizes:?}");
            assert!(sizes.iter().all(|&n| n as u64 <= rows.max(7)), "{rows}: {sizes:?}");
            assert_eq!(ids(batches.into_iter().map(Ok)), (0..100).collect::<Vec<_>>(), "{rows}");
        }
    }
}
