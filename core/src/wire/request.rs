//! Composing complete, signed requests: the PutLogs request exactly as the C producer sends it
//! (docs/protocol.md §2), and signed GETs for the read APIs.
//!
//! The output is transport-neutral (method, path, query, ordered headers, body) so the
//! producer's HTTP client, the emulator's benchmarks and the tests all send byte-identical
//! requests. Pure functions, any thread; the clock is a parameter so callers can apply a
//! server-corrected offset and tests can pin it.

use std::time::SystemTime;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use md5::Digest as _;

use crate::wire::compress::{self, CodecError, Compression};
use crate::wire::limits::API_VERSION;
use crate::wire::sign::{self, Credentials, V1_SIGNATURE_METHOD};

/// How requests are authorised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auth {
    /// Signature v1 (HMAC-SHA1), the default of every SDK.
    V1(Credentials),
    /// Signature v4 (SLS4-HMAC-SHA256) for a region.
    V4 {
        /// The key.
        credentials: Credentials,
        /// Region of the scope, e.g. `cn-hangzhou`.
        region: String,
    },
    /// `Authorization: Bearer <api key>` (HTTPS only against the real service).
    Bearer(String),
}

/// Where a PutLogs goes.
#[derive(Clone, Copy, Debug)]
pub struct PutLogsTarget<'a> {
    /// `Host` header value: `{project}.{endpoint host}`.
    pub host: &'a str,
    /// Logstore name.
    pub logstore: &'a str,
    /// Hash key for `/shards/route?key=`; `None` sends to `/shards/lb`.
    pub hash_key: Option<&'a str>,
}

/// A request ready for any HTTP client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedRequest {
    /// `POST` or `GET`.
    pub method: &'static str,
    /// The path, not encoded (as signed).
    pub path: String,
    /// Query parameters, decoded (as signed).
    pub query: Vec<(String, String)>,
    /// Headers in send order, including `Host` and `Authorization`.
    pub headers: Vec<(String, String)>,
    /// The body as sent (shared: a retry sends the same bytes without copying them).
    pub body: Bytes,
}

impl SignedRequest {
    /// The request target: path plus URL-encoded query.
    pub fn path_and_query(&self) -> String {
        if self.query.is_empty() {
            return self.path.clone();
        }
        let query = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&self.query)
            .finish();
        format!("{}?{query}", self.path)
    }

    /// A header's value by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// `Date` header format: RFC 1123 with a two-digit day, always GMT.
