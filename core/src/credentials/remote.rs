//! The three services the chain asks for temporary keys: STS (`AssumeRoleWithOIDC`, and
//! `AssumeRole` signed RPC-style with a profile's key), the ECS metadata service (a session token, the role's name, then its keys) and a credentials URI.
//!
//! Requests are made as the vendor's SDKs make them (method, path, parameters, headers) and
//! answers are read into [`Fetched`]: the keys and when they expire. Runs on the I/O runtime;
//! every request is bounded in time (STS 5 s to connect and 15 s in all, the metadata service
//! 1 s and 3 s: it is on the instance, or not there at all). Errors name the service and what
//! it answered, never the keys, the OIDC token or a body that holds them.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use chrono::NaiveDateTime;

use super::sources::{EcsRole, Leaf, OidcRole, RamRole, STS_DURATION_SECS};
use crate::wire::sign::Credentials;

/// Keys and when they stop working (`None`: they do not).
#[derive(Clone, Debug)]
pub(crate) struct Fetched {
    pub credentials: Credentials,
    pub expires_at: Option<SystemTime>,
}

/// The metadata service's session token lifetime asked for, in seconds (the vendor's).
const METADATA_TOKEN_TTL_SECS: u32 = 21_600;

/// HTTP clients, built on first use.
#[derive(Default)]
pub(crate) struct Clients {
    sts: OnceLock<reqwest::Client>,
    metadata: OnceLock<reqwest::Client>,
}

impl Clients {
    fn sts(&self) -> Result<&reqwest::Client, String> {
        if let Some(c) = self.sts.get() {
            return Ok(c);
        }
        let c = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(15))
            .user_agent(concat!("loghose/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("building the HTTP client: {e}"))?;
        Ok(self.sts.get_or_init(|| c))
    }

    /// The metadata service is link-local: never through a proxy.
    fn metadata(&self) -> Result<&reqwest::Client, String> {
        if let Some(c) = self.metadata.get() {
            return Ok(c);
        }
        let c = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(1))
            .timeout(Duration::from_secs(3))
            .no_proxy()
            .user_agent(concat!("loghose/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("building the HTTP client: {e}"))?;
        Ok(self.metadata.get_or_init(|| c))
    }
}

/// The keys `leaf` stands for.
pub(crate) async fn fetch(clients: &Clients, leaf: &Leaf) -> Result<Fetched, String> {
    match leaf {
        Leaf::Static(c) => Ok(Fetched {
            credentials: c.clone(),
            expires_at: None,
        }),
        Leaf::Oidc(role) => assume_role_with_oidc(clients, role).await,
        Leaf::Ram(role) => assume_role(clients, role).await,
        Leaf::Ecs(role) => ecs_role(clients, role).await,
        Leaf::Uri(uri) => credentials_uri(clients, uri).await,
    }
}

/// What went wrong, without the URL: a query string may hold the OIDC token, a signature or a
/// security token (the `what` beside it names the service instead).
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    if e.is_timeout() {
        text.push_str(" (timed out)");
    }
    text
}

/// A service's answer that is not 200: its status and the start of its body (error bodies
/// hold no keys).
async fn refusal(what: &str, resp: reqwest::Response) -> String {
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap_or_default();
    let body: String = body.trim().chars().take(300).collect();
    if body.is_empty() {
        format!("{what} answered HTTP {status}")
    } else {
        format!("{what} answered HTTP {status}: {body}")
    }
}

/// Sends `request` and hands back a 200 answer; anything else is an error naming `what`
/// (`context`, when given, says which of its requests).
async fn answered(
    what: &str,
    context: &str,
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, String> {
    let resp = request
        .send()
        .await
        .map_err(|e| format!("{what}: {}", describe(e)))?;
    if resp.status().is_success() {
        Ok(resp)
    } else {
        Err(refusal(&format!("{what}{context}"), resp).await)
    }
}

/// `2024-01-01T00:00:00Z`.
fn expiration(text: &str) -> Result<SystemTime, String> {
    let t = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%SZ")
        .map_err(|_| format!("an Expiration of {text:?}, not yyyy-MM-ddTHH:mm:ssZ"))?;
    let secs = u64::try_from(t.and_utc().timestamp())
        .map_err(|_| format!("an Expiration of {text:?}, before 1970"))?;
    // Checked: a Windows clock ends in the year 30828, and an answer may name a later one.
    SystemTime::UNIX_EPOCH
        .checked_add(Duration::from_secs(secs))
        .ok_or_else(|| format!("an Expiration of {text:?}, beyond what this system's clock holds"))
}

/// `AccessKeyId`, `AccessKeySecret`, `SecurityToken` and `Expiration` of an object.
fn keys_of(what: &str, value: &serde_json::Value) -> Result<Fetched, String> {
    let field = |k: &str| {
        value
            .get(k)
            .and_then(|v| v.as_str())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("{what} answered without {k}"))
    };
    let credentials = Credentials::sts(
        field("AccessKeyId")?,
        field("AccessKeySecret")?,
        field("SecurityToken")?,
    );
    let expires_at = Some(expiration(field("Expiration")?).map_err(|e| format!("{what}: {e}"))?);
    Ok(Fetched {
        credentials,
        expires_at,
    })
}

async fn json_of(what: &str, resp: reqwest::Response) -> Result<serde_json::Value, String> {
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| format!("{what}: reading the answer: {}", describe(e)))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{what} answered something not JSON: {e}"))
}

