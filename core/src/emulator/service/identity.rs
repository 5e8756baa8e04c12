//! The two services that hand out temporary keys, played on the emulator's own port so a
//! producer's default credential chain can be run end to end offline:
//!
//! - STS `AssumeRoleWithOIDC` (`GET /?Action=AssumeRoleWithOIDC&…`, unsigned, as the SDKs send
//!   it) and `AssumeRole` (signed RPC-style with a key the emulator accepts): checks the
//!   parameters are there, the signature, and `DurationSeconds` is in 900..=43 200, and answers
//!   new keys in the service's JSON shape;
//! - the ECS metadata service: `PUT /latest/api/token` (the session token, its lifetime in
//!   `X-aliyun-ecs-metadata-token-ttl-seconds`), `GET /latest/meta-data/ram/security-credentials/`
//!   (the role's name, [`ECS_ROLE_NAME`]) and `…/security-credentials/<role>` (its keys, with
//!   `"Code": "Success"`); a request with a token must carry a live one, one without is served
//!   (IMDSv1). The role's keys URL also serves as a credentials URI.
//!
//! Every key issued is accepted by PutLogs and the read APIs with its token until it expires,
//! then refused 401 `Unauthorized` ("The security token you provided has expired."). A key
//! lives `min(DurationSeconds, credentials_lifetime_secs)` (the metadata service's, the
//! configured lifetime), so tests can watch keys run out within seconds. These requests are
//! not the Log Service's: they are counted only in `credentials_issued`.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use chrono::Utc;
use hyper::http::{HeaderValue, Method, Response, StatusCode};

use super::{Head, Key, Service};

/// The RAM role the emulated instance has.
pub const ECS_ROLE_NAME: &str = "loghose-emulator-role";
/// The metadata path of role names and keys.
const CREDENTIALS_PATH: &str = "/latest/meta-data/ram/security-credentials/";

fn random(len: usize) -> String {
    std::iter::repeat_with(fastrand::alphanumeric)
        .take(len)
        .collect()
}

fn answer(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Bytes> {
    let mut resp = Response::new(body.into());
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static(content_type));
    resp
}

impl Service {
    /// Whether a request is for STS or the metadata service rather than the Log Service.
    pub(crate) fn is_identity(path: &str, query: Option<&str>) -> bool {
        path.starts_with("/latest/")
            || (path == "/" && query.is_some_and(|q| q.contains("Action=")))
    }

    /// Answers an STS or metadata request.
    pub(super) fn identity(&self, head: &Head<'_>) -> Response<Bytes> {
        if head.path == "/" {
            return self.sts(head);
        }
        match (head.method, head.path) {
            (&Method::PUT, "/latest/api/token") => self.metadata_token(head),
            (&Method::GET, path) if path.starts_with(CREDENTIALS_PATH) => {
                if !self.live_metadata_token(head) {
                    return answer(
                        StatusCode::UNAUTHORIZED,
                        "text/plain",
                        "the metadata token is unknown or expired",
                    );
                }
                match &path[CREDENTIALS_PATH.len()..] {
                    "" => answer(StatusCode::OK, "text/plain", ECS_ROLE_NAME),
                    ECS_ROLE_NAME => {
                        let lifetime = self.config.credentials_lifetime_secs;
                        let (id, secret, token, expiration) = self.issue(lifetime);
                        let now = Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
                        let body = serde_json::json!({
                            "AccessKeyId": id, "AccessKeySecret": secret, "SecurityToken": token,
                            "Expiration": expiration, "LastUpdated": now, "Code": "Success",
                        });
                        answer(StatusCode::OK, "application/json", body.to_string())
                    }
                    _ => answer(StatusCode::NOT_FOUND, "text/plain", "Not Found"),
                }
            }
            _ => answer(StatusCode::NOT_FOUND, "text/plain", "Not Found"),
        }
    }

    /// A temporary key, accepted from now until it expires: (id, secret, token, expiration).
    fn issue(&self, lifetime_secs: u64) -> (String, String, String, String) {
        let id = format!("STS.{}", random(24));
        let secret = random(44);
        let token = format!("CAIS{}", random(200));
        let now = Utc::now().timestamp();
        let expires_at = now.saturating_add(i64::try_from(lifetime_secs).unwrap_or(i64::MAX));
        let expiration = chrono::DateTime::from_timestamp(expires_at, 0)
            .unwrap_or_default()
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let mut keys = self.keys.write();
        keys.retain(|_, k| k.expires_at.is_none_or(|t| t > now));
        keys.insert(
            id.clone(),
            Key {
                secret: secret.clone(),
                token: Some(token.clone()),
                expires_at: Some(expires_at),
            },
        );
        self.counters
            .credentials_issued
            .fetch_add(1, Ordering::Relaxed);
        (id, secret, token, expiration)
    }

