//! The management API the SDKs call at start-up, as the service defines it: projects
//! (`/` on the project's host: create, get, update, delete; `/` on the bare endpoint: list),
//! logstores (`/logstores`, `/logstores/{name}`) and their indexes (`/logstores/{name}/index`).
//! Signed and checked like PutLogs (API version, signature, Content-MD5 of the JSON body);
//! names, TTLs and shard counts refused as the service refuses them, with its error codes.
//! Runs on the request's thread; the store's lock is held only to read or change the catalog.

use bytes::Bytes;
use hyper::http::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::{json_response, missing, unix_now, Head, Service};
use crate::emulator::catalog::{Index, MAX_LOGSTORES_PER_PROJECT};
use crate::emulator::error::ApiError;
use crate::emulator::store::{check_shard_count, shorten, Logstore, Missing, Project};
use crate::wire::names::{self, NameKind};

/// The region the emulator says its projects are in.
const REGION: &str = "emulator";

fn empty() -> Response<Bytes> {
    Response::new(Bytes::new())
}

fn not_found(code: &'static str, message: String) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, code, message)
}

/// `offset` and `size` of a list call (size at most 500, as the service pages).
fn paging(head: &Head<'_>) -> Result<(usize, usize), ApiError> {
    let number = |name: &str, default: usize| -> Result<usize, ApiError> {
        match head.param(name) {
            None | Some("") => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| {
                ApiError::bad_request("ParameterInvalid", format!("{name} {v:?} is not a number"))
            }),
        }
    };
    let size = number("size", 100)?;
    if size > 500 {
        return Err(ApiError::bad_request(
            "ParameterInvalid",
            format!("size {size} is over the limit of 500"),
        ));
    }
    Ok((number("offset", 0)?, size))
}

fn check_name(kind: NameKind, name: &str) -> Result<(), ApiError> {
    if names::is_valid_name(kind, name) {
        return Ok(());
    }
    let what = match kind {
        NameKind::Project => "project",
        NameKind::Logstore => "logstore",
    };
    Err(ApiError::bad_request(
        "ParameterInvalid",
        format!("{what} name {:?} {}", shorten(name), kind.rule()),
    ))
}

fn time_text(t: u32) -> String {
    t.to_string()
}

fn project_answer(name: &str, p: &Project) -> Value {
    json!({
        "projectName": name,
        "description": p.description,
        "region": REGION,
        "owner": "",
        "status": "Normal",
        "createTime": time_text(p.created),
        "lastModifyTime": time_text(p.modified),
        "resourceGroupId": "",
        "dataRedundancyType": "LRS",
    })
}

fn logstore_answer(name: &str, ls: &Logstore) -> Value {
    let s = &ls.settings;
    let mut answer = json!({
        "logstoreName": name,
        "ttl": s.ttl_days,
        "shardCount": ls.shards.len(),
        "enable_tracking": s.enable_tracking,
        "autoSplit": s.auto_split,
        "maxSplitShard": s.max_split_shard,
        "appendMeta": s.append_meta,
        "enableModify": s.enable_modify,
        "telemetryType": s.telemetry_type,
        "createTime": ls.created,
        "lastModifyTime": s.modified,
    });
    if let Some(object) = answer.as_object_mut() {
        if let Some(mode) = &s.mode {
            object.insert("mode".into(), mode.clone().into());
        }
        if let Some(hot) = s.hot_ttl {
            object.insert("hot_ttl".into(), hot.into());
        }
        if let Some(ia) = s.infrequent_access_ttl {
            object.insert("infrequentAccessTTL".into(), ia.into());
        }
    }
    answer
}

