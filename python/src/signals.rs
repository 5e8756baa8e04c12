//! The native half of delivery on a signal whose default ends the process (SIGTERM as set by
//! `loghose._signals`): a watchdog that delivers and ends the process when Python cannot run
//! its handler.
//!
//! # Why
//!
//! Python runs a signal's handler on the main thread, between two bytecodes. A main thread
//! asleep in a system call wakes for it only if the signal interrupts that very call; a signal
//! that lands just before it (CPython checks for signals, then sleeps: the window is widest
//! when another thread takes the GIL in between) leaves the handler pending while the thread
//! sleeps on. A multiprocessing pool worker stopped by `terminate()` sleeps that way on the task
//! queue's lock, which nobody will release: with a Python handler on SIGTERM and no watchdog it
//! would never end, where the default action would have ended it at once.
//!
//! # The watchdog
//!
//! So, once `_signals` has put its handler on a signal whose previous disposition was the
//! default, [`arm`] wraps the C-level handler CPython installed with one of ours: it tells a
//! watchdog thread (through a pipe, which is async-signal-safe) and calls CPython's. If the
//! Python handler has not started ([`python_handler_started`]) within [`GRACE`], the watchdog
//! does what it would have done, natively: seals every live producer of this process, closes
//! them within the longest `close_on_signal_ms`, puts the default back and raises the signal
//! again, so the process ends by it. If the Python handler does start, the watchdog stands
//! aside. `signal.signal` from Python replaces the wrapper with CPython's own handler, as it
//! should (the application then decides).
//!
//! # A second signal
//!
//! A delivery on signal, once started (by the Python handler or by the watchdog), is the only
//! one: a further signal of those armed ends the process at once, in the C-level handler
//! (`signal(SIG_DFL)` and `raise`, both async-signal-safe), whichever thread takes it and
//! whatever the main thread is doing. Python's own check for a second signal cannot see one
//! that arrives while the watchdog delivers: the main thread that missed the first signal runs
//! the Python handler only when the second one wakes it, and CPython runs one handler call for
//! both.
//!
//! # Threads
//!
//! The watchdog thread blocks every asynchronous signal; it belongs to the process that armed
//! it: a forked child arms its own at the fork (`_signals`), before it makes any producer.
//! Unix only.

use std::sync::{Arc, Weak};

use loghose::producer::Producer;
use parking_lot::Mutex;

/// Every live producer of this process, for the watchdog (weak: it never keeps one alive).
#[cfg_attr(not(unix), allow(dead_code))]
static LIVE: Mutex<Vec<Weak<Producer>>> = Mutex::new(Vec::new());

/// Registers a producer for the watchdog.
pub(crate) fn register(producer: &Arc<Producer>) {
    let mut live = LIVE.lock();
    live.retain(|p| p.strong_count() > 0);
    live.push(Arc::downgrade(producer));
}

#[cfg(unix)]
pub(crate) use unix::{arm, python_handler_started};

/// How long the Python handler has to start before the watchdog acts.
#[cfg(unix)]
pub(crate) const GRACE: std::time::Duration = std::time::Duration::from_millis(250);

#[cfg(unix)]
mod unix {
    use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    use super::{GRACE, LIVE};

    /// Signals 1..=64, as indexes.
    const SIGNALS: usize = 65;

    /// The process that armed the watchdog (0: none): a forked child arms its own.
    static ARMED_PID: AtomicU32 = AtomicU32::new(0);
    /// The write end of the watchdog's pipe (-1: none).
    static NOTIFY_FD: AtomicI32 = AtomicI32::new(-1);
    /// Per signal: the handler CPython installed, which ours calls (0: none wrapped).
    static CHAINED: [std::sync::atomic::AtomicUsize; SIGNALS] =
        [const { std::sync::atomic::AtomicUsize::new(0) }; SIGNALS];
    /// Per signal: whether CPython's handler takes `siginfo` (SA_SIGINFO).
    static CHAINED_SIGINFO: [AtomicBool; SIGNALS] = [const { AtomicBool::new(false) }; SIGNALS];
    /// Per signal: the Python handler has started for the latest delivery.
    static STARTED: [AtomicBool; SIGNALS] = [const { AtomicBool::new(false) }; SIGNALS];
    /// A delivery on an armed signal has started (the Python handler's or the watchdog's), in
    /// the process that armed the watchdog (0: none): the next armed signal ends the process.
    static DELIVERING_PID: AtomicU32 = AtomicU32::new(0);

