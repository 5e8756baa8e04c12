//! The producer engine against the in-process emulator, by behaviour: batching, the adds,
//! flush and close, delivery through faults. Every test is bounded in time and count.

#[path = "../common/mod.rs"]
mod common;

mod adds;
mod batching;
mod delivery;
mod lifecycle;
