//! `loghose send KEY=VALUE…`: one record, delivered before the command exits; the exit status
//! says whether it was (0 delivered, 1 not, 2 bad arguments or configuration). Runs on the
//! calling thread, which waits for the record's report.

use std::time::Duration;

use super::options::ProducerArgs;
use crate::producer::SendOptions;

/// Sends one record and waits until it is delivered or has failed.
#[derive(clap::Args, Debug)]
pub struct SendArgs {
    /// Where and how to send.
    #[command(flatten)]
    pub producer: ProducerArgs,
    /// How long to wait for delivery, ms.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,
    /// The record's fields.
    #[arg(value_name = "KEY=VALUE", required = true)]
    pub fields: Vec<String>,
}

/// Runs `loghose send`.
pub fn run(args: SendArgs) -> u8 {
    let mut fields = Vec::with_capacity(args.fields.len());
    for field in &args.fields {
        match field.split_once('=') {
            Some((key, value)) => fields.push((key, value)),
            None => {
                eprintln!("loghose send: a field is KEY=VALUE, got {field:?}");
                return super::EXIT_USAGE;
            }
        }
    }
    let producer = match args.producer.producer("loghose send", &[]) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let opts = SendOptions::default();
    let timeout = Duration::from_millis(args.timeout_ms);
    let outcome = producer
        .send_with_completion(&fields, &opts)
        .map_err(|e| e.to_string())
        .and_then(|completion| {
            // Sent now, not at the end of the linger.
            producer.flush(timeout);
            completion.wait(timeout).map_err(|e| e.to_string())
        });
    let code = match outcome {
        Ok(report) if report.is_delivered() => super::EXIT_DELIVERED,
        Ok(report) => {
            eprintln!(
                "loghose send: not delivered: {} {}",
                report.error_code().unwrap_or("error"),
                report.error_message().unwrap_or("")
            );
            super::EXIT_NOT_DELIVERED
        }
        Err(e) => {
            eprintln!("loghose send: not delivered: {e}");
            super::EXIT_NOT_DELIVERED
        }
    };
    // Nothing is left to wait for after the record's own outcome.
    producer.close(Duration::from_millis(100));
    code
}
