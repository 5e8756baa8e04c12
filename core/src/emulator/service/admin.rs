//! The emulator's own JSON API under `/_emulator/`: health, counters, reset, faults,
//! logstores, totals and stored logs. Unauthenticated.

use bytes::Bytes;
use hyper::http::{Method, Response, StatusCode};

use super::{json_response, missing, unix_now, Head, Service};
use crate::emulator::error::ApiError;
use crate::emulator::faults::Fault;
use crate::emulator::store::Missing;

impl Service {
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
            (&Method::GET, "totals") => {
                let (project, logstore) = self.admin_target(head)?;
                let totals = self.store.totals(&project, logstore).unwrap_or_default();
                Ok(json_response(&totals))
            }
            (&Method::GET, "logs") => {
                let (project, logstore) = self.admin_target(head)?;
                let totals = self
                    .store
                    .totals(&project, logstore)
                    .ok_or_else(|| missing(Missing::Logstore, &project, logstore))?;
                let logs = self.store.logs(&project, logstore);
                Ok(json_response(
                    &serde_json::json!({ "project": project, "logstore": logstore, "totals": totals, "logs": logs }),
                ))
            }
            _ => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("no emulator API {} /_emulator/{rest}", head.method),
            )),
        }
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
