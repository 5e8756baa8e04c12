//! The retry decision: what an attempt's answer means, as a pure function.
//!
//! | answer | action |
//! |---|---|
//! | 2xx | delivered |
//! | no answer (connect error, reset, timeout), 5xx, an error body that is not the service's JSON | retry |
//! | 403 (quota), 429 | retry, waiting at least 500 ms |
//! | 401, or no credentials from the provider | retry up to `unauthorized_attempts` times (credentials may rotate) |
//! | 400 `RequestTimeExpired` / `RequestTimeTooSkewed` | take the server's clock, re-sign, retry at once |
//! | 404, any other 4xx | fail, reported once |
//!
//! Waits use full jitter: retry `n` waits a random time in `[0, min(cap, base·2^(n-1))]`; after
//! a quota answer, the floor plus a random time up to that bound or the floor, whichever is
//! more (never above the cap), so a fleet refused at once does not retry at once. Whether a retry still fits (attempts left,
//! the delivery deadline, the producer not aborted) is the delivery loop's to check.

use std::time::Duration;

use chrono::DateTime;

/// The shortest wait after a quota or throttling answer (403, 429).
const THROTTLED_FLOOR: Duration = Duration::from_millis(500);

/// What one attempt got back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    /// HTTP status; `None` when no answer came (connect error, reset, timeout).
    pub(crate) status: Option<u16>,
    /// The service's `errorCode`, or a client code (`RequestError`, `RequestTimeout`,
    /// `BadResponse`, `CredentialsUnavailable`); empty when delivered.
    pub(crate) code: String,
    /// The service's `errorMessage`, or what the client saw.
    pub(crate) message: String,
    /// Whether `code` came from the service's JSON error body.
    pub(crate) from_service: bool,
    /// `x-log-requestid` of the answer.
    pub(crate) request_id: Option<String>,
    /// The server's clock, unix seconds: from a skew error's message ("… server time is
    /// <RFC 1123>"), else the `Date` header.
    pub(crate) server_time: Option<i64>,
}

impl Answer {
    pub(crate) fn delivered(status: u16, request_id: Option<String>) -> Answer {
        Answer {
            status: Some(status),
            code: String::new(),
            message: String::new(),
            from_service: false,
            request_id,
            server_time: None,
        }
    }

    pub(crate) fn no_answer(timed_out: bool, message: String) -> Answer {
        Answer {
            status: None,
            code: if timed_out {
                "RequestTimeout"
            } else {
                "RequestError"
            }
            .into(),
            message,
            from_service: false,
            request_id: None,
            server_time: None,
        }
    }

    pub(crate) fn credentials_unavailable(message: String) -> Answer {
        Answer {
            status: None,
            code: "CredentialsUnavailable".into(),
            message,
            from_service: false,
            request_id: None,
            server_time: None,
        }
    }

    /// An error answer: `body` is the service's JSON error, or anything else.
    pub(crate) fn error(
        status: u16,
        request_id: Option<String>,
        body: &[u8],
        date: Option<i64>,
    ) -> Answer {
        let parsed = serde_json::from_slice::<serde_json::Value>(body)
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
        match parsed {
            Some((code, message)) => Answer {
                status: Some(status),
                server_time: time_in_message(&message).or(date),
                code,
                message,
                from_service: true,
                request_id,
            },
            None => Answer {
                status: Some(status),
                code: "BadResponse".into(),
                message: format!(
                    "HTTP {status} without a JSON error: {}",
                    String::from_utf8_lossy(&body[..body.len().min(200)])
                ),
                from_service: false,
                request_id,
                server_time: date,
            },
        }
    }
}

/// The service names its time in skew errors: "... while server time is <RFC 1123>".
fn time_in_message(message: &str) -> Option<i64> {
    let pos = message.find("server time is ")?;
    DateTime::parse_from_rfc2822(message[pos + 15..].trim())
        .ok()
        .map(|t| t.timestamp())
}

