//! Adaptive send concurrency: how many batches one destination (project and logstore) may
//! have in flight at once, and how fast it may send once the service has pushed back, learnt
//! from what its requests answer.
//!
//! # The controller
//!
//! [`Controller`] is pure: it is told what happened (a request sent while every place was
//! taken, an answer with its round trip and the bytes it delivered, a push back) and the time,
//! and says how many places there are and how long the next request waits. Time runs in
//! windows of about one round trip (at least [`MIN_WINDOW`]):
//!
//! | in a window | places |
//! |---|---|
//! | a quota or throttling answer (403, 429), a 503, a timeout | halved at once, never below `min`; answers to requests sent before that cut do not cut again |
//! | mean round trip above the baseline by half (and by [`RTT_SLACK`]) | cut by a tenth (at least one) at the window's end |
//! | round trips flat, every place taken | doubled until the first cut (slow start), then one more |
//! | round trips flat, places to spare | unchanged (no growth on idle) |
//!
//! The baseline is a moving mean of the windows' mean round trips. A quota is a rate, which
//! places alone cannot meet (one place at a time can send far more than a shard takes), so a
//! push back also starts a **pace**: requests are spaced to half the raw bytes per second the
//! destination was sending at the first push back ([`FIRST_PACE_CUT`]), and to 85 % of the
//! pace at each later one ([`PACE_CUT`]). While requests wait for the pace and nothing pushes
//! back, the pace closes a fifth of the gap to the rate that was too much per second
//! ([`PACE_APPROACH`]), then probes past it by 1 % per second times `1 + s/4`, `s` seconds
//! since it passed ([`PACE_PROBE`]): slowly near the rate that was too much, faster away from
//! it. A pace nobody waited for in a minute is dropped.
//!
//! # The gate
//!
//! [`Gate`] holds a destination's batches to the controller: a batch waits for a place, then
//! for its turn under the pace, before its request (a short lock, then a wait on a [`Notify`]
//! or a timer), and gives the place back when settled. In `fixed` mode the places stay at
//! `send_concurrency` and nothing is learnt or paced. Runs on the I/O threads; the lock is held
//! for a few comparisons, never across an await. Nothing is dropped: a waiting batch stays
//! counted in the buffer, so adds meet `BufferFull` as they would with a slow service.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::retry::Answer;

/// The shortest window: below it a loopback's microsecond round trips would grow the limit
/// on noise.
pub(crate) const MIN_WINDOW: Duration = Duration::from_millis(10);

/// Round trips within this much above the baseline count as flat, however short the baseline.
pub(crate) const RTT_SLACK: Duration = Duration::from_millis(5);

/// Weight of a window's mean in the baseline.
const BASELINE_WEIGHT: f64 = 0.2;

/// Where places start: enough for a burst's first round trip, before anything is known.
const INITIAL_LIMIT: u32 = 2;

/// The slowest pace, raw bytes per second.
const MIN_PACE: f64 = 64.0 * 1024.0;

/// A first push back paces to this share of what was being sent.
const FIRST_PACE_CUT: f64 = 0.5;

/// Later push backs cut the pace to this share.
const PACE_CUT: f64 = 0.85;

/// Below the pace that was too much, this share of the gap is closed per second.
const PACE_APPROACH: f64 = 0.2;

/// Above it, the pace grows by this share per second, times `1 + s/4`.
const PACE_PROBE: f64 = 0.01;

/// Past this long above, the probing stops speeding up.
const PACE_GROWTH_HORIZON: Duration = Duration::from_secs(20);

/// A pace nobody waited for this long is dropped.
const PACE_IDLE: Duration = Duration::from_secs(60);

/// Delivered bytes are measured over periods this long.
const METER_PERIOD: Duration = Duration::from_secs(1);

/// What one request's answer says about the destination's load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Signal {
    /// An answer that says nothing of load (delivered, or refused for its content): its round
    /// trip and the raw bytes the request carried.
    Answered { rtt: Duration, raw_bytes: u64 },
    /// The service pushes back: a quota or throttling answer (403, 429), `ServerBusy` (503), or
    /// no answer within the request timeout, to a request of `raw_bytes` let through in `epoch`.
    PushedBack { epoch: u64, raw_bytes: u64 },
    /// No signal: the connection failed, or an error unrelated to load.
    Neither,
}

/// A change of places and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// Doubled or one more: round trips stayed flat with every place taken.
    Grew(u32),
    /// Halved: the service pushed back.
    Halved(u32),
    /// Cut by a tenth: round trips rose.
    Eased(u32),
}

