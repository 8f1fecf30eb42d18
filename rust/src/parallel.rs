//! The CPU thread pool, rebuilt after `fork()`.
//!
//! PyTorch DataLoader workers fork the process. A forked child inherits the pool's handle but
//! none of its threads, so the pool is keyed by process id and rebuilt on first use in a
//! child; the stale one is leaked on purpose (dropping it would wait for threads that do not
//! exist).

use std::sync::{Arc, Mutex};

use rayon::prelude::*;

/// The process's decode pool.
pub fn cpu_pool() -> Arc<rayon::ThreadPool> {
    static POOL: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut guard = POOL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, pool)) = guard.as_ref() {
        if *owner == pid {
            return pool.clone();
        }
    }
    if let Some((_, stale)) = guard.take() {
        std::mem::forget(stale);
    }
    let threads = std::env::var("LANCEPY_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("lancepy-cpu-{i}"))
            .build()
            .expect("building the CPU pool"),
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
    let pool = cpu_pool();
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
