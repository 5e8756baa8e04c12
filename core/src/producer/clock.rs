//! The wall clock a record added without a time is stamped with.
//!
//! # What it does
//! Reading the system clock (`clock_gettime(CLOCK_REALTIME)`) is a large share of an add:
//! about 30 ns on the virtual machines we measure on, a fifth of the engine's whole add, because
//! the kernel's user-space clock fences the CPU's time-stamp counter (TSC) read and walks a
//! sequence lock. Where the kernel itself keeps time with the TSC (Linux on x86-64 with the
//! `tsc` clock source: the counter is invariant and synchronised across CPUs, or the kernel
//! would not use it), each thread reads the counter alone and extrapolates from its last
//! reading of the system clock, which it takes again every [`WINDOW_NS`] (and whenever the
//! counter is not where it should be): 11 ns rather than 30.
//!
//! # What it guarantees
//! Between two readings of the system clock a stamp is the last reading plus the counter's
//! ticks at the rate measured between the last two readings; the rate tracks the system
//! clock's own (NTP slewing included), so a stamp differs from what the system clock would
//! have said by at most the rate's change over one window: microseconds. A step of the system
//! clock (`settimeofday`, an NTP step) shows in stamps within one window. Everywhere else (other
//! systems, other clock sources, a counter that runs backwards) every stamp is a system clock
//! reading, as before.
//!
//! # Threads
//! Runs on the caller's thread; its state is per thread (no lock, no shared cache line).

use std::time::SystemTime;

/// How long a thread extrapolates from one reading of the system clock.
const WINDOW_NS: u64 = 20_000_000;

/// The shortest span over which a rate is measured: over shorter ones, the few nanoseconds
/// between reading the system clock and reading the counter would weigh too much.
const SHORTEST_RATE_SPAN_NS: u64 = 1_000_000;

/// The wall clock now as (seconds, nanoseconds) since the epoch.
#[inline]
pub(crate) fn now_parts() -> (u32, u32) {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    if tsc::usable() {
        return split(tsc::now_ns());
    }
    split(system_ns())
}

#[inline]
fn split(ns: u64) -> (u32, u32) {
    ((ns / 1_000_000_000) as u32, (ns % 1_000_000_000) as u32)
}

