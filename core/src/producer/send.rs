//! Sending one sealed batch until it reaches a final outcome, on the shared I/O runtime.
//!
//! The body is compressed once; each attempt re-reads the credentials (rotated STS tokens work
//! mid-retry), re-signs with the clock corrected by what the server said its time was, sends,
//! and classifies the answer (protocol.md §8):
//!
//! | answer | action |
//! |---|---|
//! | 2xx | delivered |
//! | no answer (connect error, reset, timeout), 5xx, non-JSON error body | retry |
//! | 403 (quota), 429 | retry, with a longer backoff floor |
//! | 401 | retry up to `unauthorized_attempts` times (credentials may rotate) |
//! | 400 `RequestTimeExpired` / `RequestTimeTooSkewed` | fix the clock offset, retry at once |
//! | 404, any other 4xx | final failure, reported once |
//!
//! Retries wait with full jitter (`rand(0, min(cap, base·2^n))`) without holding a send slot,
//! and stop at `max_attempts`, at the delivery deadline, or when the producer is closed past
//! its timeout.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use chrono::DateTime;

use super::report::{DeliveryReport, Outcome};
use super::{Inner, SealedBatch};
use crate::wire::compress;
use crate::wire::request::{self, PutLogsTarget};

/// What one attempt's answer means.
#[derive(Debug)]
enum Verdict {
    Delivered(Option<String>),
    Retry {
        code: String,
        message: String,
        status: Option<u16>,
        floor: Duration,
        request_id: Option<String>,
    },
    Unauthorized {
        code: String,
        message: String,
        request_id: Option<String>,
    },
    Skewed {
        code: String,
        message: String,
        request_id: Option<String>,
        server_time: Option<i64>,
    },
    Final {
        code: String,
        message: String,
        status: u16,
        request_id: Option<String>,
    },
}

fn server_time(headers: &reqwest::header::HeaderMap, message: &str) -> Option<i64> {
    // The service names its time in the message ("... while server time is <RFC 1123>");
    // the Date header is the fallback.
    if let Some(pos) = message.find("server time is ") {
        if let Ok(t) = DateTime::parse_from_rfc2822(message[pos + 15..].trim()) {
            return Some(t.timestamp());
        }
    }
    let date = headers.get("date")?.to_str().ok()?;
    DateTime::parse_from_rfc2822(date)
        .ok()
        .map(|d| d.timestamp())
}

async fn attempt(inner: &Inner, batch: &SealedBatch, body: &[u8]) -> Verdict {
    let credentials = match inner.auth() {
        Ok(a) => a,
        Err(message) => {
            return Verdict::Unauthorized {
                code: "CredentialsUnavailable".into(),
                message,
                request_id: None,
            };
        }
    };
    let now = SystemTime::now() + Duration::from_millis(0);
    let offset = inner.clock_offset_ms.load(Ordering::Relaxed);
    let now = if offset >= 0 {
        now + Duration::from_millis(offset as u64)
    } else {
        now - Duration::from_millis(offset.unsigned_abs())
    };
    let dest = &batch.dest;
    let (url_base, host) = inner.addressing(&dest.project);
    let target = PutLogsTarget {
        host: &host,
        logstore: &dest.logstore,
        hash_key: dest.hash_key.as_deref(),
    };
    let req = request::put_logs_compressed(
        target,
        body.to_vec(),
        batch.raw_len,
        inner.config.compression,
        &credentials,
        now,
    );
    let mut builder = inner
        .client
        .post(format!("{url_base}{}", req.path_and_query()));
    for (k, v) in &req.headers {
        if k != "Content-Length" {
            builder = builder.header(k.as_str(), v.as_str());
        }
    }
    let resp = match builder.body(req.body).send().await {
        Ok(r) => r,
        Err(e) => {
            let code = if e.is_timeout() {
                "RequestTimeout"
            } else {
                "RequestError"
            };
            return Verdict::Retry {
                code: code.into(),
                message: e.to_string(),
                status: None,
                floor: Duration::ZERO,
                request_id: None,
            };
        }
    };
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let request_id = headers
        .get("x-log-requestid")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if (200..300).contains(&status) {
        return Verdict::Delivered(request_id);
    }
    let body = resp.bytes().await.unwrap_or_default();
    let parsed: Option<(String, String)> = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| {
            Some((
                v.get("errorCode")?.as_str()?.to_owned(),
                v.get("errorMessage")
                    .and_then(|m| m.as_str())
                    .unwrap_or("")
                    .to_owned(),
            ))
        });
    let Some((code, message)) = parsed else {
        return Verdict::Retry {
            code: "BadResponse".into(),
            message: format!(
                "HTTP {status} without a JSON error: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ),
            status: Some(status),
            floor: Duration::ZERO,
            request_id,
        };
    };
    match status {
        500.. => Verdict::Retry {
            code,
            message,
            status: Some(status),
            floor: Duration::ZERO,
            request_id,
        },
        403 | 429 => Verdict::Retry {
            code,
            message,
            status: Some(status),
            floor: Duration::from_millis(500),
            request_id,
        },
        401 => Verdict::Unauthorized {
            code,
            message,
            request_id,
        },
        400 if code == "RequestTimeExpired" || code == "RequestTimeTooSkewed" => {
            let server_time = server_time(&headers, &message);
            Verdict::Skewed {
                code,
                message,
                request_id,
                server_time,
            }
        }
        _ => Verdict::Final {
            code,
            message,
            status,
            request_id,
        },
    }
}

thread_local! {
    /// Per I/O thread compression working area (grows to the largest batch's bound, then stays;
    /// resident only where bodies were written).
    static COMPRESS_AREA: std::cell::RefCell<compress::CompressArea> = const { std::cell::RefCell::new(compress::CompressArea::new()) };
}