/// `GET https://sts…/?Action=AssumeRoleWithOIDC&…`, unsigned (the OIDC token is the proof).
async fn assume_role_with_oidc(clients: &Clients, role: &OidcRole) -> Result<Fetched, String> {
    let token = std::fs::read_to_string(&role.token_file).map_err(|e| {
        format!(
            "reading the OIDC token file {}: {e}",
            role.token_file.display()
        )
    })?;
    let token = token.trim();
    if token.is_empty() {
        return Err(format!(
            "the OIDC token file {} is empty",
            role.token_file.display()
        ));
    }
    let duration = STS_DURATION_SECS.to_string();
    let timestamp = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let mut query = vec![
        ("Action", "AssumeRoleWithOIDC"),
        ("Format", "JSON"),
        ("Version", "2015-04-01"),
        ("DurationSeconds", duration.as_str()),
        ("RoleArn", role.role_arn.as_str()),
        ("OIDCProviderArn", role.provider_arn.as_str()),
        ("OIDCToken", token),
        ("RoleSessionName", role.session_name.as_str()),
        ("Timestamp", timestamp.as_str()),
    ];
    if let Some(policy) = &role.policy {
        query.push(("Policy", policy));
    }
    sts_call(clients, &role.sts_endpoint, &query).await
}

/// `GET {endpoint}/?{query}`; the `Credentials` of the answer.
async fn sts_call(
    clients: &Clients,
    endpoint: &str,
    query: &[(&str, &str)],
) -> Result<Fetched, String> {
    let what = format!("STS at {endpoint}");
    let request = clients.sts()?.get(format!("{endpoint}/")).query(query);
    let body = json_of(&what, answered(&what, "", request).await?).await?;
    let creds = body
        .get("Credentials")
        .ok_or_else(|| format!("{what} answered without Credentials"))?;
    keys_of(&what, creds)
}

/// Characters an RPC signature leaves as they are (RFC 3986's unreserved).
const RPC_KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn rpc_encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, RPC_KEEP).to_string()
}