/// Spacing of requests after a push back.
#[derive(Clone, Debug)]
struct Pace {
    /// Raw bytes per second.
    rate: f64,
    /// The pace when the service last pushed back: approached quickly from below, passed
    /// slowly.
    too_much: f64,
    /// When the pace last passed `too_much`, while it stays above.
    above_since: Option<Duration>,
    /// When the next request may start.
    next_send: Duration,
    /// A request waited for the pace since the last growth.
    waited: bool,
    last_growth: Duration,
    last_wait: Duration,
}

/// The places and pace of one destination (pure; see the module notes).
#[derive(Clone, Debug)]
pub(crate) struct Controller {
    min: u32,
    max: u32,
    limit: u32,
    adaptive: bool,
    /// Doubling until the first cut.
    slow_start: bool,
    /// Moving mean of the windows' mean round trips.
    baseline: Option<Duration>,
    window: Window,
    /// Raw bytes sent since `meter_from` (answered or pushed back).
    meter_bytes: u64,
    meter_from: Duration,
    /// Raw bytes per second sent over the last whole period.
    sent_rate: Option<f64>,
    pace: Option<Pace>,
    /// Cuts for push backs so far: a request carries the epoch it was let through in, and a
    /// push back to one let through before the last cut says nothing new (the cut answered it).
    epoch: u64,
}

/// What the current window saw.
#[derive(Clone, Debug, Default)]
struct Window {
    /// When it opened (time since any fixed origin: the controller compares, never reads a clock).
    opened: Duration,
    answers: u32,
    rtt_total: Duration,
    /// Every place was taken (a request was sent into the last one, or one waited).
    reached: bool,
    /// A request waited for the pace: the pace, not the places, held it back.
    paced: bool,
    /// The service pushed back in this window.
    pushed: bool,
}

impl Controller {
    /// A controller between `min` and `max` places (`min` ≥ 1, `max` ≥ `min`).
    pub(crate) fn new(min: u32, max: u32, now: Duration) -> Controller {
        let min = min.max(1);
        let max = max.max(min);
        Controller {
            min,
            max,
            limit: INITIAL_LIMIT.clamp(min, max),
            adaptive: true,
            slow_start: true,
            baseline: None,
            window: Window {
                opened: now,
                ..Window::default()
            },
            meter_bytes: 0,
            meter_from: now,
            sent_rate: None,
            pace: None,
            epoch: 0,
        }
    }

    /// A controller whose places never move from `limit`, and never paced.
    pub(crate) fn fixed(limit: u32, now: Duration) -> Controller {
        let mut c = Controller::new(limit, limit, now);
        c.limit = limit.max(1);
        c.adaptive = false;
        c
    }

    /// How many requests may be in flight now.
    pub(crate) fn limit(&self) -> u32 {
        self.limit
    }

    /// The baseline round trip, once one is known.
    pub(crate) fn baseline(&self) -> Option<Duration> {
        self.baseline
    }

    /// The pace in raw bytes per second, when paced.
    pub(crate) fn pace(&self) -> Option<f64> {
        self.pace.as_ref().map(|p| p.rate)
    }

    /// Every place is taken: a request was sent into the last one, or one is waiting.
    pub(crate) fn reached(&mut self) {
        self.window.reached = true;
    }

    /// The epoch requests let through now belong to (see [`Signal::PushedBack`]).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A request of `raw_bytes` wants to start at `now`: how long it waits for the pace (its
    /// turn is taken, so the next one waits after it).
    pub(crate) fn schedule(&mut self, now: Duration, raw_bytes: u64) -> Duration {
        let Some(pace) = self.pace.as_mut() else {
            return Duration::ZERO;
        };
        let start = pace.next_send.max(now);
        pace.next_send = start + Duration::from_secs_f64(raw_bytes as f64 / pace.rate);
        let wait = start - now;
        if !wait.is_zero() {
            pace.waited = true;
            pace.last_wait = now;
            self.window.paced = true;
        }
        wait
    }

    /// An answer (or its absence) arrived at `now`.
    pub(crate) fn observe(&mut self, now: Duration, signal: Signal) -> Option<Change> {
        if !self.adaptive {
            return None;
        }
        let mut change = None;
        match signal {
            Signal::Answered { rtt, raw_bytes } => {
                self.window.answers += 1;
                self.window.rtt_total += rtt;
                self.meter(now, raw_bytes);
                self.grow_pace(now);
            }
            Signal::PushedBack { epoch, raw_bytes } => {
                self.meter(now, raw_bytes);
                self.window.pushed = true;
                if epoch == self.epoch {
                    self.epoch += 1;
                    self.slow_start = false;
                    self.cut_pace(now);
                    let halved = (self.limit / 2).max(self.min);
                    if halved < self.limit {
                        self.limit = halved;
                        change = Some(Change::Halved(halved));
                    }
                }
            }
            Signal::Neither => {}
        }
        let length = self.baseline.unwrap_or(Duration::ZERO).max(MIN_WINDOW);
        if now.saturating_sub(self.window.opened) >= length {
            change = self.close_window(now).or(change);
        }
        change
    }