impl Service {
    /// Checks a management request (version, signature, Content-MD5) and reads its JSON body
    /// (an object; `None` when the request has no body).
    fn managed(
        &self,
        head: &Head<'_>,
        body: &[u8],
    ) -> Result<Option<Map<String, Value>>, ApiError> {
        Self::check_api_version(head)?;
        let body_signed = self.authenticate(head, body)?;
        Self::check_content_md5(head, body, body_signed)?;
        if body.is_empty() {
            return Ok(None);
        }
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(map)) => Ok(Some(map)),
            Ok(other) => Err(ApiError::bad_request(
                "PostBodyInvalid",
                format!("the body must be a JSON object, not {other}"),
            )),
            Err(e) => Err(ApiError::bad_request(
                "PostBodyInvalid",
                format!("the body is not JSON: {e}"),
            )),
        }
    }

    /// The project a request's host names (`None`: the bare endpoint, as ListProject calls it).
    fn named_project(&self, head: &Head<'_>) -> Option<String> {
        let host = head.header("host")?;
        let name = host.rsplit_once(':').map_or(host, |(h, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                h
            } else {
                host
            }
        });
        let bare = name.starts_with('[')
            || name.parse::<std::net::IpAddr>().is_ok()
            || name.eq_ignore_ascii_case("localhost")
            || !name.contains('.');
        (!bare).then(|| self.project_of(Some(host)))
    }

    /// `/`: CreateProject, GetProject, UpdateProject, DeleteProject, ListProject.
    pub(super) fn project_api(
        &self,
        head: &Head<'_>,
        body: &[u8],
    ) -> Result<Response<Bytes>, ApiError> {
        let fields = self.managed(head, body)?;
        let now = unix_now();
        let fields = fields.unwrap_or_default();
        let project = match self.named_project(head) {
            Some(project) => project,
            None if *head.method == hyper::http::Method::GET => return self.list_projects(head),
            // CreateProject on the bare endpoint, the project named in the body (as the Node
            // SDK sends it).
            None if *head.method == hyper::http::Method::POST => fields
                .get("projectName")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    ApiError::bad_request("ParameterInvalid", "projectName is missing")
                })?,
            None => {
                return Err(ApiError::bad_request(
                    "ParameterInvalid",
                    "a project call needs the project's host name ({project}.{endpoint})",
                ))
            }
        };
        let description = |fields: &Map<String, Value>| {
            fields
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match *head.method {
            hyper::http::Method::POST => {
                check_name(NameKind::Project, &project)?;
                if let Some(named) = fields.get("projectName").and_then(Value::as_str) {
                    if named != project {
                        return Err(ApiError::bad_request(
                            "ParameterInvalid",
                            format!("projectName {named:?} is not the host's project {project:?}"),
                        ));
                    }
                }
                let max = self.store.max_logstores;
                self.store.projects_mut(|projects| {
                    if projects.contains_key(&project) {
                        return Err(ApiError::bad_request(
                            "ProjectAlreadyExist",
                            format!("Project {project} already exist"),
                        ));
                    }
                    if projects.len() >= max {
                        return Err(ApiError::new(
                            StatusCode::FORBIDDEN,
                            "ExceedQuota",
                            format!("the emulator holds its limit of {max} projects"),
                        ));
                    }
                    projects.insert(project.clone(), Project::new(description(&fields), now));
                    Ok(())
                })?;
                Ok(empty())
            }
            hyper::http::Method::GET => self.store.projects_mut(|projects| {
                projects
                    .get(&project)
                    .map(|p| json_response(&project_answer(&project, p)))
                    .ok_or_else(|| missing(Missing::Project, &project, ""))
            }),
            hyper::http::Method::PUT => self.store.projects_mut(|projects| {
                let p = projects
                    .get_mut(&project)
                    .ok_or_else(|| missing(Missing::Project, &project, ""))?;
                p.description = description(&fields);
                p.modified = now;
                Ok(empty())
            }),
            hyper::http::Method::DELETE => self.store.projects_mut(|projects| {
                projects
                    .remove(&project)
                    .map(|_| empty())
                    .ok_or_else(|| missing(Missing::Project, &project, ""))
            }),
            _ => Err(ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                format!("{} / is not a project call", head.method),
            )),
        }
    }

    fn list_projects(&self, head: &Head<'_>) -> Result<Response<Bytes>, ApiError> {
        let (offset, size) = paging(head)?;
        let pattern = head.param("projectName").unwrap_or_default();
        let (total, page) = self.store.projects_mut(|projects| {
            let matching: Vec<Value> = projects
                .iter()
                .filter(|(name, _)| name.contains(pattern))
                .map(|(name, p)| project_answer(name, p))
                .collect();
            let total = matching.len();
            (
                total,
                matching
                    .into_iter()
                    .skip(offset)
                    .take(size)
                    .collect::<Vec<_>>(),
            )
        });
        Ok(json_response(
            &json!({"count": page.len(), "total": total, "projects": page}),
        ))
    }

    /// `/logstores`: CreateLogStore, ListLogStore.
    pub(super) fn logstores_api(
        &self,
        head: &Head<'_>,
        body: &[u8],
    ) -> Result<Response<Bytes>, ApiError> {
        let fields = self.managed(head, body)?.unwrap_or_default();
        let project = self.project_of(head.header("host"));
        let now = unix_now();
        if *head.method == hyper::http::Method::GET {
            let (offset, size) = paging(head)?;
            let pattern = head.param("logstoreName").unwrap_or_default();
            return self.store.projects_mut(|projects| {
                let p = projects
                    .get(&project)
                    .ok_or_else(|| missing(Missing::Project, &project, ""))?;
                let names: Vec<&String> =
                    p.logstores.keys().filter(|n| n.contains(pattern)).collect();
                let page: Vec<&String> = names.iter().copied().skip(offset).take(size).collect();
                Ok(json_response(
                    &json!({"count": page.len(), "total": names.len(), "logstores": page}),
                ))
            });
        }
        let name = fields
            .get("logstoreName")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::bad_request("ParameterInvalid", "logstoreName is missing"))?
            .to_owned();
        check_name(NameKind::Logstore, &name)?;
        let shards = match fields.get("shardCount") {
            None => self.store.shard_count,
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "ParameterInvalid",
                        format!("shardCount {v} is not a whole number"),
                    )
                })?,
        };
        check_shard_count(shards)?;
        let mut logstore = Logstore::new(shards, now);
        logstore.settings.apply(&fields, now)?;
        let max = self.store.max_logstores;
        let held = self.store.logstore_count();
        let auto_create = self.store.auto_create;
        self.store.projects_mut(|projects| {
            if auto_create && !projects.contains_key(&project) {
                // As PutLogs would with auto-creation on: the project comes with its first
                // logstore (off, the service's answer: the project must be created first).
                check_name(NameKind::Project, &project)?;
                projects.insert(project.clone(), Project::new(String::new(), now));
            }
            let p = projects
                .get_mut(&project)
                .ok_or_else(|| missing(Missing::Project, &project, ""))?;
            if p.logstores.contains_key(&name) {
                return Err(ApiError::bad_request(
                    "LogStoreAlreadyExist",
                    format!("logstore {name} already exists"),
                ));
            }
            if p.logstores.len() >= MAX_LOGSTORES_PER_PROJECT || held >= max {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "ExceedQuota",
                    format!(
                        "project {project} holds {} logstores (at most {MAX_LOGSTORES_PER_PROJECT} \
                         a project, {max} in the emulator)",
                        p.logstores.len()
                    ),
                ));
            }
            p.logstores.insert(name, logstore);
            Ok(empty())
        })
    }

    /// `/logstores/{name}`: GetLogStore, UpdateLogStore, DeleteLogStore.
    pub(super) fn logstore_api(
        &self,
        head: &Head<'_>,
        logstore: &str,
        body: &[u8],
    ) -> Result<Response<Bytes>, ApiError> {
        let fields = self.managed(head, body)?.unwrap_or_default();
        let project = self.project_of(head.header("host"));
        let now = unix_now();
        self.store.projects_mut(|projects| {
            let p = projects
                .get_mut(&project)
                .ok_or_else(|| missing(Missing::Project, &project, logstore))?;
            if *head.method == hyper::http::Method::DELETE {
                return p
                    .logstores
                    .remove(logstore)
                    .map(|_| empty())
                    .ok_or_else(|| missing(Missing::Logstore, &project, logstore));
            }
            let ls = p
                .logstores
                .get_mut(logstore)
                .ok_or_else(|| missing(Missing::Logstore, &project, logstore))?;
            match *head.method {
                hyper::http::Method::GET => Ok(json_response(&logstore_answer(logstore, ls))),
                hyper::http::Method::PUT => {
                    if let Some(v) = fields.get("shardCount") {
                        if v.as_u64() != Some(ls.shards.len() as u64) {
                            return Err(ApiError::bad_request(
                                "ParameterInvalid",
                                format!(
                                    "shardCount {v} differs from the logstore's {}: shards are \
                                     split and merged, not updated",
                                    ls.shards.len()
                                ),
                            ));
                        }
                    }
                    let mut settings = ls.settings.clone();
                    settings.apply(&fields, now)?;
                    ls.settings = settings;
                    Ok(empty())
                }
                _ => Err(ApiError::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "MethodNotAllowed",
                    format!("{} is not a logstore call", head.method),
                )),
            }
        })
    }

    /// `/logstores/{name}/index`: CreateIndex, GetIndex, UpdateIndex, DeleteIndex.
    pub(super) fn index_api(
        &self,
        head: &Head<'_>,
        logstore: &str,
        body: &[u8],
    ) -> Result<Response<Bytes>, ApiError> {
        self.managed(head, body)?;
        let project = self.project_of(head.header("host"));
        let now = unix_now();
        let given = match *head.method {
            hyper::http::Method::POST | hyper::http::Method::PUT => {
                let value: Value = serde_json::from_slice(body).map_err(|e| {
                    ApiError::bad_request("PostBodyInvalid", format!("the index is not JSON: {e}"))
                })?;
                Some(std::sync::Arc::new(Index::parse(value, now)?))
            }
            _ => None,
        };
        self.store.projects_mut(|projects| {
            let ls = projects
                .get_mut(&project)
                .ok_or_else(|| missing(Missing::Project, &project, logstore))?
                .logstores
                .get_mut(logstore)
                .ok_or_else(|| missing(Missing::Logstore, &project, logstore))?;
            let no_index = || {
                not_found(
                    "IndexConfigNotExist",
                    format!("logstore {logstore} has no index"),
                )
            };
            match (head.method.clone(), given) {
                (hyper::http::Method::POST, Some(index)) => {
                    if ls.index.is_some() {
                        return Err(ApiError::bad_request(
                            "IndexAlreadyExist",
                            format!("logstore {logstore} already has an index"),
                        ));
                    }
                    ls.index = Some(index);
                    Ok(empty())
                }
                (hyper::http::Method::PUT, Some(index)) => {
                    ls.index.as_ref().ok_or_else(no_index)?;
                    ls.index = Some(index);
                    Ok(empty())
                }
                (hyper::http::Method::GET, _) => {
                    let index = ls.index.as_ref().ok_or_else(no_index)?;
                    Ok(json_response(&index.answer(ls.settings.ttl_days)))
                }
                (hyper::http::Method::DELETE, _) => {
                    ls.index.take().ok_or_else(no_index)?;
                    Ok(empty())
                }
                (method, _) => Err(ApiError::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "MethodNotAllowed",
                    format!("{method} is not an index call"),
                )),
            }
        })
    }
}
