//! Fault injection: scripted misbehaviour for the next N PutLogs requests or for a time
//! window — an error answer (any status and errorCode), added latency, a dropped connection,
//! a hang, or a request that is stored and then answered with an error or a dropped
//! connection (the case where a retry makes a duplicate, to test at-least-once delivery).
//!
//! Rules are checked in the order they were added; the first live one that matches a request
//! applies and uses up one of its count. Expired and used-up rules are removed as they are met.
//! Only PutLogs requests are affected, so tests can read back while a storm is on. The check is
//! one relaxed atomic load when no rule is set, so the hot path pays nothing. Any thread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// What an injected fault does to a request.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FaultAction {
    /// Answer with this status and errorCode instead of processing the request.
    Error {
        /// HTTP status, e.g. 503.
        status: u16,
        /// errorCode, e.g. `ServerBusy`.
        code: String,
        /// errorMessage; a default naming the fault when absent.
        #[serde(default)]
        message: Option<String>,
    },
    /// Wait this long, then process the request normally.
    Latency {
        /// Added delay in milliseconds.
        ms: u64,
    },
    /// Drop the connection without answering.
    Reset,
    /// Process and store the request as usual, then answer this status and errorCode instead
    /// of success (default 500 `InternalServerError`).
    StoreThenError {
        /// HTTP status.
        #[serde(default = "default_store_then_status")]
        status: u16,
        /// errorCode.
        #[serde(default = "default_store_then_code")]
        code: String,
    },
    /// Process and store the request as usual, then drop the connection without answering.
    StoreThenReset,
    /// Hold the connection without answering for this long (default ten minutes, or until
    /// the emulator stops), then drop it.
    Hang {
        /// How long to hang, in milliseconds.
        #[serde(default)]
        ms: Option<u64>,
    },
}

fn default_store_then_status() -> u16 {
    500
}

fn default_store_then_code() -> String {
    "InternalServerError".into()
}

/// One rule: an action, for how many requests or how long, and for which requests.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fault {
    /// What to do.
    #[serde(flatten)]
    pub action: FaultAction,
    /// Apply to this many requests, then stop. With neither `count` nor `window_ms` the rule
    /// stays until faults are cleared.
    #[serde(default)]
    pub count: Option<u64>,
    /// Apply to every request for this many milliseconds from now.
    #[serde(default)]
    pub window_ms: Option<u64>,
    /// Only requests for this project.
    #[serde(default)]
    pub project: Option<String>,
    /// Only requests for this logstore.
    #[serde(default)]
    pub logstore: Option<String>,
    /// Apply to the emulated STS and ECS metadata service (the default credential chain's
    /// requests) instead of the Log Service's. `store_then_*` act there as their error or
    /// reset.
    #[serde(default)]
    pub credentials: bool,
}

impl Fault {
    /// A rule for the next `count` requests.
    pub fn times(action: FaultAction, count: u64) -> Self {
        Fault {
            action,
            count: Some(count),
            window_ms: None,
            project: None,
            logstore: None,
            credentials: false,
        }
    }

    /// A rule for every request during `window`.
    pub fn during(action: FaultAction, window: Duration) -> Self {
        Fault {
            action,
            count: None,
            window_ms: Some(window.as_millis() as u64),
            project: None,
            logstore: None,
            credentials: false,
        }
    }

    /// An error answer for the next `count` requests.
    pub fn error(status: u16, code: &str, count: u64) -> Self {
        Fault::times(
            FaultAction::Error {
                status,
                code: code.to_owned(),
                message: None,
            },
            count,
        )
    }
}

struct Live {
    fault: Fault,
    remaining: Option<u64>,
    until: Option<Instant>,
}

/// The set of live rules.
#[derive(Default)]
pub(crate) struct Faults {
    any: AtomicBool,
    rules: Mutex<Vec<Live>>,
    applied: AtomicU64,
}

impl Faults {
    pub(crate) fn add(&self, fault: Fault) {
        // A window too long to represent is simply endless (until the faults are cleared).
        let until = fault
            .window_ms
            .and_then(|ms| Instant::now().checked_add(Duration::from_millis(ms)));
        let remaining = fault.count;
        let mut rules = self.rules.lock();
        rules.push(Live {
            fault,
            remaining,
            until,
        });
        self.any.store(true, Ordering::Release);
    }