    /// Counts sent bytes; a whole period's become the sent rate.
    fn meter(&mut self, now: Duration, bytes: u64) {
        self.meter_bytes += bytes;
        let elapsed = now.saturating_sub(self.meter_from);
        if elapsed >= METER_PERIOD {
            self.sent_rate = Some(self.meter_bytes as f64 / elapsed.as_secs_f64());
            self.meter_bytes = 0;
            self.meter_from = now;
        }
    }

    /// What was sent lately, per second: the last whole period, or the current one's when no
    /// period has ended yet.
    fn recent_rate(&self, now: Duration) -> Option<f64> {
        self.sent_rate.or_else(|| {
            let elapsed = now.saturating_sub(self.meter_from);
            (elapsed >= MIN_WINDOW && self.meter_bytes > 0)
                .then(|| self.meter_bytes as f64 / elapsed.as_secs_f64())
        })
    }

    /// A push back: the first paces to half of what was being sent; later ones cut the pace
    /// (or what was sent, if less) by [`PACE_CUT`], remembering the pace as too much.
    fn cut_pace(&mut self, now: Duration) {
        let sent = self.recent_rate(now);
        let (rate, too_much) = match (self.pace.as_ref(), sent) {
            // Requests wait for the pace: it is what was sent (a period's bytes would say so
            // only coarsely, a few large batches per second).
            (Some(p), _) if p.waited || now.saturating_sub(p.last_wait) < 2 * METER_PERIOD => {
                (p.rate * PACE_CUT, p.rate)
            }
            // Sending less than the pace allows (others share the quota): cut what was sent.
            (Some(p), Some(s)) => (p.rate.min(s) * PACE_CUT, p.rate.min(s)),
            (Some(p), None) => (p.rate * PACE_CUT, p.rate),
            (None, Some(s)) => (s * FIRST_PACE_CUT, s),
            // Nothing measured yet: places alone, for now.
            (None, None) => return,
        };
        // Cut again before reaching what was too much last time: the quota fell (or was
        // never that high); remember halfway, so the pace does not come back all the way.
        let too_much = match self.pace.as_ref() {
            Some(p) if too_much < p.too_much => (too_much + p.too_much) / 2.0,
            _ => too_much,
        };
        // The turn already given stays: the next request waits after the last one.
        let next_send = self.pace.as_ref().map_or(now, |p| p.next_send);
        self.pace = Some(Pace {
            rate: rate.max(MIN_PACE),
            too_much: too_much.max(MIN_PACE),
            above_since: None,
            next_send,
            waited: false,
            last_growth: now,
            last_wait: now,
        });
    }

    /// Grows a pace requests waited for: below the rate that was too much, closing
    /// [`PACE_APPROACH`] of the gap per second; above it, by [`PACE_PROBE`] per second times
    /// `1 + s/4`, `s` seconds since it passed (at most [`PACE_GROWTH_HORIZON`]). Drops a pace
    /// nobody waited for in [`PACE_IDLE`].
    fn grow_pace(&mut self, now: Duration) {
        let Some(pace) = self.pace.as_mut() else {
            return;
        };
        if now.saturating_sub(pace.last_wait) >= PACE_IDLE {
            self.pace = None;
            return;
        }
        let dt = now.saturating_sub(pace.last_growth);
        if dt < MIN_WINDOW {
            return;
        }
        let dt_s = dt.as_secs_f64();
        if pace.waited {
            if pace.rate < pace.too_much {
                pace.rate += (pace.too_much - pace.rate) * (PACE_APPROACH * dt_s).min(1.0);
                if pace.too_much - pace.rate < pace.too_much * 0.001 {
                    pace.rate = pace.too_much;
                }
            } else {
                let since = *pace.above_since.get_or_insert(now);
                let s = now
                    .saturating_sub(since)
                    .min(PACE_GROWTH_HORIZON)
                    .as_secs_f64();
                pace.rate *= 1.0 + PACE_PROBE * dt_s * (1.0 + s / 4.0);
            }
        }
        pace.waited = false;
        pace.last_growth = now;
    }