    fn sts_error(&self, status: StatusCode, code: &str, message: &str) -> Response<Bytes> {
        let body = serde_json::json!({
            "RequestId": self.next_request_id(), "HostId": "sts.aliyuncs.com",
            "Code": code, "Message": message,
        });
        answer(status, "application/json", body.to_string())
    }

    fn sts(&self, head: &Head<'_>) -> Response<Bytes> {
        let action = head.param("Action").unwrap_or("");
        let required: &[(&str, &str)] = match action {
            "AssumeRoleWithOIDC" => &[
                ("RoleArn", "MissingRoleArn"),
                ("OIDCProviderArn", "MissingOIDCProviderArn"),
                ("OIDCToken", "MissingOIDCToken"),
                ("RoleSessionName", "MissingRoleSessionName"),
            ],
            "AssumeRole" => &[
                ("RoleArn", "MissingRoleArn"),
                ("RoleSessionName", "MissingRoleSessionName"),
                ("AccessKeyId", "MissingAccessKeyId"),
                ("Signature", "MissingSignature"),
            ],
            _ => {
                return self.sts_error(
                    StatusCode::BAD_REQUEST,
                    "InvalidAction.NotFound",
                    &format!(
                    "the emulator's STS serves AssumeRoleWithOIDC and AssumeRole, not {action:?}"
                ),
                )
            }
        };
        for (name, code) in required {
            if head.param(name).is_none_or(str::is_empty) {
                return self.sts_error(
                    StatusCode::BAD_REQUEST,
                    code,
                    &format!("{name} is mandatory for this action."),
                );
            }
        }
        if action == "AssumeRole" {
            if let Err(refused) = self.check_rpc_signature(head) {
                return refused;
            }
        }
        let duration = match head.param("DurationSeconds").map(str::parse::<u64>) {
            None => 3600,
            Some(Ok(d)) if (900..=43_200).contains(&d) => d,
            Some(_) => {
                return self.sts_error(
                    StatusCode::BAD_REQUEST,
                    "InvalidParameter.DurationSeconds",
                    "The parameter DurationSeconds is invalid: it must be from 900 to 43200.",
                )
            }
        };
        let lifetime = duration.min(self.config.credentials_lifetime_secs);
        let (id, secret, token, expiration) = self.issue(lifetime);
        let role_arn = head.param("RoleArn").unwrap_or("");
        let session = head.param("RoleSessionName").unwrap_or("");
        let body = serde_json::json!({
            "RequestId": self.next_request_id(),
            "AssumedRoleUser": {
                "Arn": format!("{}/{session}", role_arn.replace(":role/", ":assumed-role/")),
                "AssumedRoleId": format!("3{}:{session}", random(16)),
            },
            "Credentials": {
                "AccessKeyId": id, "AccessKeySecret": secret, "SecurityToken": token,
                "Expiration": expiration,
            },
        });
        answer(StatusCode::OK, "application/json", body.to_string())
    }

    /// An `AssumeRole` signed with a key the emulator accepts (a temporary one with its
    /// `SecurityToken`), by the RPC signature.
    #[allow(clippy::result_large_err)]
    fn check_rpc_signature(&self, head: &Head<'_>) -> Result<(), Response<Bytes>> {
        let id = head.param("AccessKeyId").unwrap_or("");
        let key = self.keys.read().get(id).cloned();
        let Some(key) = key else {
            return Err(self.sts_error(
                StatusCode::NOT_FOUND,
                "InvalidAccessKeyId.NotFound",
                &format!("Specified access key is not found: {id}"),
            ));
        };
        let now = Utc::now().timestamp();
        let token_ok = match (&key.token, head.param("SecurityToken")) {
            (None, _) => true,
            (Some(expected), Some(sent)) => {
                crate::wire::sign::constant_time_eq(expected, sent)
                    && key.expires_at.is_none_or(|t| now < t)
            }
            (Some(_), None) => false,
        };
        if !token_ok {
            return Err(self.sts_error(
                StatusCode::BAD_REQUEST,
                "InvalidSecurityToken.Expired",
                "The security token is missing, invalid or expired.",
            ));
        }
        if head.param("SignatureMethod") != Some("HMAC-SHA1") {
            return Err(self.sts_error(
                StatusCode::BAD_REQUEST,
                "InvalidSignatureMethod",
                "SignatureMethod must be HMAC-SHA1.",
            ));
        }
        let params: Vec<(&str, &str)> = head
            .query
            .iter()
            .map(|(k, v)| (k.as_ref(), v.as_ref()))
            .collect();
        let expected = crate::credentials::rpc_signature(&key.secret, &params);
        let sent = head.param("Signature").unwrap_or("");
        if crate::wire::sign::constant_time_eq(&expected, sent) {
            Ok(())
        } else {
            Err(self.sts_error(
                StatusCode::BAD_REQUEST,
                "SignatureDoesNotMatch",
                "Specified signature is not matched with our calculation.",
            ))
        }
    }