/// What to do after an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// The batch is delivered.
    Deliver,
    /// Retry after a backoff of at least `floor`.
    Retry {
        /// The shortest wait.
        floor: Duration,
    },
    /// The credentials were refused: retry (a limited number of times) with fresh ones.
    Reauthorize,
    /// The request's date was off: take the server's clock (when known), re-sign, retry at once.
    Resign {
        /// The server's clock, unix seconds.
        server_time: Option<i64>,
    },
    /// A final failure.
    Fail,
}

/// What `answer` means (the table above).
pub(crate) fn decide(answer: &Answer) -> Action {
    let Some(status) = answer.status else {
        return if answer.code == "CredentialsUnavailable" {
            Action::Reauthorize
        } else {
            Action::Retry {
                floor: Duration::ZERO,
            }
        };
    };
    if (200..300).contains(&status) {
        return Action::Deliver;
    }
    if !answer.from_service {
        return Action::Retry {
            floor: Duration::ZERO,
        };
    }
    match status {
        500.. => Action::Retry {
            floor: Duration::ZERO,
        },
        403 | 429 => Action::Retry {
            floor: THROTTLED_FLOOR,
        },
        401 => Action::Reauthorize,
        400 if answer.code == "RequestTimeExpired" || answer.code == "RequestTimeTooSkewed" => {
            Action::Resign {
                server_time: answer.server_time,
            }
        }
        _ => Action::Fail,
    }
}

