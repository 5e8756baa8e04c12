//! The emulator's own JSON API under `/_emulator/`: health, counters, reset, faults, the
//! network (`GET`/`PUT network`: latency, jitter, bandwidth) and the write quotas
//! (`GET`/`PUT quotas`),
//! logstores, totals and stored logs, a page at a time; for the console, an overview of every
//! project and logstore, a search (as GetLogs) and an index made in one call. Unauthenticated unless an admin token
//! is configured (then `Authorization: Bearer <token>` on every request). Never counted in
//! the service counters.

use bytes::Bytes;
use hyper::http::{Method, Response, StatusCode};

use super::{json_response, missing, unix_now, Head, Service};
use crate::emulator::catalog::Index;
use crate::emulator::error::ApiError;
use crate::emulator::faults::Fault;
use crate::emulator::network::NetworkConfig;
use crate::emulator::quotas::QuotaConfig;
use crate::emulator::store::Missing;

/// Logs in a `/_emulator/logs` page unless `limit` says otherwise.
const DEFAULT_PAGE_LOGS: usize = 1000;
/// Most logs in one page.
const MAX_PAGE_LOGS: usize = 10_000;

/// Whether two byte strings are equal, in time that depends only on their lengths.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Service {
    /// With an admin token configured, refuses an admin request that does not carry it.
    pub(super) fn check_admin_token(&self, head: &Head<'_>) -> Result<(), ApiError> {
        let Some(token) = self.config.admin_token.as_deref() else {
            return Ok(());
        };
        let sent = head
            .header("authorization")
            .and_then(|v| v.trim().strip_prefix("Bearer "))
            .map(str::trim);
        if sent.is_some_and(|sent| same_secret(sent.as_bytes(), token.as_bytes())) {
            Ok(())
        } else {
            Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "Unauthorized",
                "the emulator's admin API needs Authorization: Bearer <admin token>",
            ))
        }
    }

    pub(super) fn admin(
        &self,
        head: &Head<'_>,
        rest: &str,
        body: &Bytes,
    ) -> Result<Response<Bytes>, ApiError> {
        let bad_json = |e: serde_json::Error| {
            ApiError::bad_request("ParameterInvalid", format!("bad JSON body: {e}"))
        };
        match (head.method, rest) {
            (&Method::GET, "health") => Ok(json_response(&serde_json::json!({ "ok": true }))),
            (&Method::GET, "counters") => Ok(json_response(&self.counters())),
            (&Method::POST, "reset") => {
                self.reset();
                Ok(json_response(&serde_json::json!({ "ok": true })))
            }
            (&Method::POST, "faults") => {
                let fault: Fault = serde_json::from_slice(body).map_err(bad_json)?;
                self.faults.add(fault);
                Ok(json_response(&serde_json::json!({ "ok": true })))
            }
            (&Method::DELETE, "faults") => {
                self.faults.clear();
                Ok(json_response(&serde_json::json!({ "ok": true })))
            }
            (&Method::GET, "network") => Ok(json_response(&self.network.config())),
            (&Method::PUT, "network") => {
                let network: NetworkConfig = serde_json::from_slice(body).map_err(bad_json)?;
                self.network.replace(network);
                Ok(json_response(&network))
            }
            (&Method::GET, "quotas") => Ok(json_response(&self.quotas.config())),
            (&Method::PUT, "quotas") => {
                let quotas: QuotaConfig = serde_json::from_slice(body).map_err(bad_json)?;
                self.quotas.replace(quotas);
                Ok(json_response(&quotas))
            }
            (&Method::POST, "logstores") => {
                #[derive(serde::Deserialize)]
                struct Create {
                    project: String,
                    logstore: String,
                    shards: Option<u32>,
                }
                let c: Create = serde_json::from_slice(body).map_err(bad_json)?;
                self.store
                    .create(&c.project, &c.logstore, c.shards, unix_now())?;
                Ok(json_response(&serde_json::json!({ "ok": true })))
            }
            (&Method::GET, "overview") => Ok(json_response(&self.overview())),
            (&Method::GET, "query") => self.admin_query(head),
            (&Method::POST, "index") => {
                let (project, logstore) = self.admin_target(head)?;
                // No body: a full-text index with the service's default separators.
                let config = if body.is_empty() {
                    serde_json::json!({"line": {"caseSensitive": false}})
                } else {
                    serde_json::from_slice(body).map_err(bad_json)?
                };
                let index = std::sync::Arc::new(Index::parse(config, unix_now())?);
                self.store.projects_mut(|projects| {
                    let ls = projects
                        .get_mut(&project)
                        .and_then(|p| p.logstores.get_mut(logstore))
                        .ok_or_else(|| missing(Missing::Logstore, &project, logstore))?;
                    ls.index = Some(index);
                    Ok(json_response(&serde_json::json!({ "ok": true })))
                })
            }
            (&Method::GET, "totals") => {
                let (project, logstore) = self.admin_target(head)?;
                let totals = self.store.totals(&project, logstore).unwrap_or_default();
                Ok(json_response(&totals))
            }
            (&Method::GET, "logs") => {
                let (project, logstore) = self.admin_target(head)?;
                let number = |name: &str, default: usize, max: usize| match head.param(name) {
                    None => Ok(default),
                    Some(v) => v
                        .parse::<usize>()
                        .ok()
                        .filter(|n| *n <= max)
                        .ok_or_else(|| {
                            ApiError::bad_request(
                                "ParameterInvalid",
                                format!("{name} {v:?} is not a number from 0 to {max}"),
                            )
                        }),
                };
                let offset = number("offset", 0, usize::MAX)?;
                let limit = number("limit", DEFAULT_PAGE_LOGS, MAX_PAGE_LOGS)?;
                let totals = self
                    .store
                    .totals(&project, logstore)
                    .ok_or_else(|| missing(Missing::Logstore, &project, logstore))?;
                let page = self.store.logs_page(&project, logstore, offset, limit);
                Ok(json_response(&serde_json::json!({
                    "project": project,
                    "logstore": logstore,
                    "totals": totals,
                    "offset": offset,
                    "next_offset": page.next_offset,
                    "logs": page.logs,
                })))
            }
            _ => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("no emulator API {} /_emulator/{rest}", head.method),
            )),
        }
    }

    /// Every project with its logstores: shards, totals, TTL, whether it has an index and the
    /// size of its term index (what the console lists).
    fn overview(&self) -> serde_json::Value {
        self.store.projects_mut(|projects| {
            let projects: Vec<serde_json::Value> = projects
                .iter()
                .map(|(name, p)| {
                    let logstores: Vec<serde_json::Value> = p
                        .logstores
                        .iter()
                        .map(|(name, ls)| {
                            // The term index's size, unless a search is building it now.
                            let terms = ls.terms.try_lock().map(|t| (t.len(), t.heap_bytes()));
                            serde_json::json!({
                                "name": name,
                                "shards": ls.shards.len(),
                                "logs": ls.total_logs,
                                "groups": ls.total_groups,
                                "retained_groups":
                                    ls.shards.iter().map(|s| s.groups.len()).sum::<usize>(),
                                "ttl": ls.settings.ttl_days,
                                "indexed": ls.index.is_some(),
                                "term_index_logs": terms.map(|t| t.0),
                                "term_index_bytes": terms.map(|t| t.1),
                            })
                        })
                        .collect();
                    serde_json::json!({
                        "name": name,
                        "description": p.description,
                        "logstores": logstores,
                    })
                })
                .collect();
            serde_json::json!({ "projects": projects })
        })
    }

    /// The `project` (default: the default project) and `logstore` parameters of an admin read.
    fn admin_target<'h>(&self, head: &'h Head<'_>) -> Result<(String, &'h str), ApiError> {
        let project = head
            .param("project")
            .map_or_else(|| self.config.default_project.clone(), str::to_owned);
        let logstore = head
            .param("logstore")
            .ok_or_else(|| ApiError::bad_request("ParameterInvalid", "logstore is missing"))?;
        Ok((project, logstore))
    }
}