    fn metadata_token(&self, head: &Head<'_>) -> Response<Bytes> {
        let ttl = head
            .header("x-aliyun-ecs-metadata-token-ttl-seconds")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .filter(|t| (1..=21_600).contains(t));
        let Some(ttl) = ttl else {
            return answer(
                StatusCode::BAD_REQUEST,
                "text/plain",
                "X-aliyun-ecs-metadata-token-ttl-seconds must be from 1 to 21600",
            );
        };
        let token = random(56);
        let now = Utc::now().timestamp();
        let mut tokens = self.metadata_tokens.lock();
        tokens.retain(|_, until| *until > now);
        tokens.insert(token.clone(), now + ttl);
        answer(StatusCode::OK, "text/plain", token)
    }

    /// No token (IMDSv1), or one handed out and not expired.
    fn live_metadata_token(&self, head: &Head<'_>) -> bool {
        let Some(sent) = head.header("x-aliyun-ecs-metadata-token") else {
            return true;
        };
        let now = Utc::now().timestamp();
        self.metadata_tokens
            .lock()
            .get(sent)
            .is_some_and(|until| *until > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulator::EmulatorConfig;
    use hyper::http::Request;

    fn call(
        service: &Service,
        method: Method,
        uri: &str,
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let mut req = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = service.handle(req.body(Bytes::new()).unwrap());
        (
            resp.status().as_u16(),
            String::from_utf8_lossy(resp.body()).into_owned(),
        )
    }

    const OIDC: &str = "/?Action=AssumeRoleWithOIDC&Format=JSON&Version=2015-04-01\
        &RoleArn=acs%3Aram%3A%3A1%3Arole%2Fr&OIDCProviderArn=p&OIDCToken=t&RoleSessionName=s";

    #[test]
    fn sts_checks_its_parameters_and_issues_keys_that_live_as_long_as_configured() {
        let service = Service::new(EmulatorConfig {
            credentials_lifetime_secs: 60,
            ..EmulatorConfig::default()
        });
        let (status, body) = call(&service, Method::GET, OIDC, &[]);
        assert_eq!(status, 200, "{body}");
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        let creds = &answer["Credentials"];
        assert!(creds["AccessKeyId"].as_str().unwrap().starts_with("STS."));
        let expires = chrono::NaiveDateTime::parse_from_str(
            creds["Expiration"].as_str().unwrap(),
            "%Y-%m-%dT%H:%M:%SZ",
        )
        .unwrap()
        .and_utc()
        .timestamp();
        assert!((expires - Utc::now().timestamp() - 60).abs() <= 2);
        assert_eq!(
            answer["AssumedRoleUser"]["Arn"],
            "acs:ram::1:assumed-role/r/s"
        );

        let without_token = OIDC.replace("&OIDCToken=t", "");
        let (status, body) = call(&service, Method::GET, &without_token, &[]);
        assert_eq!(
            (status, body.contains("MissingOIDCToken")),
            (400, true),
            "{body}"
        );
        let (status, body) = call(
            &service,
            Method::GET,
            &format!("{OIDC}&DurationSeconds=100"),
            &[],
        );
        assert_eq!(
            (status, body.contains("DurationSeconds")),
            (400, true),
            "{body}"
        );
        let (status, body) = call(&service, Method::GET, "/?Action=GetCallerIdentity", &[]);
        assert_eq!(
            (status, body.contains("InvalidAction")),
            (400, true),
            "{body}"
        );
        let c = service.counters();
        assert_eq!((c.credentials_issued, c.requests), (1, 0));
    }

    #[test]
    fn the_metadata_service_wants_a_live_token_when_one_is_sent() {
        let service = Service::new(EmulatorConfig::default());
        let (status, _) = call(&service, Method::PUT, "/latest/api/token", &[]);
        assert_eq!(status, 400, "the lifetime header is required");
        let (status, token) = call(
            &service,
            Method::PUT,
            "/latest/api/token",
            &[("X-aliyun-ecs-metadata-token-ttl-seconds", "60")],
        );
        assert_eq!(status, 200);
        let with = [("X-aliyun-ecs-metadata-token", token.as_str())];
        assert_eq!(
            call(&service, Method::GET, CREDENTIALS_PATH, &with),
            (200, ECS_ROLE_NAME.to_owned())
        );
        let forged = [("X-aliyun-ecs-metadata-token", "forged")];
        assert_eq!(
            call(&service, Method::GET, CREDENTIALS_PATH, &forged).0,
            401
        );
        assert_eq!(call(&service, Method::GET, CREDENTIALS_PATH, &[]).0, 200);
        let role = format!("{CREDENTIALS_PATH}{ECS_ROLE_NAME}");
        let (status, body) = call(&service, Method::GET, &role, &with);
        assert_eq!(status, 200);
        let keys: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(keys["Code"], "Success");
        assert_eq!(
            call(
                &service,
                Method::GET,
                &format!("{CREDENTIALS_PATH}other"),
                &[]
            )
            .0,
            404
        );
    }
}