    /// Ends the window: the round trips decide, unless the service pushed back in it.
    fn close_window(&mut self, now: Duration) -> Option<Change> {
        let window = std::mem::replace(
            &mut self.window,
            Window {
                opened: now,
                ..Window::default()
            },
        );
        if window.answers == 0 {
            return None;
        }
        let mean = window.rtt_total / window.answers;
        let baseline = *self.baseline.get_or_insert(mean);
        let rose = mean > baseline + (baseline / 2).max(RTT_SLACK);
        self.baseline = Some(Duration::from_secs_f64(
            baseline.as_secs_f64() * (1.0 - BASELINE_WEIGHT) + mean.as_secs_f64() * BASELINE_WEIGHT,
        ));
        if window.pushed || self.min == self.max {
            return None;
        }
        if rose {
            self.slow_start = false;
            let eased = (self.limit - (self.limit / 10).max(1)).max(self.min);
            if eased < self.limit {
                self.limit = eased;
                return Some(Change::Eased(eased));
            }
            return None;
        }
        if window.reached && !window.paced && self.limit < self.max {
            self.limit = if self.slow_start {
                self.limit.saturating_mul(2)
            } else {
                self.limit + 1
            }
            .min(self.max);
            return Some(Change::Grew(self.limit));
        }
        None
    }
}

/// What a destination's gate shows in the stats.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SendLimit {
    /// Project of the destination.
    pub project: String,
    /// Logstore of the destination.
    pub logstore: String,
    /// Batches it may have in flight now.
    pub limit: u32,
    /// Batches in flight now (sent, or delivered and not yet settled).
    pub sending: u32,
    /// Raw bytes per second its requests are paced to since a push back; 0 when not paced.
    pub pace: u64,
    /// Answers that pushed back (quota, throttling, busy, timeout) so far.
    pub pushed_back: u64,
    /// Times its places were cut.
    pub cuts: u64,
    /// Baseline round trip in milliseconds (0 until one is known).
    pub rtt_ms: u64,
}

/// The state a gate's lock guards.
#[derive(Debug)]
struct GateState {
    controller: Controller,
    sending: u32,
    pushed_back: u64,
    cuts: u64,
}

/// One destination's places and pace (see the module notes).
#[derive(Debug)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    freed: Notify,
    /// Origin of the controller's clock.
    origin: std::time::Instant,
}

impl Gate {
    /// An adaptive gate between `min` and `max` places, or a fixed one of `max`.
    pub(crate) fn new(adaptive: bool, min: u32, max: u32) -> Gate {
        let controller = if adaptive {
            Controller::new(min, max, Duration::ZERO)
        } else {
            Controller::fixed(max, Duration::ZERO)
        };
        Gate {
            state: Mutex::new(GateState {
                controller,
                sending: 0,
                pushed_back: 0,
                cuts: 0,
            }),
            freed: Notify::new(),
            origin: std::time::Instant::now(),
        }
    }

    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// Waits for a place, then for the pace's turn of a request of `raw_bytes`. The place is
    /// given back when the [`Place`] answered is dropped (also when the wait is abandoned after
    /// it was taken).
    ///
    /// A freed place wakes one waiter, not all: under a saturating load hundreds of compressed
    /// batches wait here, and waking every one of them for each place given back (each to find
    /// it taken again) cost about a third of the engine's CPU per log. A waiter woken for a
    /// place another took first waits again; one that goes away passes its wake-up on (tokio's
    /// `Notified` does so when dropped), so no place stays free while a batch waits.
    pub(crate) async fn acquire(self: &Arc<Self>, raw_bytes: u64) -> Place {
        loop {
            if let Some(place) = self.try_take(raw_bytes) {
                return place.await;
            }
            let freed = self.freed.notified();
            tokio::pin!(freed);
            // Registered, then checked again: a place freed between the first check and the
            // registration would otherwise wake nobody.
            freed.as_mut().enable();
            if let Some(place) = self.try_take(raw_bytes) {
                return place.await;
            }
            freed.await;
        }
    }

    /// A place, when one is free: taken now, and its pace's wait to be awaited.
    fn try_take(
        self: &Arc<Self>,
        raw_bytes: u64,
    ) -> Option<impl std::future::Future<Output = Place>> {
        let (wait, epoch) = {
            let mut state = self.state.lock();
            if state.sending < state.controller.limit() {
                state.sending += 1;
                if state.sending == state.controller.limit() {
                    state.controller.reached();
                }
                let now = self.now();
                let epoch = state.controller.epoch();
                (state.controller.schedule(now, raw_bytes), epoch)
            } else {
                state.controller.reached();
                return None;
            }
        };
        let place = Place {
            gate: Arc::clone(self),
            epoch,
        };
        Some(async move {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            place
        })
    }