/// Full-jitter backoff before retry number `retry` (1-based): `random(0..=bound)` of
/// `bound = min(cap, base·2^(retry-1))`. After a quota answer (`floor` above zero) the wait
/// starts at the floor and spreads over as much again or the bound, whichever is more —
/// `floor + random(0..=max(bound, floor))` — so throttled producers of a fleet, refused
/// together, do not come back together; never above the cap (nor the floor above it).
pub(crate) fn backoff(
    base_ms: u64,
    cap_ms: u64,
    retry: u32,
    floor: Duration,
    random: impl FnOnce(u64) -> u64,
) -> Duration {
    let bound = base_ms
        .saturating_mul(1u64 << retry.saturating_sub(1).min(30))
        .min(cap_ms);
    let floor_ms = (floor.as_millis() as u64).min(cap_ms);
    if floor_ms == 0 {
        return Duration::from_millis(random(bound));
    }
    Duration::from_millis(
        floor_ms
            .saturating_add(random(bound.max(floor_ms)))
            .min(cap_ms),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(status: u16, code: &str, message: &str) -> Answer {
        let body = serde_json::json!({"errorCode": code, "errorMessage": message}).to_string();
        Answer::error(status, Some("RID".into()), body.as_bytes(), None)
    }

    const NOW: Duration = Duration::ZERO;

    #[test]
    fn each_row_of_the_table() {
        let rows: Vec<(Answer, Action)> = vec![
            (Answer::delivered(200, None), Action::Deliver),
            (Answer::delivered(204, None), Action::Deliver),
            (
                Answer::no_answer(false, "connection refused".into()),
                Action::Retry { floor: NOW },
            ),
            (
                Answer::no_answer(true, "timed out".into()),
                Action::Retry { floor: NOW },
            ),
            (
                service(500, "InternalServerError", "x"),
                Action::Retry { floor: NOW },
            ),
            (service(503, "ServerBusy", "x"), Action::Retry { floor: NOW }),
            (
                Answer::error(502, None, b"<html>bad gateway</html>", None),
                Action::Retry { floor: NOW },
            ),
            (
                Answer::error(404, None, b"not json", None),
                Action::Retry { floor: NOW },
            ),
            (
                service(403, "WriteQuotaExceed", "x"),
                Action::Retry {
                    floor: THROTTLED_FLOOR,
                },
            ),
            (
                service(429, "ShardWriteQuotaExceed", "x"),
                Action::Retry {
                    floor: THROTTLED_FLOOR,
                },
            ),
            (service(401, "Unauthorized", "x"), Action::Reauthorize),
            (
                service(401, "SignatureNotMatch", "x"),
                Action::Reauthorize,
            ),
            (
                Answer::credentials_unavailable("provider failed".into()),
                Action::Reauthorize,
            ),
            (
                service(
                    400,
                    "RequestTimeTooSkewed",
                    "request time is Mon, 09 Nov 2015 06:00:00 GMT while server time is Mon, 09 Nov 2015 06:11:16 GMT",
                ),
                Action::Resign {
                    server_time: Some(1_447_049_476),
                },
            ),
            (
                service(400, "RequestTimeExpired", "no time here"),
                Action::Resign { server_time: None },
            ),
            (service(404, "ProjectNotExist", "x"), Action::Fail),
            (service(404, "LogStoreNotExist", "x"), Action::Fail),
            (service(400, "InvalidLogGroup", "x"), Action::Fail),
            (service(413, "PostBodyTooLarge", "x"), Action::Fail),
        ];
        for (answer, action) in rows {
            assert_eq!(decide(&answer), action, "{answer:?}");
        }
    }

    #[test]
    fn the_date_header_stands_in_for_the_message() {
        let body = br#"{"errorCode":"RequestTimeExpired","errorMessage":"expired"}"#;
        let answer = Answer::error(400, None, body, Some(1_700_000_000));
        assert_eq!(
            decide(&answer),
            Action::Resign {
                server_time: Some(1_700_000_000)
            }
        );
    }

    #[test]
    fn a_non_json_error_keeps_a_bounded_excerpt() {
        let body = vec![b'x'; 5000];
        let answer = Answer::error(502, Some("r".into()), &body, None);
        assert_eq!(answer.code, "BadResponse");
        assert!(answer
            .message
            .starts_with("HTTP 502 without a JSON error: xxx"));
        assert!(answer.message.len() < 300);
    }

    #[test]
    fn backoff_is_full_jitter_under_the_cap_and_over_the_floor() {
        let most = |bound| bound;
        let least = |_| 0;
        assert_eq!(
            backoff(200, 10_000, 1, NOW, most),
            Duration::from_millis(200)
        );
        assert_eq!(
            backoff(200, 10_000, 3, NOW, most),
            Duration::from_millis(800)
        );
        assert_eq!(backoff(200, 10_000, 40, NOW, most), Duration::from_secs(10));
        assert_eq!(backoff(200, 10_000, 3, NOW, least), Duration::ZERO);
        assert_eq!(
            backoff(200, 10_000, 1, THROTTLED_FLOOR, least),
            THROTTLED_FLOOR
        );
        // The floor never exceeds the cap.
        assert_eq!(
            backoff(10, 100, 1, THROTTLED_FLOOR, least),
            Duration::from_millis(100)
        );
        assert_eq!(
            backoff(10, 100, 1, THROTTLED_FLOOR, most),
            Duration::from_millis(100)
        );
    }

    #[test]
    fn throttled_waits_spread_from_the_floor() {
        let most = |bound| bound;
        // The first retry after a quota answer: 500 ms to 1 s, not 500 ms for everyone.
        assert_eq!(
            backoff(200, 10_000, 1, THROTTLED_FLOOR, most),
            Duration::from_millis(1000)
        );
        // Later ones: the floor plus the exponential bound.
        assert_eq!(
            backoff(200, 10_000, 5, THROTTLED_FLOOR, most),
            Duration::from_millis(500 + 3200)
        );
        assert_eq!(
            backoff(200, 10_000, 9, THROTTLED_FLOOR, most),
            Duration::from_secs(10)
        );
        // A fleet of 1 000 producers refused at once comes back spread over the half second.
        let mut waits: Vec<u64> = (0..1000)
            .map(|_| {
                backoff(200, 10_000, 1, THROTTLED_FLOOR, |b| fastrand::u64(0..=b)).as_millis()
                    as u64
            })
            .collect();
        waits.sort_unstable();
        assert!(waits[0] >= 500 && waits[999] <= 1000);
        let spread = waits[900] - waits[100];
        assert!(spread >= 300, "10th to 90th percentile within {spread} ms");
    }
}