pub fn http_date(now: SystemTime) -> String {
    DateTime::<Utc>::from(now)
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// `x-log-date` format of signature v4: `yyyyMMddTHHmmssZ`.
pub fn v4_date(now: SystemTime) -> String {
    DateTime::<Utc>::from(now)
        .format("%Y%m%dT%H%M%SZ")
        .to_string()
}

/// Compresses `raw` (an encoded `LogGroup`) and builds the signed PutLogs request.
pub fn put_logs(
    target: PutLogsTarget<'_>,
    raw: &[u8],
    compression: Compression,
    auth: &Auth,
    now: SystemTime,
) -> Result<SignedRequest, CodecError> {
    let body = compress::compress(compression, raw)?;
    Ok(put_logs_compressed(
        target,
        body.into(),
        raw.len(),
        compression,
        auth,
        now,
    ))
}

/// Builds the signed PutLogs request for a body already compressed with `compression`.
pub fn put_logs_compressed(
    target: PutLogsTarget<'_>,
    body: Bytes,
    raw_len: usize,
    compression: Compression,
    auth: &Auth,
    now: SystemTime,
) -> SignedRequest {
    let (path, query) = match target.hash_key {
        Some(key) => (
            format!("/logstores/{}/shards/route", target.logstore),
            vec![("key".to_owned(), key.to_owned())],
        ),
        None => (
            format!("/logstores/{}/shards/lb", target.logstore),
            Vec::new(),
        ),
    };
    let mut headers: Vec<(String, String)> = Vec::with_capacity(12);
    if let Some(value) = compression.header_value() {
        headers.push(("x-log-compresstype".into(), value.into()));
    }
    headers.push(("Content-Type".into(), "application/x-protobuf".into()));
    headers.push(("x-log-apiversion".into(), API_VERSION.into()));
    headers.push(("x-log-bodyrawsize".into(), raw_len.to_string()));
    headers.push(("Content-Length".into(), body.len().to_string()));
    headers.push(("Host".into(), target.host.to_owned()));
    let mut request = SignedRequest {
        method: "POST",
        path,
        query,
        headers,
        body,
    };
    authorize(&mut request, auth, now);
    request
}

/// Builds a signed GET for the read APIs (ListShards, GetCursor, PullLogs).
pub fn get(
    host: &str,
    path: &str,
    query: &[(&str, &str)],
    extra_headers: &[(&str, &str)],
    auth: &Auth,
    now: SystemTime,
) -> SignedRequest {
    let mut headers: Vec<(String, String)> = vec![
        ("x-log-apiversion".into(), API_VERSION.into()),
        ("x-log-bodyrawsize".into(), "0".into()),
        ("Host".into(), host.to_owned()),
    ];
    headers.extend(
        extra_headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let mut request = SignedRequest {
        method: "GET",
        path: path.to_owned(),
        query: query
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        headers,
        body: Bytes::new(),
    };
    authorize(&mut request, auth, now);
    request
}

/// Adds the body's `Content-MD5` (the service requires it on a request with a body).
fn push_content_md5(request: &mut SignedRequest) {
    if !request.body.is_empty() {
        request.headers.push((
            "Content-MD5".into(),
            format!("{:X}", md5::Md5::digest(&request.body)),
        ));
    }
}

/// Adds the date, digest and signature headers of `auth` to a request and signs it.
pub fn authorize(request: &mut SignedRequest, auth: &Auth, now: SystemTime) {
    let credentials = match auth {
        Auth::Bearer(key) => {
            push_content_md5(request);
            request
                .headers
                .push(("Authorization".into(), format!("Bearer {key}")));
            return;
        }
        Auth::V1(credentials) | Auth::V4 { credentials, .. } => credentials,
    };
    if let Some(token) = &credentials.security_token {
        request
            .headers
            .push(("x-acs-security-token".into(), token.clone()));
    }
    match auth {
        Auth::V4 { .. } => {
            request.headers.push(("x-log-date".into(), v4_date(now)));
            request.headers.push((
                "x-log-content-sha256".into(),
                sign::sha256_hex(&request.body),
            ));
        }
        _ => {
            request
                .headers
                .push(("x-log-signaturemethod".into(), V1_SIGNATURE_METHOD.into()));
            request.headers.push(("Date".into(), http_date(now)));
            push_content_md5(request);
        }
    }
    let headers: Vec<(&str, &str)> = request
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let query: Vec<(&str, &str)> = request
        .query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let value = match auth {
        Auth::V4 { region, .. } => sign::v4_authorization(
            credentials,
            region,
            request.method,
            &request.path,
            &query,
            &headers,
        ),
        _ => sign::v1_authorization(credentials, request.method, &request.path, &query, &headers),
    };
    request.headers.push(("Authorization".into(), value));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    const JAN_2024: u64 = 1_704_067_200;

    fn raw() -> Vec<u8> {
        hex::decode("0a23088081c8ac06120d0a056c6576656c1204494e464f120c0a036d7367120568656c6c6f1a017422093132372e302e302e3132210a0b5f5f7061636b5f69645f5f1212303132333435363738394142434445462d30").unwrap()
    }

    #[test]
    fn put_logs_reproduces_the_derived_vector() {
        let target = PutLogsTarget {
            host: "test-project.cn-hangzhou.log.aliyuncs.com",
            logstore: "test-logstore",
            hash_key: None,
        };
        let auth = Auth::V1(Credentials::new("id", "testAccessKeySecret"));
        let now = UNIX_EPOCH + Duration::from_secs(JAN_2024);
        let req = put_logs(target, &raw(), Compression::None, &auth, now).unwrap();
        assert_eq!(req.path_and_query(), "/logstores/test-logstore/shards/lb");
        assert_eq!(req.header("Date"), Some("Mon, 01 Jan 2024 00:00:00 GMT"));
        assert_eq!(
            req.header("Content-MD5"),
            Some("BB50B808A8165BB5CF47BE0ACE603E38")
        );
        assert_eq!(req.header("x-log-bodyrawsize"), Some("86"));
        assert_eq!(req.header("x-log-compresstype"), None);
        assert_eq!(
            req.header("Authorization"),
            Some("LOG id:oLIioeo0lFw79sy/Z6r1OGDcTp8=")
        );

        let sts = Auth::V1(Credentials::sts("id", "testAccessKeySecret", "testToken"));
        let routed = PutLogsTarget {
            hash_key: Some("5f3c0b8a4e1d2c6b7a8f9e0d1c2b3a49"),
            ..target
        };
        let req = put_logs(routed, &raw(), Compression::None, &sts, now).unwrap();
        assert_eq!(
            req.path_and_query(),
            "/logstores/test-logstore/shards/route?key=5f3c0b8a4e1d2c6b7a8f9e0d1c2b3a49"
        );
        assert_eq!(
            req.header("Authorization"),
            Some("LOG id:G32zXPNPHVdx4o++b9EqWg/cYHY=")
        );
    }

    #[test]
    fn v4_requests_carry_date_and_body_hash_but_no_md5() {
        let target = PutLogsTarget {
            host: "p.example.com",
            logstore: "ls",
            hash_key: None,
        };
        let auth = Auth::V4 {
            credentials: Credentials::new("ak", "sk"),
            region: "cn-hangzhou".into(),
        };
        let now = UNIX_EPOCH + Duration::from_secs(JAN_2024);
        let req = put_logs(target, &raw(), Compression::Lz4, &auth, now).unwrap();
        assert_eq!(req.header("x-log-date"), Some("20240101T000000Z"));
        assert_eq!(
            req.header("x-log-content-sha256").map(str::to_owned),
            Some(sign::sha256_hex(&req.body))
        );
        assert_eq!(req.header("Content-MD5"), None);
        assert_eq!(req.header("Date"), None);
        assert!(req.header("Authorization").unwrap().starts_with(
            "SLS4-HMAC-SHA256 Credential=ak/20240101/cn-hangzhou/sls/aliyun_v4_request,Signature="
        ));
    }

    #[test]
    fn bearer_requests_are_not_signed() {
        let target = PutLogsTarget {
            host: "p.example.com",
            logstore: "ls",
            hash_key: None,
        };
        let req = put_logs(
            target,
            &raw(),
            Compression::Zstd,
            &Auth::Bearer("key-1".into()),
            SystemTime::now(),
        )
        .unwrap();
        assert_eq!(req.header("Authorization"), Some("Bearer key-1"));
        assert_eq!(req.header("x-log-compresstype"), Some("zstd"));
        assert_eq!(req.header("Content-MD5").map(str::len), Some(32));
        assert_eq!(req.header("Date"), None);
    }

    #[test]
    fn http_dates_pad_the_day() {
        assert_eq!(
            http_date(UNIX_EPOCH + Duration::from_secs(1_262_507_627)),
            "Sun, 03 Jan 2010 08:33:47 GMT"
        );
    }
}
