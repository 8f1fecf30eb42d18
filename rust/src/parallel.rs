//! The CPU thread pool and the I/O pool, rebuilt after `fork()`.
//!
//! PyTorch DataLoader workers fork the process. A forked child inherits a pool's handle but
//! none of its threads, so each pool is keyed by process id and rebuilt on first use in a
//! child; the stale one is leaked on purpose (dropping it would wait for threads that do not
//! exist).
//!
//! Process-wide and harmless to share between datasets: the pools hold threads, never data,
//! files or credentials.

use std::sync::{Arc, Mutex};

use rayon::prelude::*;

/// The process's decode pool: one thread per core (`LANCEPY_THREADS` overrides).
pub fn cpu_pool() -> Arc<rayon::ThreadPool> {
    static POOL: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);
    pool_for_this_process(&POOL, "lancepy-cpu", || {
        std::env::var("LANCEPY_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
    })
}

/// Threads of the I/O pool by default (`LANCEPY_IO_THREADS` overrides).
pub const DEFAULT_IO_THREADS: usize = 16;

/// The pool for work that mostly waits on object storage (each fragment of a take fetching
/// its byte ranges): more threads than cores, so that the requests of many files are in
/// flight together instead of a core's worth of files at a time. Decoding inside a job still
/// runs on [`cpu_pool`].
pub fn io_pool() -> Arc<rayon::ThreadPool> {
    static POOL: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);
    pool_for_this_process(&POOL, "lancepy-io", || {
        std::env::var("LANCEPY_IO_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_IO_THREADS)
    })
}

fn pool_for_this_process(
    slot: &Mutex<Option<(u32, Arc<rayon::ThreadPool>)>>,
    name: &'static str,
    threads: impl FnOnce() -> usize,
) -> Arc<rayon::ThreadPool> {
    let pid = std::process::id();
    let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, pool)) = guard.as_ref() {
        if *owner == pid {
            return pool.clone();
        }
    }
    if let Some((_, stale)) = guard.take() {
        std::mem::forget(stale);
    }
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads().max(1))
            .thread_name(move |i| format!("{name}-{i}"))
            .build()
            .expect("building a thread pool"),
    );
    *guard = Some((pid, pool.clone()));
    pool
}

/// Maps `f` over `items`, in parallel when `parallel` is true (results keep input order).
///
/// Under an interruptible operation ([`crate::interrupt`]) the pool threads inherit its token,
/// and the calling thread keeps polling for Ctrl-C while it waits for them.
pub fn map<T: Send, R: Send>(items: Vec<T>, parallel: bool, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    if !parallel || items.len() < 2 {
        return items.into_iter().map(f).collect();
    }
    map_on(cpu_pool(), items, f)
}

/// [`map`] on the [`io_pool`]: for jobs that wait on object storage.
pub fn map_io<T: Send, R: Send>(items: Vec<T>, parallel: bool, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    if !parallel || items.len() < 2 {
        return items.into_iter().map(f).collect();
    }
    map_on(io_pool(), items, f)
}

fn map_on<T: Send, R: Send>(pool: Arc<rayon::ThreadPool>, items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    // The pool threads count their I/O where the calling thread does (see `crate::io::IoTracker`).
    let trackers = crate::io::scopes();
    let trackers = &trackers;
    let f = move |x: T| crate::io::with_scopes(trackers, || f(x));
    let Some(token) = crate::interrupt::current() else {
        return pool.install(|| items.into_par_iter().map(f).collect());
    };
    if pool.current_thread_index().is_some() {
        // Already on a pool thread (nested parallelism): its caller does the polling.
        return pool.install(|| items.into_par_iter().map(|x| token.run(|| f(x))).collect());
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let mut results = None;
    pool.in_place_scope(|s| {
        let worker_token = token.clone();
        let f = &f;
        s.spawn(move |_| {
            let r: Vec<R> = items.into_par_iter().map(|x| worker_token.run(|| f(x))).collect();
            let _ = tx.send(r);
        });
        token.wait(|timeout| match rx.recv_timeout(timeout) {
            Ok(r) => {
                results = Some(r);
                true
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => false,
            // The job panicked; the scope re-raises the panic.
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => true,
        });
    });
    results.expect("the parallel job sent its results")
}