    /// Tells the controller what an answer said.
    pub(crate) fn observe(&self, signal: Signal) {
        let grew = {
            let mut state = self.state.lock();
            if matches!(signal, Signal::PushedBack { .. }) {
                state.pushed_back += 1;
            }
            let now = self.now();
            match state.controller.observe(now, signal) {
                Some(Change::Grew(_)) => true,
                Some(Change::Halved(_) | Change::Eased(_)) => {
                    state.cuts += 1;
                    false
                }
                None => false,
            }
        };
        if grew {
            // New places: every waiter may find one (rare: at most once a window).
            self.freed.notify_waiters();
        }
    }

    /// Whether nothing is in flight (an idle gate may be forgotten).
    pub(crate) fn idle(&self) -> bool {
        self.state.lock().sending == 0
    }

    /// The stats' view of it.
    pub(crate) fn view(&self, project: &str, logstore: &str) -> SendLimit {
        let state = self.state.lock();
        SendLimit {
            project: project.to_owned(),
            logstore: logstore.to_owned(),
            limit: state.controller.limit(),
            sending: state.sending,
            pace: state.controller.pace().map_or(0, |p| p as u64),
            pushed_back: state.pushed_back,
            cuts: state.cuts,
            rtt_ms: state
                .controller
                .baseline()
                .map_or(0, |b| b.as_millis() as u64),
        }
    }
}

/// A place taken in a gate; given back when dropped.
#[derive(Debug)]
pub(crate) struct Place {
    gate: Arc<Gate>,
    /// The controller's epoch when the request was let through.
    epoch: u64,
}

impl Place {
    /// Tells the gate's controller what the request's answer said.
    pub(crate) fn observe(&self, answer: &Answer, rtt: Duration, raw_bytes: u64) {
        self.gate
            .observe(signal_of(answer, rtt, raw_bytes, self.epoch));
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        {
            let mut state = self.gate.state.lock();
            state.sending = state.sending.saturating_sub(1);
        }
        // One place freed: one waiter woken (see `Gate::acquire`).
        self.gate.freed.notify_one();
    }
}

/// What an answer says about load: quota and throttling answers (403, 429), 503 and a request
/// timeout push back; an answer of any other status is a round trip; a failed connection, a
/// 5xx other than 503 and a missing credential say nothing.
pub(crate) fn signal_of(answer: &Answer, rtt: Duration, raw_bytes: u64, epoch: u64) -> Signal {
    let pushed_back = Signal::PushedBack { epoch, raw_bytes };
    match answer.status {
        None if answer.code == "RequestTimeout" => pushed_back,
        None => Signal::Neither,
        Some(403 | 429 | 503) => pushed_back,
        Some(500..) => Signal::Neither,
        Some(_) => Signal::Answered { rtt, raw_bytes },
    }
}

/// A destination: project and logstore.
type DestinationKey = (Arc<str>, Arc<str>);

/// Every destination's gate, made on its first batch.
#[derive(Debug)]
pub(crate) struct Gates {
    adaptive: bool,
    min: u32,
    max: u32,
    by_destination: Mutex<HashMap<DestinationKey, Arc<Gate>>>,
}

impl Gates {
    /// Idle gates beyond this many are forgotten (a destination sent to again starts anew).
    const KEPT: usize = 1024;

    pub(crate) fn new(adaptive: bool, min: usize, max: usize) -> Gates {
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        Gates {
            adaptive,
            min: u32::try_from(min).unwrap_or(u32::MAX).min(max),
            max,
            by_destination: Mutex::new(HashMap::new()),
        }
    }

    /// The gate of `project`/`logstore`.
    pub(crate) fn of(&self, project: &Arc<str>, logstore: &Arc<str>) -> Arc<Gate> {
        let mut map = self.by_destination.lock();
        if let Some(gate) = map.get(&(Arc::clone(project), Arc::clone(logstore))) {
            return Arc::clone(gate);
        }
        if map.len() >= Self::KEPT {
            map.retain(|_, gate| Arc::strong_count(gate) > 1 || !gate.idle());
        }
        let gate = Arc::new(Gate::new(self.adaptive, self.min, self.max));
        map.insert(
            (Arc::clone(project), Arc::clone(logstore)),
            Arc::clone(&gate),
        );
        gate
    }

