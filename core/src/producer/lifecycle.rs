//! The producer's lifecycle: one state, changed in one place.
//!
//! ```text
//! Running ──close──▶ Closing ──timeout──▶ Aborted ──▶ Closed
//!                       └───────────all settled──────────▶ Closed
//! ```
//!
//! - `Running`: adds are accepted.
//! - `Closing`: adds are refused; open batches are sealed and delivery goes on.
//! - `Aborted`: the close timeout passed; batches still being sent or waiting to retry stop and
//!   are reported as failed (`ProducerClosed`).
//! - `Closed`: nothing runs any more (the deadlines task has ended); final.
//!
//! The state is read on every add (one atomic load); tasks on the I/O runtime wait for a change
//! through a watch channel. Transitions only move forward: [`Lifecycle::advance`] ignores a move
//! back, so `close` is idempotent and safe from any thread.

use std::sync::atomic::{AtomicU8, Ordering};

/// Where a producer is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    /// Accepting records.
    Running = 0,
    /// Refusing records, delivering what it holds.
    Closing = 1,
    /// The close timeout passed: what is still being sent is abandoned.
    Aborted = 2,
    /// Done.
    Closed = 3,
}

impl State {
    fn from_u8(v: u8) -> State {
        match v {
            0 => State::Running,
            1 => State::Closing,
            2 => State::Aborted,
            _ => State::Closed,
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            State::Running => "running",
            State::Closing => "closing",
            State::Aborted => "aborted",
            State::Closed => "closed",
        })
    }
}

/// The state, readable without a lock, with a channel for tasks that wait on it.
pub(crate) struct Lifecycle {
    state: AtomicU8,
    changed: tokio::sync::watch::Sender<State>,
}

impl Lifecycle {
    pub(crate) fn new() -> Lifecycle {
        Lifecycle {
            state: AtomicU8::new(State::Running as u8),
            changed: tokio::sync::watch::channel(State::Running).0,
        }
    }

    /// The current state.
    #[inline]
    pub(crate) fn state(&self) -> State {
        State::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Whether adds are still accepted (the check every add makes).
    #[inline]
    pub(crate) fn is_running(&self) -> bool {
        self.state.load(Ordering::Acquire) == State::Running as u8
    }

    /// Moves to `to` if that is forward; returns the state before.
    pub(crate) fn advance(&self, to: State) -> State {
        let before = State::from_u8(self.state.fetch_max(to as u8, Ordering::AcqRel));
        if to > before {
            self.changed.send_replace(to);
        }
        before
    }

    /// Resolves once the state is at least `at_least` (for tasks on the I/O runtime).
    pub(crate) async fn reached(&self, at_least: State) {
        let mut rx = self.changed.subscribe();
        // The sender lives as long as `self`, so waiting cannot fail.
        let _ = rx.wait_for(|s| *s >= at_least).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_only_move_forward() {
        let l = Lifecycle::new();
        assert!(l.is_running());
        assert_eq!(l.advance(State::Closing), State::Running);
        assert_eq!(l.advance(State::Running), State::Closing);
        assert_eq!(l.state(), State::Closing);
        assert_eq!(l.advance(State::Closed), State::Closing);
        assert_eq!(l.advance(State::Aborted), State::Closed);
        assert_eq!(l.state(), State::Closed);
        assert_eq!(State::Aborted.to_string(), "aborted");
    }

    #[test]
    fn waiters_wake_on_the_change() {
        let l = std::sync::Arc::new(Lifecycle::new());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let waiting = l.clone();
        rt.block_on(async move {
            let task = tokio::spawn(async move { waiting.reached(State::Aborted).await });
            tokio::task::yield_now().await;
            l.advance(State::Closing);
            tokio::task::yield_now().await;
            assert!(!task.is_finished());
            l.advance(State::Aborted);
            tokio::time::timeout(std::time::Duration::from_secs(5), task)
                .await
                .unwrap()
                .unwrap();
        });
    }
}
