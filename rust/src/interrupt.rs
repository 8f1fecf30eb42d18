//! Stopping long operations early (Ctrl-C), without Python in the core.
//!
//! A caller that can be interrupted (the Python bindings) runs an operation under an
//! [`Interrupt`] with [`Interrupt::run`]. Long loops call [`check`] between units of work
//! (pages, chunks, batches); it returns [`Error::Interrupted`] once the operation is cancelled,
//! so the operation unwinds through its ordinary error paths (a writer refuses further use, a
//! dataset write commits nothing).
//!
//! Who notices the signal: the token's `poll` function, called by [`check`] on the thread that
//! started the operation at most every [`POLL_INTERVAL`]. For Python it re-acquires the GIL and
//! runs the interpreter's signal handlers (only possible on the thread that owns the
//! operation, which for Ctrl-C is the main thread). While that thread waits for work it handed
//! to the CPU pool ([`crate::parallel::map`]), it keeps polling ([`Interrupt::wait`]), and the
//! pool threads see the cancellation through the token they inherit.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How often the owning thread looks for a pending signal.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Returns `true` when the operation should stop (e.g. Python raised `KeyboardInterrupt`).
pub type PollFn = dyn Fn() -> bool + Send + Sync;

/// The cancellation state of one operation.
pub struct Interrupt {
    cancelled: AtomicBool,
    poll: Option<Box<PollFn>>,
    owner: ThreadId,
    start: Instant,
    /// Microseconds after `start` of the last poll.
    last_poll_us: AtomicU64,
}

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupt").field("cancelled", &self.is_cancelled()).finish()
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Interrupt>>> = const { RefCell::new(None) };
}

impl Interrupt {
    /// A token owned by the calling thread; `poll` (if any) is called there to look for a
    /// signal.
    pub fn new(poll: Option<Box<PollFn>>) -> Arc<Self> {
        Arc::new(Self {
            cancelled: AtomicBool::new(false),
            poll,
            owner: std::thread::current().id(),
            start: Instant::now(),
            last_poll_us: AtomicU64::new(0),
        })
    }

    /// Cancels the operation: every later [`check`] under this token fails.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    /// Whether the operation was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Runs `f` with `self` as the calling thread's current token (restoring the previous one
    /// afterwards, also on unwinding).
    pub fn run<R>(self: &Arc<Self>, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<Arc<Interrupt>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let prev = self.0.take();
                CURRENT.with(|c| *c.borrow_mut() = prev);
            }
        }
        let prev = CURRENT.with(|c| c.borrow_mut().replace(self.clone()));
        let _restore = Restore(prev);
        f()
    }

    /// Polls for a signal if this is the owning thread and the last poll is
    /// [`POLL_INTERVAL`] old; cancels on a positive answer.
    fn maybe_poll(&self) {
        let Some(poll) = &self.poll else { return };
        if std::thread::current().id() != self.owner {
            return;
        }
        let now = self.start.elapsed().as_micros() as u64;
        let last = self.last_poll_us.load(Ordering::Relaxed);
        if now.saturating_sub(last) < POLL_INTERVAL.as_micros() as u64 {
            return;
        }
        self.last_poll_us.store(now, Ordering::Relaxed);
        if poll() {
            self.cancel();
        }
    }

    /// Waits until `wait_for` says the awaited work is over, polling for signals every
    /// [`POLL_INTERVAL`] meanwhile (on the owning thread). `wait_for(timeout)` blocks for at
    /// most `timeout` and returns whether the work is over.
    pub fn wait(&self, mut wait_for: impl FnMut(Duration) -> bool) {
        while !wait_for(POLL_INTERVAL) {
            self.maybe_poll();
        }
    }
}

/// The calling thread's current token, if an interruptible operation is running on it.
pub fn current() -> Option<Arc<Interrupt>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Fails with [`Error::Interrupted`] if the current operation was cancelled (polling for a
/// signal first when it is due). Cheap enough to call once per page or chunk.
pub fn check() -> Result<()> {
    CURRENT.with(|c| match c.borrow().as_ref() {
        Some(t) => {
            t.maybe_poll();
            if t.is_cancelled() {
                Err(Error::Interrupted)
            } else {
                Ok(())
            }
        }
        None => Ok(()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn check_fails_only_under_a_cancelled_token() {
        assert!(check().is_ok());
        let t = Interrupt::new(None);
        t.run(|| {
            assert!(check().is_ok());
            t.cancel();
            assert!(matches!(check(), Err(Error::Interrupted)));
        });
        assert!(check().is_ok(), "the token is gone after run");
    }

    #[test]
    fn poll_runs_on_the_owner_at_most_every_interval() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let t = Interrupt::new(Some(Box::new(move || c.fetch_add(1, Ordering::SeqCst) >= 2)));
        t.run(|| {
            for _ in 0..1000 {
                assert!(check().is_ok());
            }
            assert!(calls.load(Ordering::SeqCst) <= 1);
            let worker = t.clone();
            std::thread::spawn(move || {
                worker.run(|| {
                    std::thread::sleep(POLL_INTERVAL * 2);
                    check().unwrap();
                })
            })
            .join()
            .unwrap();
            assert!(calls.load(Ordering::SeqCst) <= 1, "other threads never poll");
            let mut result = Ok(());
            for _ in 0..5 {
                std::thread::sleep(POLL_INTERVAL);
                result = check();
            }
            assert!(matches!(result, Err(Error::Interrupted)));
        });
    }

    /// A cancelled operation stops reads and writes with `Interrupted`, and a writer stopped
    /// in the middle of a flush refuses to go on (its file could only be incomplete).
    #[test]
    fn reads_and_writes_stop_under_a_cancelled_token() {
        use crate::file::{FileReader, FileWriter, WriterOptions};
        use arrow_array::{Int64Array, RecordBatch};

        let uri = format!("memory://interrupt-{}/f.lance", uuid::Uuid::new_v4().simple());
        let batch = RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from_iter_values(0..10_000)) as _)]).unwrap();
        let options = WriterOptions { max_page_bytes: 8 * 1024, ..Default::default() };
        let mut w = FileWriter::try_new(&uri, &batch.schema(), options.clone()).unwrap();
        w.write_batch(&batch).unwrap();
        w.finish().unwrap();

        let reader = FileReader::open(&uri).unwrap();
        let fields = reader.projection(None).unwrap();
        let t = Interrupt::new(None);
        t.run(|| {
            assert_eq!(reader.read_range(0, 10_000, &fields).unwrap().num_rows(), 10_000);
            t.cancel();
            assert!(matches!(reader.read_range(0, 10_000, &fields), Err(Error::Interrupted)));
            assert!(matches!(reader.take(&[5, 3, 9_000], &fields), Err(Error::Interrupted)));
        });
        assert_eq!(reader.take(&[5, 3, 9_000], &fields).unwrap().num_rows(), 3, "later calls are not affected");

        let uri2 = format!("{uri}.2");
        let options = WriterOptions { max_page_bytes: 1 << 20, ..Default::default() };
        let mut w = FileWriter::try_new(&uri2, &batch.schema(), options).unwrap();
        let t = Interrupt::new(None);
        t.cancel();
        assert!(matches!(t.run(|| w.write_batch(&batch)), Err(Error::Interrupted)));
        // Interrupted before anything was buffered: the writer is intact.
        w.write_batch(&batch).unwrap();
        // Interrupted while encoding the buffered pages: the writer is broken.
        assert!(matches!(t.run(|| w.finish()), Err(Error::Interrupted)));
        assert!(matches!(w.finish(), Err(Error::InvalidInput(_))), "a broken writer cannot finish");
    }
}
