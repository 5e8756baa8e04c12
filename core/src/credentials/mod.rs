//! The default credential chain: where a producer built without keys finds them, in the order
//! Alibaba Cloud's SDKs look (after the `ALIBABA_CLOUD_ACCESS_KEY_ID` pair, which the
//! configuration takes directly):
//!
//! 1. an OIDC role, when `ALIBABA_CLOUD_ROLE_ARN`, `ALIBABA_CLOUD_OIDC_PROVIDER_ARN` and
//!    `ALIBABA_CLOUD_OIDC_TOKEN_FILE` are all set (ACK's RRSA): STS `AssumeRoleWithOIDC`;
//! 2. the Alibaba Cloud CLI's `~/.aliyun/config.json` (its current profile, or
//!    `ALIBABA_CLOUD_PROFILE`), unless `ALIBABA_CLOUD_CLI_PROFILE_DISABLED=true`;
//! 3. the profile file `ALIBABA_CLOUD_CREDENTIALS_FILE` or `~/.alibabacloud/credentials.ini`
//!    (section `ALIBABA_CLOUD_PROFILE` or `default`);
//! 4. the ECS instance's RAM role from the metadata service, unless
//!    `ALIBABA_CLOUD_ECS_METADATA_DISABLED=true`;
//! 5. `ALIBABA_CLOUD_CREDENTIALS_URI`.
//!
//! # Caching and refresh
//!
//! The first source that gives keys is the one asked from then on. Temporary keys are cached
//! and fetched again ahead of their expiry (15 minutes before it, or halfway through a shorter
//! lifetime) by a background task while sends go on with the keys in hand, so a refresh delays
//! no send; only the first fetch, or one after the keys ran out, is waited for, and it is one
//! fetch however many sends wait. A 401 from the service with the cached keys makes the next
//! send fetch again. When every source fails the error lists each one and why, never a secret.
//!
//! # Parts
//!
//! [`sources`] reads the environment and the files; [`remote`] speaks to STS (`AssumeRoleWithOIDC`,
//! and `AssumeRole` for a profile's RAM role), the metadata service and the URI. The chain is asked on the I/O runtime, from the send path.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;

use crate::wire::sign::Credentials;

mod remote;
pub(crate) mod sources;

#[cfg(feature = "emulator")]
pub(crate) use remote::rpc_signature;
use remote::Fetched;
use sources::Source;

/// Longest a failed background refresh waits before the next one (the keys in hand still
/// work meanwhile); half the keys' remaining life when that is shorter, so a refresh is tried
/// several times before they run out.
const BACKGROUND_RETRY: Duration = Duration::from_secs(5);

/// Keys in hand and when to fetch again.
#[derive(Clone)]
struct Cached {
    credentials: Credentials,
    /// Fetch again in the background from then on.
    refresh_at: Option<SystemTime>,
    /// Not used from then on (a little before they expire, for the request in flight).
    usable_until: Option<SystemTime>,
}

impl Cached {
    fn new(fetched: Fetched, now: SystemTime) -> Cached {
        let Some(expires_at) = fetched.expires_at else {
            return Cached {
                credentials: fetched.credentials,
                refresh_at: None,
                usable_until: None,
            };
        };
        let lifetime = expires_at.duration_since(now).unwrap_or_default();
        let ahead = (lifetime / 2).min(Duration::from_secs(15 * 60));
        let margin = (lifetime / 10).min(Duration::from_secs(60));
        Cached {
            credentials: fetched.credentials,
            refresh_at: Some(expires_at - ahead),
            usable_until: Some(expires_at - margin),
        }
    }

    fn usable(&self, now: SystemTime) -> bool {
        self.usable_until.is_none_or(|t| now < t)
    }

    fn stale(&self, now: SystemTime) -> bool {
        self.refresh_at.is_some_and(|t| now >= t)
    }
}

#[derive(Default)]
struct State {
    cached: Option<Cached>,
    /// The source that gave keys last: the only one asked from then on.
    last_used: Option<usize>,
    background: bool,
    background_not_before: Option<Instant>,
}

/// The chain of one producer.
pub(crate) struct Chain {
    sources: Vec<Source>,
    skipped: Vec<String>,
    clients: remote::Clients,
    state: Mutex<State>,
    /// One fetch at a time; sends that need keys wait on it together.
    fetching: tokio::sync::Mutex<()>,
}

impl Chain {
    /// The chain as this process's environment and home directory set it up.
    pub(crate) fn from_environment() -> Chain {
        let home = sources::user_home(&|name| std::env::var_os(name));
        Chain::new(&|name| std::env::var(name).ok(), home)
    }