    pub(crate) fn clear(&self) {
        let mut rules = self.rules.lock();
        rules.clear();
        self.any.store(false, Ordering::Release);
    }

    pub(crate) fn applied(&self) -> u64 {
        self.applied.load(Ordering::Relaxed)
    }

    /// The action for a PutLogs request to `project`/`logstore`, if a rule applies.
    pub(crate) fn take(&self, project: &str, logstore: &str) -> Option<FaultAction> {
        self.take_first(|f| {
            !f.credentials
                && f.project.as_deref().is_none_or(|p| p == project)
                && f.logstore.as_deref().is_none_or(|l| l == logstore)
        })
    }

    /// The action for an STS or ECS metadata request, if a rule applies.
    pub(crate) fn take_credentials(&self) -> Option<FaultAction> {
        self.take_first(|f| f.credentials)
    }

    fn take_first(&self, applies: impl Fn(&Fault) -> bool) -> Option<FaultAction> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let now = Instant::now();
        let mut rules = self.rules.lock();
        rules.retain(|r| r.remaining != Some(0) && r.until.is_none_or(|u| now < u));
        let hit = rules.iter_mut().find(|r| applies(&r.fault));
        let action = hit.map(|rule| {
            if let Some(n) = rule.remaining.as_mut() {
                *n -= 1;
            }
            rule.fault.action.clone()
        });
        rules.retain(|r| r.remaining != Some(0));
        if rules.is_empty() {
            self.any.store(false, Ordering::Release);
        }
        if action.is_some() {
            self.applied.fetch_add(1, Ordering::Relaxed);
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_rules_apply_that_many_times_in_order() {
        let faults = Faults::default();
        faults.add(Fault::error(503, "ServerBusy", 2));
        faults.add(Fault::times(FaultAction::Reset, 1));
        let kinds: Vec<_> = (0..4).map(|_| faults.take("p", "l")).collect();
        assert!(matches!(
            kinds[0],
            Some(FaultAction::Error { status: 503, .. })
        ));
        assert!(matches!(
            kinds[1],
            Some(FaultAction::Error { status: 503, .. })
        ));
        assert_eq!(kinds[2], Some(FaultAction::Reset));
        assert_eq!(kinds[3], None);
        assert_eq!(faults.applied(), 3);
    }

    #[test]
    fn windows_expire_and_filters_match() {
        let faults = Faults::default();
        let mut f = Fault::during(FaultAction::Latency { ms: 1 }, Duration::from_millis(50));
        f.logstore = Some("only".into());
        faults.add(f);
        assert_eq!(faults.take("p", "other"), None);
        assert_eq!(
            faults.take("p", "only"),
            Some(FaultAction::Latency { ms: 1 })
        );
        assert_eq!(
            faults.take("p", "only"),
            Some(FaultAction::Latency { ms: 1 })
        );
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(faults.take("p", "only"), None);
    }

    #[test]
    fn rules_parse_from_json() {
        let f: Fault = serde_json::from_str(
            r#"{"kind":"error","status":403,"code":"WriteQuotaExceed","count":3}"#,
        )
        .unwrap();
        assert_eq!(f, Fault::error(403, "WriteQuotaExceed", 3));
        let f: Fault = serde_json::from_str(r#"{"kind":"hang","window_ms":100}"#).unwrap();
        assert_eq!(f.action, FaultAction::Hang { ms: None });
        assert!(serde_json::from_str::<Fault>(r#"{"kind":"explode"}"#).is_err());
        let f: Fault = serde_json::from_str(r#"{"kind":"store_then_error","count":1}"#).unwrap();
        assert_eq!(
            f.action,
            FaultAction::StoreThenError {
                status: 500,
                code: "InternalServerError".into()
            }
        );
        let endless: Fault =
            serde_json::from_str(r#"{"kind":"reset","window_ms":18446744073709551615}"#).unwrap();
        let faults = Faults::default();
        faults.add(endless);
        assert_eq!(faults.take("proj", "logs"), Some(FaultAction::Reset));
        let f: Fault = serde_json::from_str(r#"{"kind":"store_then_reset"}"#).unwrap();
        assert_eq!(f.action, FaultAction::StoreThenReset);
    }
}