/// The signature of an RPC-style `GET` (STS's): HMAC-SHA1 keyed with `secret&` over
/// `GET&%2F&` and the sorted, encoded parameters (all but `Signature`), in base64.
pub(crate) fn rpc_signature(secret: &str, params: &[(&str, &str)]) -> String {
    use base64::Engine as _;
    use hmac::Mac as _;
    let mut sorted: Vec<(String, String)> = params
        .iter()
        .filter(|(k, _)| *k != "Signature")
        .map(|(k, v)| (rpc_encode(k), rpc_encode(v)))
        .collect();
    sorted.sort();
    let canonical = sorted
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let string_to_sign = format!("GET&%2F&{}", rpc_encode(&canonical));
    // HMAC takes a key of any length: this cannot fail.
    let Ok(mut mac) = hmac::Hmac::<sha1::Sha1>::new_from_slice(format!("{secret}&").as_bytes())
    else {
        return String::new();
    };
    mac.update(string_to_sign.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// `AssumeRole`, signed with the role's source key.
async fn assume_role(clients: &Clients, role: &RamRole) -> Result<Fetched, String> {
    let duration = role.duration_secs.to_string();
    let timestamp = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let nonce = format!("{:032x}", fastrand::u128(..));
    let mut query = vec![
        ("Action", "AssumeRole"),
        ("Format", "JSON"),
        ("Version", "2015-04-01"),
        ("DurationSeconds", duration.as_str()),
        ("RoleArn", role.role_arn.as_str()),
        ("RoleSessionName", role.session_name.as_str()),
        ("SignatureMethod", "HMAC-SHA1"),
        ("SignatureVersion", "1.0"),
        ("Timestamp", timestamp.as_str()),
        ("SignatureNonce", nonce.as_str()),
        ("AccessKeyId", role.key.access_key_id.as_str()),
    ];
    if let Some(policy) = &role.policy {
        query.push(("Policy", policy));
    }
    if let Some(id) = &role.external_id {
        query.push(("ExternalId", id));
    }
    if let Some(token) = &role.key.security_token {
        query.push(("SecurityToken", token));
    }
    let signature = rpc_signature(&role.key.access_key_secret, &query);
    query.push(("Signature", &signature));
    sts_call(clients, &role.sts_endpoint, &query).await
}

/// The metadata service's session token, or `None` to go on without one (IMDSv1).
async fn metadata_token(
    client: &reqwest::Client,
    role: &EcsRole,
    what: &str,
) -> Result<Option<String>, String> {
    let answer = client
        .put(format!("{}/latest/api/token", role.endpoint))
        .header(
            "X-aliyun-ecs-metadata-token-ttl-seconds",
            METADATA_TOKEN_TTL_SECS.to_string(),
        )
        .send()
        .await;
    let failure = match answer {
        Ok(resp) if resp.status().is_success() => {
            return resp
                .text()
                .await
                .map(Some)
                .map_err(|e| format!("{what}: reading the session token: {}", describe(e)))
        }
        Ok(resp) => refusal(&format!("{what} (session token)"), resp).await,
        Err(e) => format!("{what}: {}", describe(e)),
    };
    if role.imds_v1_disabled {
        Err(failure)
    } else {
        Ok(None)
    }
}

/// The role's keys from the ECS metadata service.
async fn ecs_role(clients: &Clients, role: &EcsRole) -> Result<Fetched, String> {
    let client = clients.metadata()?;
    let what = format!("the ECS metadata service at {}", role.endpoint);
    let token = metadata_token(client, role, &what).await?;
    let get = |path: String| {
        let mut req = client.get(format!(
            "{}/latest/meta-data/ram/security-credentials/{path}",
            role.endpoint
        ));
        if let Some(t) = &token {
            req = req.header("X-aliyun-ecs-metadata-token", t);
        }
        req
    };
    let role_name = match &role.role_name {
        Some(r) => r.clone(),
        None => {
            let name = answered(&what, " (role name)", get(String::new()))
                .await?
                .text()
                .await
                .map_err(|e| format!("{what}: {}", describe(e)))?;
            let name = name.trim().to_owned();
            if name.is_empty() {
                return Err(format!("{what} names no RAM role for this instance"));
            }
            name
        }
    };
    let context = format!(" (role {role_name:?})");
    let resp = answered(&what, &context, get(role_name)).await?;
    let body = json_of(&what, resp).await?;
    success_keys(&what, &body)
}

/// An answer with `"Code": "Success"` and the keys beside it.
fn success_keys(what: &str, body: &serde_json::Value) -> Result<Fetched, String> {
    match body.get("Code").and_then(|c| c.as_str()) {
        Some("Success") => keys_of(what, body),
        code => Err(format!("{what} answered Code {code:?}, not \"Success\"")),
    }
}

/// `GET` the URI: the metadata service's answer shape.
async fn credentials_uri(clients: &Clients, uri: &str) -> Result<Fetched, String> {
    let what = format!("the credentials URI {uri}");
    let request = clients.sts()?.get(uri);
    let body = json_of(&what, answered(&what, "", request).await?).await?;
    success_keys(&what, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rpc_signature_is_the_vendors() {
        // Computed with alibabacloud-credentials' compose_string_to_sign and sign_string.
        let params = [
            ("Action", "AssumeRole"),
            ("Format", "JSON"),
            ("Version", "2015-04-01"),
            ("DurationSeconds", "3600"),
            ("RoleArn", "acs:ram::1234:role/logger"),
            ("RoleSessionName", "session-1"),
            ("SignatureMethod", "HMAC-SHA1"),
            ("SignatureVersion", "1.0"),
            ("Timestamp", "2026-12-03T10:00:00Z"),
            ("SignatureNonce", "d2a8c1f0"),
            ("AccessKeyId", "LTAI5tExample"),
            (
                "Policy",
                r#"{"Statement":[{"Action":["log:*"],"Effect":"Allow"}]}"#,
            ),
            ("Signature", "left out"),
        ];
        assert_eq!(
            rpc_signature("secret-key", &params),
            "CsZY/SCRTWpB/fTPO3I4KRSAgXM="
        );
    }

    #[test]
    fn an_expiration_past_the_clocks_end_is_an_error_not_a_panic() {
        // The last four-digit year holds on every clock (a Windows clock ends in 30828); a
        // signed longer year, if it parses, is past the end there and an error, never a panic.
        let last = expiration("9999-12-31T23:59:59Z").unwrap();
        assert!(last > SystemTime::UNIX_EPOCH + Duration::from_secs(4_102_444_800));
        match expiration("+99999-12-31T23:59:59Z") {
            Ok(t) => assert!(t > last),
            Err(e) => assert!(
                e.contains("beyond what this system's clock holds") || e.contains("not yyyy"),
                "{e}"
            ),
        }
        assert!(expiration("1969-12-31T23:59:59Z")
            .unwrap_err()
            .contains("before 1970"));
    }

    #[test]
    fn answers_are_read_as_the_vendor_reads_them() {
        let ok = serde_json::json!({
            "Code": "Success", "AccessKeyId": "STS.a", "AccessKeySecret": "s",
            "SecurityToken": "t", "Expiration": "2030-01-02T03:04:05Z"
        });
        let f = success_keys("x", &ok).unwrap();
        assert_eq!(f.credentials, Credentials::sts("STS.a", "s", "t"));
        assert_eq!(
            f.expires_at.unwrap(),
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_893_553_445)
        );
        let mut failed = ok.clone();
        failed["Code"] = "Failed".into();
        assert!(success_keys("x", &failed)
            .unwrap_err()
            .contains("\"Failed\""));
        let mut no_token = ok.clone();
        no_token["SecurityToken"] = "".into();
        assert!(success_keys("x", &no_token)
            .unwrap_err()
            .contains("without SecurityToken"));
        let mut bad_time = ok;
        bad_time["Expiration"] = "tomorrow".into();
        let e = success_keys("x", &bad_time).unwrap_err();
        assert!(e.contains("\"tomorrow\"") && !e.contains("STS.a"), "{e}");
    }
}
