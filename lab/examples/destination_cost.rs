//! Instruction counts of adds to destinations other than the producer's own, for
//! `valgrind --tool=callgrind` (run with N adds and with 0; the difference over N is one add):
//! `topic` sends every S1 log with the same topic of its own; `topics` cycles through 100
//! topics (the per-tenant or per-device pattern). Batches never seal while it runs. A binary of
//! its own, so that `encode_cost`'s plain add is compiled as before.
use loghose::producer::{Producer, SendOptions, Track};
use loghose_lab::S1Workload;

mod support;

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "topic".into());
    let n: u64 = std::env::args()
        .nth(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or(8_000);
    let topics: Vec<String> = match mode.as_str() {
        "topics" => (0..100).map(|t| format!("tenant-{t}")).collect(),
        _ => vec!["tenant-7".into()],
    };
    let p = Producer::new(support::unsealed_config()).expect("producer");
    let work = S1Workload::default();
    // At most 8 000 adds: fewer than one batch holds, so nothing seals.
    for i in 0..n.min(8_000) {
        let opts = SendOptions {
            topic: Some(&topics[i as usize % topics.len()]),
            ..Default::default()
        };
        p.send_with(&opts, Track::None, |enc| work.fill(enc, i))
            .expect("room");
    }
    println!("{}", p.pending());
    std::process::exit(0);
}
