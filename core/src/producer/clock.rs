//! The wall clock a record added without a time is stamped with.
//!
//! # What it does
//! Reading the system clock (`clock_gettime(CLOCK_REALTIME)`) is a large share of an add:
//! about 30 ns on the virtual machines we measure on, a fifth of the engine's whole add, because
//! the kernel's user-space clock fences the CPU's time-stamp counter (TSC) read and walks a
//! sequence lock. Where the kernel itself keeps time with the TSC (Linux on x86-64 with the
//! `tsc` clock source: the counter is invariant and synchronised across CPUs, or the kernel
//! would not use it; asked again every second), each thread reads the counter alone and
//! extrapolates from its last reading of the system clock, which it takes again every 20 ms
//! (and whenever the counter is not where it should be): 11 ns rather than 30.
//!
//! # What it guarantees
//! Between two readings of the system clock a stamp is the last reading plus the counter's
//! ticks at the rate measured between the last two readings; the rate tracks the system
//! clock's own (NTP slewing included), so a stamp differs from what the system clock would
//! have said by the pair of readings' skew: tens of nanoseconds, at most a microsecond. A
//! thread's stamps never go back (its records keep their order) unless the system clock is set
//! back. A step of the system clock (`settimeofday`, an NTP step) shows in stamps within one
//! window. Everywhere else (other systems, other clock sources, a counter that runs backwards)
//! every stamp is a system clock reading, as before.
//!
//! # Threads
//! Runs on the caller's thread; its state is per thread (no lock, no shared cache line).

use std::time::SystemTime;

/// The clock read for a record added without a time, at `precision`: when only seconds are
/// written, Linux's coarse clock (the time of the last scheduler tick, a few milliseconds old,
/// read without the hardware counter: about a fifth of the system clock's cost); otherwise
/// [`now_parts`].
#[inline]
pub(crate) fn now_for(precision: super::config::TimePrecision) -> (u32, u32) {
    #[cfg(target_os = "linux")]
    if precision == super::config::TimePrecision::Seconds {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes only the timespec it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) } == 0
            && ts.tv_sec >= 0
        {
            return (ts.tv_sec as u32, ts.tv_nsec as u32);
        }
    }
    let _ = precision;
    now_parts()
}

