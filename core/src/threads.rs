//! The library's own threads (the I/O runtime's, the reporter, the spool's preparer and sync
//! threads, the replay thread, the emulator's) start with the asynchronous signals blocked, so
//! the kernel hands a signal sent to the process to one of the application's threads, never to
//! one of ours.
//!
//! # Why
//!
//! Why it matters: a language runtime that handles signals itself runs its handlers on its main
//! thread (CPython, Node.js). A main thread asleep in a system call (a multiprocessing lock, a
//! `read`) wakes with `EINTR` only when the signal is delivered to it; taken by a thread of
//! ours, the signal only sets a flag, and the main thread sleeps on, its handler never run.
//! A pool worker of multiprocessing stopped by `terminate()` then waits forever on the task
//! queue's lock.
//!
//! # Fault signals
//!
//! The signals a thread raises itself by a fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP,
//! SIGSYS) stay unblocked: blocking them would turn a crash into a hang. Threads inherit the
//! mask of the thread that starts them, so blocking around each start leaves no window in which
//! a new thread could take a signal.
//!
//! # Marking
//!
//! The threads of the I/O runtime and the emulator's are also marked as the engine's
//! ([`is_engine_thread`]): a record logged there (by the HTTP client, the emulator's server) is
//! never fed back into a producer by the `log` integration, which would send one request per
//! request. The reporter thread is not marked: the application's report callbacks run there,
//! and what they log is theirs.

use std::cell::Cell;
use std::thread::JoinHandle;

thread_local! {
    static ENGINE_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as one of the engine's (the runtimes' `on_thread_start`).
pub(crate) fn mark_engine_thread() {
    ENGINE_THREAD.with(|t| t.set(true));
}

/// Whether the calling thread is one of the engine's own.
#[cfg_attr(not(feature = "log"), allow(dead_code))]
pub(crate) fn is_engine_thread() -> bool {
    ENGINE_THREAD.with(Cell::get)
}

/// Runs `start` (which starts threads) with the asynchronous signals blocked in the calling
/// thread, then puts the calling thread's mask back, even if `start` panics.
pub(crate) fn with_signals_blocked<T>(start: impl FnOnce() -> T) -> T {
    let _restore = block_asynchronous_signals();
    start()
}

/// `std::thread::Builder::spawn` for a library thread named `name`, its signals blocked.
pub(crate) fn spawn<F, T>(name: &str, body: F) -> std::io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    with_signals_blocked(|| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                mark_engine_thread();
                body()
            })
    })
}

/// The calling thread's signal mask as it was; put back when dropped.
struct RestoreMask {
    #[cfg(unix)]
    previous: Option<libc::sigset_t>,
}

impl Drop for RestoreMask {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(previous) = &self.previous {
            // SAFETY: a valid mask read by pthread_sigmask itself; this thread's own mask.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, previous, std::ptr::null_mut()) };
        }
    }
}

#[cfg(unix)]
fn block_asynchronous_signals() -> RestoreMask {
    const RAISED_BY_FAULTS: [libc::c_int; 6] = [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGTRAP,
        libc::SIGSYS,
    ];
    // SAFETY: sigset_t is plain data that sigfillset/sigdelset initialise; pthread_sigmask
    // changes only the calling thread's mask and writes the old one into `previous`.
    unsafe {
        let mut blocked: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut blocked);
        for signal in RAISED_BY_FAULTS {
            libc::sigdelset(&mut blocked, signal);
        }
        let mut previous: libc::sigset_t = std::mem::zeroed();
        let changed = libc::pthread_sigmask(libc::SIG_BLOCK, &blocked, &mut previous) == 0;
        RestoreMask {
            previous: changed.then_some(previous),
        }
    }
}

#[cfg(not(unix))]
fn block_asynchronous_signals() -> RestoreMask {
    RestoreMask {}
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn blocked_now() -> (bool, bool) {
        // SAFETY: reads the calling thread's mask into a zeroed set.
        unsafe {
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
            (
                libc::sigismember(&mask, libc::SIGTERM) == 1,
                libc::sigismember(&mask, libc::SIGSEGV) == 1,
            )
        }
    }

    #[test]
    fn library_threads_block_asynchronous_signals_and_the_caller_keeps_its_mask() {
        let before = blocked_now();
        assert!(!before.0, "the test thread starts with SIGTERM unblocked");
        let inside = spawn("loghose-test", blocked_now).unwrap().join().unwrap();
        assert_eq!(inside, (true, false), "SIGTERM blocked, SIGSEGV not");
        assert_eq!(blocked_now(), before);
        let panicked = std::panic::catch_unwind(|| with_signals_blocked(|| panic!("in start")));
        assert!(panicked.is_err());
        assert_eq!(blocked_now(), before, "put back after a panic too");
    }
}