    /// The chain for these variables and home directory.
    pub(crate) fn new(lookup: sources::Lookup<'_>, home: Option<PathBuf>) -> Chain {
        let (sources, skipped) = sources::plan(lookup, home);
        Chain {
            sources,
            skipped,
            clients: remote::Clients::default(),
            state: Mutex::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether a source is set up (variables, files) beyond the metadata service, which is
    /// only known to be there by asking it.
    pub(crate) fn has_configured_source(&self) -> bool {
        self.sources.iter().any(Source::is_configured)
    }

    /// Keys for the next request: those in hand while they last (starting a refresh in the
    /// background when they are due for one), else the result of one fetch.
    pub(crate) async fn credentials(self: &Arc<Self>) -> Result<Credentials, String> {
        let now = SystemTime::now();
        {
            let mut state = self.state.lock();
            if let Some(cached) = state.cached.clone() {
                if cached.usable(now) {
                    if cached.stale(now) {
                        self.refresh_in_background(&mut state);
                    }
                    return Ok(cached.credentials);
                }
            }
        }
        let _one = self.fetching.lock().await;
        let now = SystemTime::now();
        if let Some(cached) = self.state.lock().cached.clone() {
            if cached.usable(now) {
                return Ok(cached.credentials);
            }
        }
        self.fetch().await
    }

    /// The service refused `access_key_id` as unauthorized: if those are the keys in hand,
    /// they are not used again (the next send fetches).
    pub(crate) fn refused(&self, access_key_id: &str) {
        let mut state = self.state.lock();
        if state
            .cached
            .as_ref()
            .is_some_and(|c| c.credentials.access_key_id == access_key_id)
        {
            state.cached = None;
        }
    }

    fn refresh_in_background(self: &Arc<Self>, state: &mut State) {
        if state.background
            || state
                .background_not_before
                .is_some_and(|t| Instant::now() < t)
        {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        state.background = true;
        let chain = self.clone();
        runtime.spawn(async move {
            let _one = chain.fetching.lock().await;
            let due = chain
                .state
                .lock()
                .cached
                .as_ref()
                .is_some_and(|c| c.stale(SystemTime::now()));
            let failed = due && chain.fetch().await.is_err();
            let mut state = chain.state.lock();
            state.background = false;
            state.background_not_before = failed.then(|| {
                let left = state
                    .cached
                    .as_ref()
                    .and_then(|c| c.usable_until)
                    .and_then(|t| t.duration_since(SystemTime::now()).ok())
                    .unwrap_or_default();
                Instant::now() + BACKGROUND_RETRY.min(left / 2)
            });
        });
    }

    /// One walk of the chain (or a fetch from the source that worked last); keeps what it
    /// got. Called with `fetching` held.
    async fn fetch(&self) -> Result<Credentials, String> {
        let last_used = self.state.lock().last_used;
        let (index, fetched) = match last_used {
            Some(i) => {
                let source = &self.sources[i];
                let fetched = match source.leaf() {
                    Ok(leaf) => remote::fetch(&self.clients, &leaf).await,
                    Err(e) => Err(e),
                };
                (i, fetched.map_err(|e| format!("{}: {e}", source.name()))?)
            }
            None => self.walk().await?,
        };
        let credentials = fetched.credentials.clone();
        let mut state = self.state.lock();
        state.cached = Some(Cached::new(fetched, SystemTime::now()));
        state.last_used = Some(index);
        Ok(credentials)
    }

    async fn walk(&self) -> Result<(usize, Fetched), String> {
        let mut failures = Vec::new();
        for (i, source) in self.sources.iter().enumerate() {
            let fetched = match source.leaf() {
                Ok(leaf) => remote::fetch(&self.clients, &leaf).await,
                Err(e) => Err(e),
            };
            match fetched {
                Ok(f) => return Ok((i, f)),
                Err(e) => failures.push(format!("{}: {e}", source.name())),
            }
        }
        // In the chain's order, each line led by its source's name.
        const ORDER: [&str; 6] = [
            "environment",
            "OIDC role",
            "CLI profile",
            "profile file",
            "ECS instance role",
            "credentials URI",
        ];
        let lines: Vec<&String> = self.skipped.iter().chain(&failures).collect();
        let all: Vec<&str> = ORDER
            .iter()
            .flat_map(|name| {
                lines
                    .iter()
                    .filter(move |line| line.starts_with(name))
                    .map(|line| line.as_str())
            })
            .collect();
        Err(format!(
            "no source of the default credential chain gave keys ({})",
            all.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_refreshed_ahead_of_expiry_and_dropped_just_before_it() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let keys = |lifetime: u64| Fetched {
            credentials: Credentials::sts("a", "b", "c"),
            expires_at: Some(now + Duration::from_secs(lifetime)),
        };
        let hour = Cached::new(keys(3600), now);
        assert!(!hour.stale(now + Duration::from_secs(44 * 60)));
        assert!(hour.stale(now + Duration::from_secs(45 * 60)));
        assert!(hour.usable(now + Duration::from_secs(3539)));
        assert!(!hour.usable(now + Duration::from_secs(3540)));
        let short = Cached::new(keys(20), now);
        assert!(!short.stale(now + Duration::from_secs(9)));
        assert!(short.stale(now + Duration::from_secs(10)));
        assert!(short.usable(now + Duration::from_secs(17)));
        assert!(!short.usable(now + Duration::from_secs(18)));
        let forever = Cached::new(
            Fetched {
                credentials: Credentials::new("a", "b"),
                expires_at: None,
            },
            now,
        );
        // A thousand years on (within every platform's clock: Windows' ends in 30828).
        let later = now + Duration::from_secs(1000 * 365 * 86_400);
        assert!(forever.usable(later));
        assert!(!forever.stale(later));
    }
}
