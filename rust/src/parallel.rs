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
pub fn map<T: Send, R: Send>(items: Vec<T>, parallel: bool, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    if !parallel || items.len() < 2 {
        return items.into_iter().map(f).collect();
    }
    cpu_pool().install(|| items.into_par_iter().map(f).collect())
}