    /// Every destination's view, in name order.
    pub(crate) fn views(&self) -> Vec<SendLimit> {
        let map = self.by_destination.lock();
        let mut views: Vec<SendLimit> = map
            .iter()
            .map(|((project, logstore), gate)| gate.view(project, logstore))
            .collect();
        views.sort_by(|a, b| (&a.project, &a.logstore).cmp(&(&b.project, &b.logstore)));
        views
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn answered(rtt: Duration, raw_bytes: u64) -> Signal {
        Signal::Answered { rtt, raw_bytes }
    }

    /// One step of a table: at `t` ms, what happened, and the limit after it.
    enum Step {
        /// A request was sent with every place taken (the time only reads the table).
        Reached(#[allow(dead_code)] u64),
        /// An answer with this round trip (ms) at `t`.
        Rtt(u64, u64),
        /// A push-back answer at `t` to a request let through in an epoch.
        Back(u64, u64),
        /// An unrelated failure at `t`.
        Other(u64),
    }
    use Step::*;

    fn run(controller: &mut Controller, steps: &[(Step, u32)]) {
        for (i, (step, want)) in steps.iter().enumerate() {
            match *step {
                Reached(_) => controller.reached(),
                Rtt(t, rtt) => {
                    controller.observe(ms(t), answered(ms(rtt), 0));
                }
                Back(t, epoch) => {
                    let signal = Signal::PushedBack {
                        epoch,
                        raw_bytes: 0,
                    };
                    controller.observe(ms(t), signal);
                }
                Other(t) => {
                    controller.observe(ms(t), Signal::Neither);
                }
            }
            assert_eq!(controller.limit(), *want, "step {i}");
        }
    }

    #[test]
    fn slow_start_doubles_while_round_trips_stay_flat_and_the_limit_is_reached() {
        let mut c = Controller::new(1, 64, Duration::ZERO);
        run(
            &mut c,
            &[
                (Reached(0), 2),
                (Rtt(60, 50), 4), // the first window sets the baseline and grows
                (Reached(60), 4),
                (Rtt(120, 50), 8),
                (Reached(120), 8),
                (Rtt(180, 51), 16),
                (Reached(180), 16),
                (Rtt(240, 49), 32),
                (Reached(240), 32),
                (Rtt(300, 50), 64),
                (Reached(300), 64),
                (Rtt(360, 50), 64), // the bound
            ],
        );
    }

    #[test]
    fn no_growth_when_the_limit_is_not_reached() {
        let mut c = Controller::new(1, 64, Duration::ZERO);
        run(
            &mut c,
            &[(Rtt(50, 50), 2), (Rtt(100, 50), 2), (Rtt(150, 50), 2)],
        );
    }

    #[test]
    fn a_push_back_halves_once_for_the_requests_sent_before_it_and_ends_slow_start() {
        let mut c = Controller::new(1, 64, Duration::ZERO);
        run(
            &mut c,
            &[
                (Reached(0), 2),
                (Rtt(20, 20), 4),
                (Reached(20), 4),
                (Rtt(40, 20), 8),
                (Reached(40), 8),
                (Rtt(60, 20), 16),
                // A burst of quota answers to requests let through before the first cut: one halving.
                (Back(61, 0), 8),
                (Back(62, 0), 8),
                (Back(63, 0), 8),
                // The window that saw them closes without growth.
                (Reached(63), 8),
                (Rtt(85, 20), 8),
                // Then additive growth, one per window.
                (Reached(85), 8),
                (Rtt(106, 20), 9),
                (Reached(106), 9),
                (Rtt(127, 20), 10),
                // Another push back: halved again.
                (Back(128, 1), 5),
            ],
        );
    }

    #[test]
    fn pushes_back_never_go_under_the_floor() {
        let mut c = Controller::new(3, 64, Duration::ZERO);
        run(
            &mut c,
            &[
                (Back(0, 0), 3),
                (Back(20, 1), 3),
                (Back(40, 2), 3),
                (Reached(40), 3),
                (Rtt(60, 10), 4),
            ],
        );
    }

    #[test]
    fn rising_round_trips_ease_the_limit_by_a_tenth() {
        let mut c = Controller::new(1, 64, Duration::ZERO);
        run(
            &mut c,
            &[
                (Reached(0), 2),
                (Rtt(100, 100), 4),
                (Reached(100), 4),
                (Rtt(200, 100), 8),
                (Reached(200), 8),
                (Rtt(300, 100), 16),
                (Reached(300), 16),
                (Rtt(400, 100), 32),
                // The mean doubles: cut by a tenth (3 of 32), no growth although reached.
                (Reached(400), 32),
                (Rtt(500, 200), 29),
                // Flat again (within half of the baseline, which moved up a little): growth by one.
                (Reached(500), 29),
                (Rtt(620, 120), 30),
            ],
        );
    }

    #[test]
    fn loopback_noise_within_the_slack_is_flat() {
        let mut c = Controller::new(1, 8, Duration::ZERO);
        run(
            &mut c,
            &[
                (Reached(0), 2),
                (Rtt(10, 1), 4),
                // 1 ms → 4 ms is four times the baseline, but within the 5 ms slack.
                (Reached(10), 4),
                (Rtt(20, 4), 8),
                (Reached(20), 8),
                (Rtt(30, 5), 8),
            ],
        );
    }

    #[test]
    fn unrelated_failures_say_nothing() {
        let mut c = Controller::new(1, 64, Duration::ZERO);
        run(
            &mut c,
            &[
                (Reached(0), 2),
                (Other(5), 2),
                (Other(50), 2),
                (Rtt(60, 10), 2),
            ],
        );
    }

    #[test]
    fn the_window_is_one_baseline_round_trip_long() {
        let mut c = Controller::new(1, 64, Duration::ZERO);
        run(&mut c, &[(Reached(0), 2), (Rtt(150, 150), 4)]);
        assert_eq!(c.baseline(), Some(ms(150)));
        // Answers within 150 ms of the window's opening do not close it.
        run(
            &mut c,
            &[(Reached(150), 4), (Rtt(200, 150), 4), (Rtt(299, 150), 4)],
        );
        run(&mut c, &[(Rtt(300, 150), 8)]);
    }

    #[test]
    fn fixed_never_moves() {
        let mut c = Controller::fixed(8, Duration::ZERO);
        run(
            &mut c,
            &[
                (Reached(0), 8),
                (Rtt(50, 10), 8),
                (Back(60, 0), 8),
                (Rtt(200, 500), 8),
            ],
        );
    }

    /// A model of a destination with a fixed round trip and a quota of `quota` requests per
    /// window: the controller settles near the quota, and the share of pushed-back answers
    /// after it converges stays small.
    #[test]
    fn converges_under_a_request_quota() {
        let quota = 12u32;
        let rtt = 50u64;
        let mut c = Controller::new(1, 64, Duration::ZERO);
        let mut pushed = 0u32;
        let mut through = 0u32;
        for round in 0..200u64 {
            let t = round * rtt;
            let sent = c.limit();
            let epoch = c.epoch();
            c.reached();
            for i in 0..sent {
                let at = t + rtt * u64::from(i + 1) / u64::from(sent);
                if i < quota {
                    c.observe(ms(at), answered(ms(rtt), 0));
                    if round >= 100 {
                        through += 1;
                    }
                } else {
                    let signal = Signal::PushedBack {
                        epoch,
                        raw_bytes: 0,
                    };
                    c.observe(ms(at), signal);
                    if round >= 100 {
                        pushed += 1;
                    }
                }
            }
        }
        // AIMD saws between half the quota and just over it: most answers get through.
        let total = through + pushed;
        assert!(
            f64::from(pushed) / f64::from(total) <= 0.10,
            "{pushed} of {total}"
        );
        assert!(
            f64::from(through) / 100.0 >= f64::from(quota) * 0.7,
            "{through} answered in 100 rounds"
        );
    }

    /// `producers` simulated producers sharing a byte quota of `quota` per second (a bucket of
    /// one second's worth, as the emulator's), each with batches of `batch` raw bytes always
    /// waiting and a fixed round trip (each a little apart, so they do not move in lockstep).
    /// Per producer, from `from_s` to `to_s`: (raw bytes delivered, pushed back, answers).
    fn simulate(
        producers: usize,
        quota: u64,
        batch: u64,
        rtt_ms: u64,
        (from_s, to_s): (u64, u64),
    ) -> Vec<(u64, u64, u64)> {
        let mut controllers: Vec<Controller> = (0..producers)
            .map(|_| Controller::new(1, 64, Duration::ZERO))
            .collect();
        let mut tokens = quota as f64;
        // Per producer, (start, finish, accepted, epoch) of requests placed.
        let mut placed: Vec<Vec<(u64, u64, bool, u64)>> = vec![Vec::new(); producers];
        let mut seen = vec![(0u64, 0u64, 0u64); producers];
        for t in 0..to_s * 1000 {
            tokens = (tokens + quota as f64 / 1000.0).min(quota as f64);
            let counting = t >= from_s * 1000;
            // Start in a different order each millisecond, as requests race on a real network.
            for k in 0..producers {
                let i = (k + t as usize) % producers;
                let c = &mut controllers[i];
                let rtt = rtt_ms + i as u64 % 3;
                let seen = &mut seen[i];
                placed[i].retain(|&(_, finish, accepted, epoch)| {
                    if finish != t {
                        return true;
                    }
                    let signal = if accepted {
                        answered(ms(rtt), batch)
                    } else {
                        Signal::PushedBack {
                            epoch,
                            raw_bytes: batch,
                        }
                    };
                    c.observe(ms(t), signal);
                    if counting {
                        seen.2 += 1;
                        if accepted {
                            seen.0 += batch;
                        } else {
                            seen.1 += 1;
                        }
                    }
                    false
                });
                while (placed[i].len() as u32) < c.limit() {
                    let epoch = c.epoch();
                    let start = t + c.schedule(ms(t), batch).as_millis() as u64;
                    placed[i].push((start, start + rtt, false, epoch));
                    if placed[i].len() as u32 == c.limit() {
                        c.reached();
                    }
                }
                // Requests whose turn came reach the service.
                for p in placed[i].iter_mut().filter(|p| p.0 == t) {
                    if tokens >= batch as f64 {
                        tokens -= batch as f64;
                        p.2 = true;
                    }
                }
            }
        }
        seen
    }

    #[test]
    fn a_byte_quota_is_met_with_few_push_backs_after_ten_seconds() {
        for (quota, batch, rtt) in [
            (10_000_000, 3 << 20, 10),
            (10_000_000, 1 << 20, 50),
            (5_000_000, 512 << 10, 150),
            (40_000_000, 1 << 20, 2),
        ] {
            let (delivered, pushed, answers) = simulate(1, quota, batch, rtt, (10, 70))[0];
            let goodput = delivered as f64 / 60.0 / quota as f64;
            let share = pushed as f64 / answers as f64;
            assert!(
                goodput >= 0.95,
                "goodput {goodput:.3} (quota {quota}, rtt {rtt})"
            );
            assert!(
                share <= 0.05,
                "{pushed} of {answers} pushed back (quota {quota}, rtt {rtt})"
            );
        }
    }

    #[test]
    fn twenty_producers_share_a_quota_without_starving_one() {
        let quota = 20_000_000u64;
        let seen = simulate(20, quota, 256 << 10, 50, (10, 70));
        let delivered: u64 = seen.iter().map(|s| s.0).sum();
        let pushed: u64 = seen.iter().map(|s| s.1).sum();
        let answers: u64 = seen.iter().map(|s| s.2).sum();
        let goodput = delivered as f64 / 60.0 / quota as f64;
        assert!(goodput >= 0.9, "goodput {goodput:.3}");
        assert!(
            pushed as f64 / answers as f64 <= 0.10,
            "{pushed} of {answers} pushed back"
        );
        let fair = delivered as f64 / 20.0;
        for (i, s) in seen.iter().enumerate() {
            let share = s.0 as f64 / fair;
            assert!(
                (0.5..=2.0).contains(&share),
                "producer {i}: {share:.2} of a fair share"
            );
        }
    }

    /// A future that counts its polls.
    struct Counted<F> {
        inner: std::pin::Pin<Box<F>>,
        polls: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl<F: std::future::Future> std::future::Future for Counted<F> {
        type Output = F::Output;
        fn poll(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<F::Output> {
            self.polls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.inner.as_mut().poll(cx)
        }
    }

    /// Under a saturating load hundreds of batches wait at a gate: a place given back wakes
    /// one of them, not every one (waking all, each to find the place taken again, cost a
    /// third of the engine's CPU per log on S1), and every waiter gets a place in turn.
    #[test]
    fn a_freed_place_wakes_one_waiter_and_every_waiter_gets_one() {
        use std::sync::atomic::Ordering::Relaxed;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let gate = Arc::new(Gate::new(false, 1, 1));
            let held = gate.acquire(0).await;
            let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let got = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let waiters = 100;
            let mut tasks = Vec::new();
            for _ in 0..waiters {
                let (gate, got) = (gate.clone(), got.clone());
                tasks.push(tokio::spawn(Counted {
                    inner: Box::pin(async move {
                        let place = gate.acquire(0).await;
                        got.fetch_add(1, Relaxed);
                        tokio::task::yield_now().await;
                        drop(place);
                    }),
                    polls: polls.clone(),
                }));
            }
            // Every waiter polled once and waiting.
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            assert_eq!(polls.load(Relaxed), waiters);
            assert_eq!(got.load(Relaxed), 0);
            polls.store(0, Relaxed);
            drop(held);
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            assert!(got.load(Relaxed) >= 1, "the freed place was taken");
            for task in tasks {
                task.await.unwrap();
            }
            assert_eq!(got.load(Relaxed), waiters, "every waiter got a place");
            // Each waiter is polled about twice more (woken with its place, then once after
            // it yields): waking all on each release would poll about waiters² / 2 times.
            let polls = polls.load(Relaxed);
            assert!(
                polls <= 3 * waiters,
                "{polls} polls for {waiters} places handed on"
            );
        });
    }
}
