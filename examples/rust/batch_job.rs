//! A batch job that must not lose a record: a spool on disk, and an exit status that says what
//! happened, for cron, systemd or a CI pipeline to act on.
//!
//! Every record is on disk before `send` returns (`spool_dir`; `spool_sync = batch` makes each
//! batch durable before it is sent). If the service cannot take everything before the job's
//! time is up, the rest stays in the spool and the next run on the same directory delivers it.
//! The exit status follows `loghose pipe`'s: 0 every record delivered, 75 the rest kept durably
//! for the next run, 1 something was lost.
//!
//! With `LOGHOSE_ENDPOINT` (and `LOGHOSE_PROJECT`, `LOGHOSE_LOGSTORE`, keys from the default
//! credential chain) it sends to your project; without it, to an embedded emulator.
//!
//! `cargo run -p loghose --example batch_job [SPOOL_DIR]`

use std::process::ExitCode;
use std::time::Duration;

use loghose::emulator::Emulator;
use loghose::producer::{Producer, ProducerConfig, SendOptions, SpoolSync};

fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let spool_dir = std::env::args().nth(1).unwrap_or_else(|| {
        std::env::temp_dir()
            .join(format!("loghose-job-{}", std::process::id()))
            .display()
            .to_string()
    });
    let (config, emu) = destination("jobs")?;
    let producer = Producer::new(ProducerConfig {
        spool_dir: Some(spool_dir.clone()),
        spool_sync: SpoolSync::Batch,
        ..config
    })?;
    for row in 0..10_000u32 {
        let row = row.to_string();
        producer.send(
            &[
                ("job", "nightly-export"),
                ("row", &row),
                ("status", "exported"),
            ],
            &SendOptions::default(),
        )?;
    }
    let closed = producer.close(Duration::from_secs(30));
    println!(
        "undelivered {}, kept {}, kept not durable {}",
        closed.undelivered, closed.kept, closed.kept_not_durable
    );
    if let Some(emu) = &emu {
        println!(
            "the emulator holds {} records",
            emu.logs("examples", "jobs").len()
        );
    }
    let lost = closed.undelivered + closed.kept_not_durable;
    Ok(if lost > 0 {
        eprintln!("{lost} records lost");
        ExitCode::from(1)
    } else if closed.kept > 0 {
        eprintln!(
            "{} records kept in {spool_dir} for the next run",
            closed.kept
        );
        ExitCode::from(75)
    } else {
        ExitCode::SUCCESS
    })
}

/// The service named by the environment, or an embedded emulator.
fn destination(
    logstore: &str,
) -> Result<(ProducerConfig, Option<Emulator>), Box<dyn std::error::Error>> {
    if let Ok(endpoint) = std::env::var("LOGHOSE_ENDPOINT") {
        let project = std::env::var("LOGHOSE_PROJECT").unwrap_or_else(|_| "my-project".into());
        let logstore = std::env::var("LOGHOSE_LOGSTORE").unwrap_or_else(|_| logstore.into());
        return Ok((ProducerConfig::new(&endpoint, &project, &logstore), None));
    }
    let emu = Emulator::start_default()?;
    Ok((emu.producer_config("examples", logstore), Some(emu)))
}