/// The system clock in nanoseconds since the epoch (0 before 1970). On Unix straight from
/// `clock_gettime`: `SystemTime::now` plus `duration_since` costs about a third more.
#[inline]
fn system_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes only the timespec it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) } == 0 && ts.tv_sec >= 0 {
            return ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        }
    }
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default()
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod tsc {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU8, Ordering};

    use super::{system_ns, SHORTEST_RATE_SPAN_NS, WINDOW_NS};

    /// Whether the kernel keeps time with the TSC: 0 not asked yet, 1 yes, 2 no.
    static USABLE: AtomicU8 = AtomicU8::new(0);

    /// Whether stamps may come from the counter (asked of the kernel once per process).
    #[inline]
    pub(super) fn usable() -> bool {
        match USABLE.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => ask_the_kernel(),
        }
    }

    #[cold]
    fn ask_the_kernel() -> bool {
        let tsc = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .is_ok_and(|source| source.trim() == "tsc");
        USABLE.store(if tsc { 1 } else { 2 }, Ordering::Relaxed);
        tsc
    }

    /// A thread's last reading of the system clock and the counter's rate.
    #[derive(Clone, Copy)]
    struct Anchor {
        /// The counter when the system clock was read (0: never).
        ticks: u64,
        /// The system clock then, ns since the epoch.
        ns: u64,
        /// Nanoseconds per tick in 32.32 fixed point; 0 until measured.
        rate: u64,
        /// Ticks past `ticks` after which the system clock is read again.
        window: u64,
        /// Where the rate is being measured from, until it is (ticks, ns).
        from: (u64, u64),
    }

    thread_local! {
        static ANCHOR: Cell<Anchor> = const {
            Cell::new(Anchor { ticks: 0, ns: 0, rate: 0, window: 0, from: (0, 0) })
        };
    }

    #[inline]
    fn ticks() -> u64 {
        // SAFETY: RDTSC reads the counter; the kernel's own user-space clock reads it, so it
        // is allowed in user mode wherever the clock source is `tsc`.
        unsafe { core::arch::x86_64::_rdtsc() }
    }

    #[inline]
    pub(super) fn now_ns() -> u64 {
        let now = ticks();
        ANCHOR.with(|cell| {
            let a = cell.get();
            let since = now.wrapping_sub(a.ticks);
            if a.rate != 0 && since < a.window {
                a.ns + ((u128::from(since) * u128::from(a.rate)) >> 32) as u64
            } else {
                let (anchor, ns) = reanchor(a);
                cell.set(anchor);
                ns
            }
        })
    }

    /// Reads the system clock, and from it and the last reading the counter's rate; returns
    /// the new anchor and the reading.
    #[cold]
    fn reanchor(a: Anchor) -> (Anchor, u64) {
        let before = ticks();
        let ns = system_ns();
        let after = ticks();
        // The counter at the reading: the middle of the two around it.
        let at = before + (after.wrapping_sub(before) / 2);
        if a.rate != 0
            && (u128::from(after.wrapping_sub(before)) * u128::from(a.rate)) >> 32 > 20_000
        {
            // The thread was interrupted between the readings: the pair says little. Stamp
            // with the system clock and try again at the next add.
            return (a, ns);
        }
        let unknown = Anchor {
            ticks: at,
            ns,
            rate: 0,
            window: 0,
            from: (at, ns),
        };
        if after < before || a.from.0 == 0 || at <= a.from.0 || ns <= a.from.1 {
            // A first reading, a counter that went back, or a clock that did: measure anew.
            return (unknown, ns);
        }
        let span_ns = ns - a.from.1;
        if span_ns < SHORTEST_RATE_SPAN_NS {
            // Too soon to tell the rate: keep measuring from the same reading.
            return (
                Anchor {
                    from: a.from,
                    ..unknown
                },
                ns,
            );
        }
        let rate = ((u128::from(span_ns) << 32) / u128::from(at - a.from.0)) as u64;
        // A counter of 100 MHz to 10 GHz; anything else is no rate (a step of the clock).
        if !((1u64 << 32) / 10..=10u64 << 32).contains(&rate) {
            return (unknown, ns);
        }
        // A rate that moved more than NTP's slewing can move it (0.05 %) measured a step of
        // the clock too: measure anew rather than extrapolate from it.
        if a.rate != 0 && rate.abs_diff(a.rate) > a.rate / 1000 {
            return (unknown, ns);
        }
        let window = ((u128::from(WINDOW_NS) << 32) / u128::from(rate)) as u64;
        (
            Anchor {
                ticks: at,
                ns,
                rate,
                window,
                from: (at, ns),
            },
            ns,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns((s, n): (u32, u32)) -> i128 {
        i128::from(s) * 1_000_000_000 + i128::from(n)
    }

    /// Stamps stay within a few microseconds of the system clock read beside them, across
    /// many windows (the first window measures the rate from system readings alone).
    #[test]
    fn stamps_follow_the_system_clock() {
        let start = std::time::Instant::now();
        let mut worst = 0i128;
        let mut checks = 0;
        while start.elapsed() < std::time::Duration::from_millis(150) {
            let before = system_ns() as i128;
            let stamp = ns(now_parts());
            let after = system_ns() as i128;
            // Outside [before, after] by how much.
            let off = (before - stamp).max(stamp - after).max(0);
            worst = worst.max(off);
            checks += 1;
        }
        assert!(checks > 1000, "only {checks} stamps in 150 ms");
        // Generous for a loaded machine; the extrapolation error itself is ~100 ns.
        assert!(
            worst < 200_000,
            "a stamp was {worst} ns off the system clock"
        );
    }

    #[test]
    fn splits_into_seconds_and_nanoseconds() {
        assert_eq!(
            split(1_700_000_000_123_456_789),
            (1_700_000_000, 123_456_789)
        );
        let (s, n) = now_parts();
        assert!(s > 1_600_000_000 && n < 1_000_000_000);
    }
}