/// Full-jitter backoff before retry number `retry` (1-based).
fn backoff(inner: &Inner, retry: u32, floor: Duration) -> Duration {
    let base = inner.config.backoff_base_ms;
    let cap = inner.config.backoff_max_ms;
    let exp = base
        .saturating_mul(1u64 << retry.saturating_sub(1).min(30))
        .min(cap);
    Duration::from_millis(fastrand::u64(0..=exp)).max(floor.min(Duration::from_millis(cap)))
}

/// Delivers `batch` to a final outcome and reports it.
pub(crate) async fn deliver(inner: Arc<Inner>, mut batch: SealedBatch) {
    inner.in_flight.fetch_add(1, Ordering::Relaxed);
    let codec = inner.config.compression;
    let compressed = COMPRESS_AREA
        .with(|area| compress::compress_with_area(codec, &batch.raw, &mut area.borrow_mut()));
    inner.recycle(std::mem::take(&mut batch.raw));
    let body = match compressed {
        Ok(b) => b,
        Err(e) => {
            let outcome = Outcome::Failed {
                code: "CompressionFailed".into(),
                message: e.to_string(),
                http_status: None,
            };
            finish(&inner, batch, outcome, 0, None, 0);
            return;
        }
    };
    // From here on the batch holds only its compressed body: give the rest of its
    // reservation back, so the buffer bounds the memory actually held.
    if body.len() < batch.reserved {
        inner.release_partial(batch.reserved - body.len());
        batch.reserved = body.len();
    }
    let deadline = batch.opened + Duration::from_millis(inner.config.delivery_timeout_ms);
    let mut abort = inner.abort.subscribe();
    let mut attempts = 0u32;
    let mut unauthorized = 0u32;
    let mut last_request_id = None;
    let outcome = loop {
        let permit = tokio::select! {
            p = inner.send_slots.acquire() => p.ok(),
            _ = abort.wait_for(|a| *a) => None,
        };
        let Some(permit) = permit else {
            break Outcome::Failed {
                code: "ProducerClosed".into(),
                message: "closed before the batch could be sent".into(),
                http_status: None,
            };
        };
        attempts += 1;
        let verdict = tokio::select! {
            v = attempt(&inner, &batch, &body) => v,
            _ = abort.wait_for(|a| *a) => {
                break Outcome::Failed { code: "ProducerClosed".into(), message: "closed while the batch was being sent".into(), http_status: None };
            }
        };
        drop(permit);
        let (code, message, status, floor) = match verdict {
            Verdict::Delivered(id) => {
                last_request_id = id;
                break Outcome::Delivered;
            }
            Verdict::Final {
                code,
                message,
                status,
                request_id,
            } => {
                last_request_id = request_id;
                break Outcome::Failed {
                    code,
                    message,
                    http_status: Some(status),
                };
            }
            Verdict::Retry {
                code,
                message,
                status,
                floor,
                request_id,
            } => {
                last_request_id = request_id.or(last_request_id);
                (code, message, status, floor)
            }
            Verdict::Unauthorized {
                code,
                message,
                request_id,
            } => {
                last_request_id = request_id.or(last_request_id);
                unauthorized += 1;
                if unauthorized > inner.config.unauthorized_attempts {
                    break Outcome::Failed {
                        code,
                        message,
                        http_status: Some(401),
                    };
                }
                (
                    code,
                    message,
                    Some(401),
                    Duration::from_millis(inner.config.backoff_base_ms),
                )
            }
            Verdict::Skewed {
                code,
                message,
                request_id,
                server_time,
            } => {
                last_request_id = request_id.or(last_request_id);
                if let Some(server) = server_time {
                    let local = SystemTime::now()
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs() as i64);
                    inner
                        .clock_offset_ms
                        .store((server - local) * 1000, Ordering::Relaxed);
                }
                (code, message, Some(400), Duration::ZERO)
            }
        };
        if attempts >= inner.config.max_attempts {
            break Outcome::Failed {
                code,
                message,
                http_status: status,
            };
        }
        let wait = if floor.is_zero() && code.starts_with("RequestTime") && status == Some(400) {
            Duration::ZERO
        } else {
            backoff(&inner, attempts, floor)
        };
        if Instant::now() + wait >= deadline {
            break Outcome::Failed {
                code: "DeliveryTimeout".into(),
                message: format!(
                    "not delivered within delivery_timeout_ms; last error {code}: {message}"
                ),
                http_status: status,
            };
        }
        inner.retried.fetch_add(1, Ordering::Relaxed);
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = abort.wait_for(|a| *a) => {
                break Outcome::Failed { code: "ProducerClosed".into(), message: format!("closed while retrying after {code}: {message}"), http_status: status };
            }
        }
    };
    let compressed = body.len();
    finish(
        &inner,
        batch,
        outcome,
        attempts,
        last_request_id,
        compressed,
    );
}

fn finish(
    inner: &Inner,
    batch: SealedBatch,
    outcome: Outcome,
    attempts: u32,
    request_id: Option<String>,
    compressed_bytes: usize,
) {
    let report = Arc::new(DeliveryReport {
        batch_id: batch.id,
        project: batch.dest.project.clone(),
        logstore: batch.dest.logstore.clone(),
        outcome,
        attempts,
        request_id,
        records: batch.records,
        raw_bytes: batch.raw_len,
        compressed_bytes,
        latency: batch.opened.elapsed(),
        pack_id: batch.pack_id,
        tickets: batch.tickets,
    });
    if inner.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
        // The last batch in flight is done: a burst is over, hand its memory back.
        inner.at_rest();
    }
    inner.complete(report, batch.reserved, batch.completions);
}