    /// Wraps the current (CPython's) handler of `signum` so the watchdog hears of it; starts the
    /// watchdog of this process if needed. Idempotent; false if it could not be done.
    pub(crate) fn arm(signum: i32) -> bool {
        let index = match usize::try_from(signum) {
            Ok(i) if (1..SIGNALS).contains(&i) => i,
            _ => return false,
        };
        if !start_watchdog() {
            return false;
        }
        // SAFETY: reads and sets this process's disposition of `signum` with plain sigaction
        // structures; the handler we install only does async-signal-safe things.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signum, std::ptr::null(), &mut current) != 0 {
                return false;
            }
            if current.sa_sigaction == on_signal as *const () as usize {
                return true; // ours already (inherited through fork, or armed before)
            }
            if current.sa_sigaction == libc::SIG_DFL || current.sa_sigaction == libc::SIG_IGN {
                return false; // not a Python handler: nothing to watch
            }
            CHAINED[index].store(current.sa_sigaction, Ordering::SeqCst);
            CHAINED_SIGINFO[index]
                .store(current.sa_flags & libc::SA_SIGINFO != 0, Ordering::SeqCst);
            let mut ours = current;
            ours.sa_sigaction = on_signal as *const () as usize;
            ours.sa_flags = current.sa_flags | libc::SA_SIGINFO;
            libc::sigaction(signum, &ours, std::ptr::null_mut()) == 0
        }
    }

    /// The Python handler of `signum` has started: the watchdog stands aside. Returns whether
    /// the watchdog is already delivering (the handler then leaves it to end the process).
    pub(crate) fn python_handler_started(signum: i32) -> bool {
        let Some(index) = usize::try_from(signum)
            .ok()
            .filter(|i| (1..SIGNALS).contains(i))
        else {
            return false;
        };
        STARTED[index].store(true, Ordering::SeqCst);
        if CHAINED[index].load(Ordering::SeqCst) == 0 {
            return false; // not armed: the signal's course is the application's
        }
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() } as u32;
        DELIVERING_PID.store(pid, Ordering::SeqCst);
        WATCHDOG_PID.load(Ordering::SeqCst) == pid
    }

    /// The process whose watchdog has started delivering natively (0: none).
    static WATCHDOG_PID: AtomicU32 = AtomicU32::new(0);

    /// Whether a delivery on signal has started in this process.
    fn delivering() -> bool {
        // SAFETY: getpid is async-signal-safe and has no preconditions.
        DELIVERING_PID.load(Ordering::SeqCst) == unsafe { libc::getpid() } as u32
    }

    extern "C" fn on_signal(
        signum: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        let index = signum as usize;
        if index < SIGNALS && delivering() {
            // A second signal while the first is delivered: its default action, now. The
            // signal is blocked while its handler runs, so the raised one is taken on return.
            // SAFETY: signal and raise are async-signal-safe.
            unsafe {
                libc::signal(signum, libc::SIG_DFL);
                libc::raise(signum);
            }
            return;
        }
        if index < SIGNALS {
            // SAFETY: getpid and write are async-signal-safe; errno is saved and restored
            // around them so the interrupted code sees its own.
            unsafe {
                let errno = errno_location().map(|e| *e);
                if ARMED_PID.load(Ordering::SeqCst) == libc::getpid() as u32 {
                    STARTED[index].store(false, Ordering::SeqCst);
                    let fd = NOTIFY_FD.load(Ordering::SeqCst);
                    let byte = signum as u8;
                    libc::write(fd, (&byte as *const u8).cast(), 1);
                }
                if let (Some(location), Some(errno)) = (errno_location(), errno) {
                    *location = errno;
                }
            }
            let chained = CHAINED[index].load(Ordering::SeqCst);
            if chained != 0 && chained != libc::SIG_DFL && chained != libc::SIG_IGN {
                // SAFETY: the handler CPython installed for this signal, called as it was
                // installed to be called.
                unsafe {
                    if CHAINED_SIGINFO[index].load(Ordering::SeqCst) {
                        let handler: extern "C" fn(
                            libc::c_int,
                            *mut libc::siginfo_t,
                            *mut libc::c_void,
                        ) = std::mem::transmute(chained);
                        handler(signum, info, context);
                    } else {
                        let handler: extern "C" fn(libc::c_int) = std::mem::transmute(chained);
                        handler(signum);
                    }
                }
            }
        }
    }

    /// The calling thread's `errno`, where this platform names it.
    fn errno_location() -> Option<*mut libc::c_int> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        // SAFETY: returns the calling thread's errno; async-signal-safe.
        return Some(unsafe { libc::__errno_location() });
        #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
        // SAFETY: as above.
        return Some(unsafe { libc::__error() });
        #[allow(unreachable_code)]
        None
    }

    /// Starts this process's watchdog thread and its pipe, once per process.
    fn start_watchdog() -> bool {
        use std::os::fd::IntoRawFd;
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() } as u32;
        if ARMED_PID.load(Ordering::SeqCst) == pid {
            return true;
        }
        let Ok((reader, writer)) = std::io::pipe() else {
            return false;
        };
        let write_fd = writer.into_raw_fd();
        // The handler never waits: with the pipe full (signals unread by the thousand), the
        // watchdog has enough to act on already.
        // SAFETY: sets a flag on the descriptor just made.
        unsafe {
            let flags = libc::fcntl(write_fd, libc::F_GETFL);
            libc::fcntl(write_fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        if !super::spawn_watchdog(move || watch(reader)) {
            // SAFETY: the descriptor was made here and is used nowhere else.
            unsafe { libc::close(write_fd) };
            return false;
        }
        NOTIFY_FD.store(write_fd, Ordering::SeqCst);
        ARMED_PID.store(pid, Ordering::SeqCst);
        true
    }

    /// The watchdog: for each signal heard of, gives the Python handler [`GRACE`] to start,
    /// then does its work natively.
    fn watch(mut reader: std::io::PipeReader) {
        use std::io::Read;
        loop {
            let mut byte = [0u8];
            match reader.read(&mut byte) {
                Ok(1) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                _ => return,
            }
            let [byte] = byte;
            let signum = i32::from(byte);
            let index = usize::from(byte);
            let until = Instant::now() + GRACE;
            while Instant::now() < until && !STARTED[index].load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
            if STARTED[index].load(Ordering::SeqCst) {
                continue;
            }
            // SAFETY: getpid has no preconditions.
            let pid = unsafe { libc::getpid() } as u32;
            WATCHDOG_PID.store(pid, Ordering::SeqCst);
            DELIVERING_PID.store(pid, Ordering::SeqCst);
            deliver_and_end(signum);
        }
    }

    /// What the Python handler would have done: every live producer sealed, then closed within
    /// the longest `close_on_signal_ms`; then the default disposition and the signal again.
    fn deliver_and_end(signum: i32) {
        let held: Vec<_> = LIVE
            .lock()
            .iter()
            .filter_map(|p| p.upgrade())
            .filter(|p| !p.is_inherited() && p.config().close_on_signal_ms > 0)
            .collect();
        let bound = held
            .iter()
            .map(|p| p.config().close_on_signal_ms)
            .max()
            .unwrap_or(0);
        let deadline = Instant::now() + Duration::from_millis(bound);
        for producer in &held {
            producer.seal();
        }
        let mut undelivered = 0;
        for producer in &held {
            let report = producer.close(deadline.saturating_duration_since(Instant::now()));
            undelivered += report.undelivered;
        }
        if undelivered > 0 {
            // Python cannot run here (that is why the watchdog acts): say it on stderr.
            eprintln!(
                "loghose: {undelivered} record(s) could not be delivered within close_on_signal_ms \
                 before the process ended by signal {signum}"
            );
        }
        // SAFETY: resets the disposition and raises the signal at this process; this thread
        // blocks it, so another thread takes it and the default action ends the process.
        unsafe {
            libc::signal(signum, libc::SIG_DFL);
            libc::kill(libc::getpid(), signum);
        }
    }
}

/// Starts the watchdog thread with every asynchronous signal blocked (so it never takes one).
#[cfg(unix)]
fn spawn_watchdog(body: impl FnOnce() + Send + 'static) -> bool {
    // SAFETY: sigset_t is plain data that sigfillset initialises; pthread_sigmask changes only
    // the calling thread's mask, put back right after the spawn (the new thread inherits it).
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        for fault in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE] {
            libc::sigdelset(&mut all, fault);
        }
        let mut previous: libc::sigset_t = std::mem::zeroed();
        let blocked = libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut previous) == 0;
        let started = std::thread::Builder::new()
            .name("loghose-signals".into())
            .spawn(body)
            .is_ok();
        if blocked {
            libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
        }
        started
    }
}