/// The wall clock now as (seconds, nanoseconds) since the epoch.
#[inline]
fn now_parts() -> (u32, u32) {
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
    use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

    use super::system_ns;

    /// How long a thread extrapolates from one reading of the system clock.
    const WINDOW_NS: u64 = 20_000_000;

    /// The shortest span over which a rate is measured: over shorter ones, the few nanoseconds
    /// between reading the system clock and reading the counter would weigh too much.
    const SHORTEST_RATE_SPAN_NS: u64 = 1_000_000;

    /// Whether the kernel keeps time with the TSC: 0 not asked yet, 1 yes, 2 no.
    static USABLE: AtomicU8 = AtomicU8::new(0);

    /// When the kernel was last asked (system clock, ns). It is asked again a second later, at
    /// a thread's next reading of the system clock: a kernel that finds the counter unstable
    /// stops keeping time with it, and so do stamps.
    static ASKED_AT: AtomicU64 = AtomicU64::new(0);
    const ASK_AGAIN_NS: u64 = 1_000_000_000;

    /// Whether stamps may come from the counter.
    #[inline]
    pub(super) fn usable() -> bool {
        match USABLE.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => ask_the_kernel(system_ns()),
        }
    }

    #[cold]
    fn ask_the_kernel(now: u64) -> bool {
        let tsc = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .is_ok_and(|source| source.trim() == "tsc");
        USABLE.store(if tsc { 1 } else { 2 }, Ordering::Relaxed);
        ASKED_AT.store(now, Ordering::Relaxed);
        tsc
    }

    /// A thread's last reading of the system clock and the counter's rate.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub(super) struct Anchor {
        /// The counter when the system clock was last read.
        pub(super) ticks: u64,
        /// The system clock then, ns since the epoch.
        pub(super) ns: u64,
        /// Nanoseconds per tick in 32.32 fixed point; 0 until measured (stamps are then
        /// readings of the system clock).
        pub(super) rate: u64,
        /// Ticks past `ticks` after which the system clock is read again.
        pub(super) window: u64,
        /// The reading (ticks, ns) the next rate is measured from; (0, 0): none yet.
        pub(super) from: (u64, u64),
    }

    impl Anchor {
        pub(super) const NONE: Anchor = Anchor {
            ticks: 0,
            ns: 0,
            rate: 0,
            window: 0,
            from: (0, 0),
        };

        /// The stamp at counter `now`, when it is inside this anchor's window.
        #[inline]
        pub(super) fn stamp(&self, now: u64) -> Option<u64> {
            let since = now.wrapping_sub(self.ticks);
            (self.rate != 0 && since < self.window)
                .then(|| self.ns + ((u128::from(since) * u128::from(self.rate)) >> 32) as u64)
        }
    }

    /// The most ticks between the two counter reads around a system clock reading for it to
    /// anchor stamps: a read takes ~100 ticks; more means the thread was interrupted.
    const TIGHT_PAIR_TICKS: u64 = 2_000;

    /// Rates of a 100 MHz to 10 GHz counter (ns per tick, 32.32); others measured a step of the
    /// clock.
    const PLAUSIBLE_RATES: std::ops::RangeInclusive<u64> = (1 << 32) / 10..=10 << 32;

    /// A thread's clock: its anchor and the last stamp it gave.
    struct ThreadClock {
        anchor: Cell<Anchor>,
        last: Cell<u64>,
    }

    thread_local! {
        // One thread-local, not two: in a shared library each costs a lookup.
        static CLOCK: ThreadClock = const {
            ThreadClock { anchor: Cell::new(Anchor::NONE), last: Cell::new(0) }
        };
    }

    /// How far back a stamp may be of the thread's last one and still be taken for the error of
    /// re-anchoring (nanoseconds, at most a microsecond) rather than the clock set back.
    const REORDER_NS: u64 = 1_000_000;

    #[inline]
    fn ticks() -> u64 {
        // SAFETY: RDTSC reads the counter; the kernel's own user-space clock reads it, so it
        // is allowed in user mode wherever the clock source is `tsc`.
        unsafe { core::arch::x86_64::_rdtsc() }
    }

    /// The stamp now. A thread's stamps never go back (its records keep their order across
    /// re-anchoring), unless the system clock was set back by more than [`REORDER_NS`].
    #[inline]
    pub(super) fn now_ns() -> u64 {
        let now = ticks();
        CLOCK.with(|clock| {
            let anchor = clock.anchor.get();
            let stamp = anchor.stamp(now).unwrap_or_else(|| {
                let before = ticks();
                let ns = system_ns();
                let after = ticks();
                clock.anchor.set(anchored(anchor, before, ns, after));
                if ns.saturating_sub(ASKED_AT.load(Ordering::Relaxed)) > ASK_AGAIN_NS {
                    ask_the_kernel(ns);
                }
                ns
            });
            let last = clock.last.get();
            let stamp = if stamp < last && last - stamp < REORDER_NS {
                last
            } else {
                stamp
            };
            clock.last.set(stamp);
            stamp
        })
    }

    /// The anchor after the system clock read `ns` between the counter's `before` and `after`.
    #[cold]
    pub(super) fn anchored(a: Anchor, before: u64, ns: u64, after: u64) -> Anchor {
        if after < before {
            // The counter went back between two reads: trust nothing measured so far.
            return Anchor::NONE;
        }
        if after - before > TIGHT_PAIR_TICKS {
            // The thread was interrupted between the reads: when the reading was taken is
            // known only within the interruption. Keep the anchor; the next add reads again.
            return a;
        }
        // The counter at the reading: the middle of the two around it.
        let at = before + (after - before) / 2;
        if a.from == (0, 0) || at <= a.from.0 || ns <= a.from.1 {
            // A first reading, or the counter or the clock went back: measure from here.
            return Anchor {
                from: (at, ns),
                ..Anchor::NONE
            };
        }
        let span_ns = ns - a.from.1;
        if span_ns < SHORTEST_RATE_SPAN_NS {
            // Too short a span to measure by: go on from this reading at the rate known (if
            // any) and measure later from the same reading.
            return Anchor {
                ticks: at,
                ns,
                from: a.from,
                ..a
            };
        }
        let rate = ((u128::from(span_ns) << 32) / u128::from(at - a.from.0)) as u64;
        // A rate that moved more than NTP's slewing moves it (0.05 %) measured a step of the
        // clock: measure anew rather than extrapolate from it.
        if !PLAUSIBLE_RATES.contains(&rate)
            || (a.rate != 0 && rate.abs_diff(a.rate) > a.rate / 1000)
        {
            return Anchor {
                from: (at, ns),
                ..Anchor::NONE
            };
        }
        Anchor {
            ticks: at,
            ns,
            rate,
            window: ((u128::from(WINDOW_NS) << 32) / u128::from(rate)) as u64,
            from: (at, ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns((s, n): (u32, u32)) -> i128 {
        i128::from(s) * 1_000_000_000 + i128::from(n)
    }

    /// Stamps stay within a few microseconds of the system clock read beside them and never
    /// go back, across many windows (the first measures the rate from system readings alone).
    #[test]
    fn stamps_follow_the_system_clock() {
        let start = std::time::Instant::now();
        let mut worst = 0i128;
        let mut checks = 0;
        let mut previous = 0;
        while start.elapsed() < std::time::Duration::from_millis(150) {
            let before = system_ns() as i128;
            let stamp = ns(now_parts());
            let after = system_ns() as i128;
            assert!(
                stamp >= previous,
                "a stamp went back {} ns",
                previous - stamp
            );
            previous = stamp;
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

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    mod anchors {
        use super::super::tsc::{anchored, Anchor};

        const NS0: u64 = 1_700_000_000_000_000_000;
        const T0: u64 = 1_000_000_000;

        /// An anchor measured at 3 ticks a nanosecond from readings 2 ms apart.
        fn measured() -> Anchor {
            let first = anchored(Anchor::NONE, T0 - 50, NS0, T0 + 50);
            assert_eq!(first.rate, 0, "one reading tells no rate");
            assert_eq!(first.from, (T0, NS0));
            anchored(
                first,
                T0 + 6_000_000 - 50,
                NS0 + 2_000_000,
                T0 + 6_000_000 + 50,
            )
        }

        #[test]
        fn two_readings_give_the_rate_and_stamps_extrapolate() {
            let a = measured();
            assert_eq!(a.rate, (1u64 << 32) / 3);
            // 20 ms of 3 GHz ticks.
            assert!((a.window as i64 - 60_000_000).abs() < 10, "{}", a.window);
            let t = a.ticks;
            assert_eq!(a.stamp(t), Some(NS0 + 2_000_000));
            let later = a.stamp(t + 3_000_000).expect("inside the window");
            assert!(later.abs_diff(NS0 + 3_000_000) <= 1, "{later}");
            assert_eq!(
                a.stamp(t + 60_000_000),
                None,
                "past the window: read the clock"
            );
            assert_eq!(
                a.stamp(t - 1),
                None,
                "a counter behind the anchor: read the clock"
            );
        }

        #[test]
        fn too_early_a_second_reading_keeps_measuring() {
            let first = anchored(Anchor::NONE, T0, NS0, T0 + 90);
            let soon = anchored(first, T0 + 1_500_000, NS0 + 500_000, T0 + 1_500_090);
            assert_eq!((soon.rate, soon.from), (0, first.from));
        }

        #[test]
        fn a_step_of_the_clock_is_not_taken_for_a_rate() {
            let a = measured();
            // 20 ms of ticks, but the clock moved a second and 20 ms.
            let stepped = anchored(
                a,
                a.ticks + 60_000_000,
                a.ns + 1_020_000_000,
                a.ticks + 60_000_100,
            );
            assert_eq!(stepped.rate, 0);
            assert_eq!(stepped.stamp(a.ticks + 60_000_200), None);
            // Measuring anew from the step: the rate is found again 2 ms on.
            let again = anchored(
                stepped,
                stepped.from.0 + 5_999_950,
                stepped.from.1 + 2_000_000,
                stepped.from.0 + 6_000_050,
            );
            assert_eq!(again.rate, (1u64 << 32) / 3);
            // A clock set back: nothing to measure against.
            let back = anchored(a, a.ticks + 60_000_000, a.ns - 1_000, a.ticks + 60_000_100);
            assert_eq!(back.rate, 0);
        }

        #[test]
        fn a_counter_going_back_or_an_interrupted_read_measures_nothing() {
            let a = measured();
            assert_eq!(
                anchored(a, a.ticks + 100, a.ns + 10_000_000, a.ticks),
                Anchor::NONE
            );
            // A read interrupted for a millisecond: the anchor stays as it was (its window
            // past, so the next add reads the clock again).
            let loose = anchored(
                a,
                a.ticks + 60_000_000,
                a.ns + 20_000_000,
                a.ticks + 63_000_000,
            );
            assert_eq!(loose, a);
            assert_eq!(loose.stamp(a.ticks + 63_000_100), None);
            // The same from a first reading: still none.
            assert_eq!(
                anchored(Anchor::NONE, T0, NS0, T0 + 1_000_000),
                Anchor::NONE
            );
        }
    }
}
