//! Request signing as the service verifies it (docs/protocol.md §3–§5).
//!
//! - **v1** (`LOG id:base64(HMAC-SHA1)`): the default of every SDK. The string to sign is the
//!   verb, Content-MD5, Content-Type, the literal Date, the `x-log-*`/`x-acs-*` headers sorted
//!   by lowercase name (without `x-log-date`, which the Python SDK adds after signing), and the
//!   path with its query sorted by key, values not encoded.
//! - **v4** (`SLS4-HMAC-SHA256`): a canonical request over `content-type`, `host`, `x-log-*`
//!   and `x-acs-*` (trimmed), the query sorted by raw key with RFC 3986-encoded values, and the
//!   body's SHA-256; a signing key derived from the secret, the day, the region and `sls`.
//! - **STS**: the temporary key signs as usual and `x-acs-security-token` travels (and is
//!   signed) as an `x-acs-` header. **Bearer**: `Authorization: Bearer <api key>`, no signature.
//!
//! The same functions sign on the producer and verify on the emulator, so a vector that passes
//! here passes at both ends. Pure functions, any thread; secrets are never logged.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::{Digest, Sha256};

type HmacSha1 = Hmac<Sha1>;
type HmacSha256 = Hmac<Sha256>;

/// The v1 `x-log-signaturemethod` value.
pub const V1_SIGNATURE_METHOD: &str = "hmac-sha1";
/// The v4 algorithm name, first word of its `Authorization` header and string to sign.
pub const V4_ALGORITHM: &str = "SLS4-HMAC-SHA256";
/// SHA-256 of the empty body, hex: what v4 signs for requests without a body.
pub const EMPTY_BODY_SHA256: &str =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// An access key, optionally temporary (STS) with its security token.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// AccessKeyId.
    pub access_key_id: String,
    /// AccessKeySecret.
    pub access_key_secret: String,
    /// STS security token, sent as `x-acs-security-token`.
    pub security_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("access_key_secret", &"<redacted>")
            .field(
                "security_token",
                &self.security_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl Credentials {
    /// A permanent access key.
    pub fn new(access_key_id: impl Into<String>, access_key_secret: impl Into<String>) -> Self {
        Credentials {
            access_key_id: access_key_id.into(),
            access_key_secret: access_key_secret.into(),
            security_token: None,
        }
    }

    /// A temporary (STS) key with its token.
    pub fn sts(id: impl Into<String>, secret: impl Into<String>, token: impl Into<String>) -> Self {
        Credentials {
            access_key_id: id.into(),
            access_key_secret: secret.into(),
            security_token: Some(token.into()),
        }
    }
}

/// What a request presents as its authorization, parsed from the `Authorization` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorization<'a> {
    /// `LOG <id>:<signature>`.
    V1 {
        /// AccessKeyId.
        access_key_id: &'a str,
        /// base64 HMAC-SHA1.
        signature: &'a str,
    },
    /// `SLS4-HMAC-SHA256 Credential=<id>/<day>/<region>/sls/aliyun_v4_request,Signature=<hex>`.
    V4 {
        /// AccessKeyId.
        access_key_id: &'a str,
        /// `yyyyMMdd` of the scope.
        day: &'a str,
        /// Region of the scope.
        region: &'a str,
        /// hex HMAC-SHA256.
        signature: &'a str,
    },
    /// `Bearer <api key>`.
    Bearer(&'a str),
}

impl<'a> Authorization<'a> {
    /// Parses an `Authorization` header value; `None` when it fits no known scheme.
    pub fn parse(value: &'a str) -> Option<Self> {
        let value = value.trim();
        if let Some(rest) = value.strip_prefix("LOG ") {
            let (id, signature) = rest.trim().rsplit_once(':')?;
            if id.is_empty() || signature.is_empty() {
                return None;
            }
            return Some(Authorization::V1 {
                access_key_id: id,
                signature,
            });
        }
        if let Some(rest) = value.strip_prefix(V4_ALGORITHM) {
            let mut credential = None;
            let mut signature = None;
            for part in rest.trim().split(',') {
                let part = part.trim();
                if let Some(c) = part.strip_prefix("Credential=") {
                    credential = Some(c);
                } else if let Some(s) = part.strip_prefix("Signature=") {
                    signature = Some(s);
                }
            }
            let mut scope = credential?.split('/');
            let (id, day, region) = (scope.next()?, scope.next()?, scope.next()?);
            if scope.next()? != "sls"
                || scope.next()? != "aliyun_v4_request"
                || scope.next().is_some()
                || id.is_empty()
            {
                return None;
            }
            return Some(Authorization::V4 {
                access_key_id: id,
                day,
                region,
                signature: signature?,
            });
        }
        let key = value.strip_prefix("Bearer ")?.trim();
        (!key.is_empty()).then_some(Authorization::Bearer(key))
    }
}

/// Looks a header up by case-insensitive name.
pub fn header<'a>(headers: &[(&str, &'a str)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| *v)
}

fn is_signed_v1(lower_name: &str) -> bool {
    (lower_name.starts_with("x-log-") || lower_name.starts_with("x-acs-"))
        && lower_name != "x-log-date"
}

fn is_signed_v4(lower_name: &str) -> bool {
    lower_name == "content-type"
        || lower_name == "host"
        || lower_name.starts_with("x-acs-")
        || (lower_name.starts_with("x-log-") && !lower_name.starts_with("x-log-meta-"))
}

fn sorted_lowercase<'a>(
    headers: &[(&str, &'a str)],
    keep: fn(&str) -> bool,
) -> Vec<(String, &'a str)> {
    let mut out: Vec<(String, &str)> = headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), *v))
        .filter(|(k, _)| keep(k))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The v1 string to sign. `query` holds decoded key/value pairs, in any order.
pub fn v1_string_to_sign(
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> String {
    let mut s = String::with_capacity(256);
    s.push_str(method);
    s.push('\n');
    s.push_str(header(headers, "content-md5").unwrap_or(""));
    s.push('\n');
    s.push_str(header(headers, "content-type").unwrap_or(""));
    s.push('\n');
    s.push_str(header(headers, "date").unwrap_or(""));
    s.push('\n');
    for (name, value) in sorted_lowercase(headers, is_signed_v1) {
        s.push_str(&name);
        s.push(':');
        s.push_str(value);
        s.push('\n');
    }
    s.push_str(path);
    if !query.is_empty() {
        let mut sorted = query.to_vec();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        s.push('?');
        for (i, (k, v)) in sorted.iter().enumerate() {
            if i > 0 {
                s.push('&');
            }
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
    }
    s
}

/// base64(HMAC-SHA1(secret, string_to_sign)).
pub fn v1_signature(secret: &str, string_to_sign: &str) -> String {
    let mut mac =
        HmacSha1::new_from_slice(secret.as_bytes()).expect("HMAC accepts keys of any length");
    mac.update(string_to_sign.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// The complete v1 `Authorization` value for a request.
pub fn v1_authorization(
    credentials: &Credentials,
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> String {
    let signature = v1_signature(
        &credentials.access_key_secret,
        &v1_string_to_sign(method, path, query, headers),
    );
    format!("LOG {}:{}", credentials.access_key_id, signature)
}

/// RFC 3986 percent-encoding with only `A-Za-z0-9-_.~` left as is (space → `%20`, `*` → `%2A`).
pub fn v4_percent_encode(value: &str) -> String {
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(value, KEEP).to_string()
}

/// The v4 canonical request and its signed-headers list.
pub fn v4_canonical_request(
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
    hashed_payload: &str,
) -> (String, String) {
    let mut s = String::with_capacity(512);
    s.push_str(method);
    s.push('\n');
    s.push_str(path);
    s.push('\n');
    let mut sorted = query.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    for (i, (k, v)) in sorted.iter().enumerate() {
        if i > 0 {
            s.push('&');
        }
        s.push_str(k);
        if !v.is_empty() {
            s.push('=');
            s.push_str(&v4_percent_encode(v));
        }
    }
    s.push('\n');
    let signed = sorted_lowercase(headers, is_signed_v4);
    for (name, value) in &signed {
        s.push_str(name);
        s.push(':');
        s.push_str(value.trim());
        s.push('\n');
    }
    s.push('\n');
    let signed_names = signed
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(";");
    s.push_str(&signed_names);
    s.push('\n');
    s.push_str(hashed_payload);
    (s, signed_names)
}

fn hmac256(key: &[u8], msg: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(msg);
    mac.finalize().into_bytes().to_vec()
}

/// hex(SHA-256(bytes)).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A v4 request's `x-log-date` (`yyyyMMddTHHmmssZ`) and its day (`yyyyMMdd`), what both its
/// signature and its credential scope name.
fn v4_date<'h>(headers: &[(&str, &'h str)]) -> (&'h str, &'h str) {
    let date_time = header(headers, "x-log-date").unwrap_or("");
    (date_time, date_time.get(..8).unwrap_or(date_time))
}

/// The v4 signature (hex) for a request whose headers already carry `x-log-date`
/// (`yyyyMMddTHHmmssZ`) and `x-log-content-sha256`.
pub fn v4_signature(
    secret: &str,
    region: &str,
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> String {
    let (date_time, day) = v4_date(headers);
    let hashed_payload = header(headers, "x-log-content-sha256").unwrap_or(EMPTY_BODY_SHA256);
    let (canonical, _) = v4_canonical_request(method, path, query, headers, hashed_payload);
    let scope = format!("{day}/{region}/sls/aliyun_v4_request");
    let string_to_sign = format!(
        "{V4_ALGORITHM}\n{date_time}\n{scope}\n{}",
        sha256_hex(canonical.as_bytes())
    );
    let mut key = hmac256(format!("aliyun_v4{secret}").as_bytes(), day.as_bytes());
    key = hmac256(&key, region.as_bytes());
    key = hmac256(&key, b"sls");
    key = hmac256(&key, b"aliyun_v4_request");
    hex::encode(hmac256(&key, string_to_sign.as_bytes()))
}

/// The complete v4 `Authorization` value (same preconditions as [`v4_signature`]).
pub fn v4_authorization(
    credentials: &Credentials,
    region: &str,
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> String {
    let (_, day) = v4_date(headers);
    let signature = v4_signature(
        &credentials.access_key_secret,
        region,
        method,
        path,
        query,
        headers,
    );
    format!(
        "{V4_ALGORITHM} Credential={}/{day}/{region}/sls/aliyun_v4_request,Signature={signature}",
        credentials.access_key_id
    )
}

/// Compares two signatures in time independent of where they differ.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const APIV: (&str, &str) = ("x-log-apiversion", "0.6.0");
    const METHOD: (&str, &str) = ("x-log-signaturemethod", "hmac-sha1");

    fn v1(
        secret: &str,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> String {
        v1_signature(secret, &v1_string_to_sign(method, path, query, headers))
    }

    // ---- docs/protocol.md §3.1 ----

    #[test]
    fn v1_a_go_get() {
        let headers = [
            ("Date", "Mon, 3 Jan 2010 08:33:47 GMT"),
            APIV,
            ("x-log-bodyrawsize", "0"),
            METHOD,
        ];
        let sts = v1_string_to_sign("GET", "/logstores", &[], &headers);
        assert_eq!(sts, "GET\n\n\nMon, 3 Jan 2010 08:33:47 GMT\nx-log-apiversion:0.6.0\nx-log-bodyrawsize:0\nx-log-signaturemethod:hmac-sha1\n/logstores");
        let creds = Credentials::new("mockAccessKeyID", "mockAccessKeySecret");
        assert_eq!(
            v1_authorization(&creds, "GET", "/logstores", &[], &headers),
            "LOG mockAccessKeyID:Rwm6cTKzoti4HWoe+GKcb6Kv07E="
        );
    }

    #[test]
    fn v1_b_go_post_body() {
        let body = hex::decode("0a320a1e08f8b2939e0512160a07546573744b6579120b54657374436f6e74656e741a00220e31302e3233302e3230312e313137").unwrap();
        let md5 = format!("{:X}", md5::Md5::digest(&body));
        assert_eq!(md5, "8D6881250FF5559F59BBDF04100F6E59");
        let headers = [
            ("Content-MD5", md5.as_str()),
            ("Content-Type", "application/x-protobuf"),
            ("Date", "Mon, 3 Jan 2010 08:33:47 GMT"),
            APIV,
            ("x-log-bodyrawsize", "50"),
            METHOD,
        ];
        assert_eq!(
            v1(
                "mockAccessKeySecret",
                "GET",
                "/logstores/app_log",
                &[],
                &headers
            ),
            "87xQWqFaOSewqRIma8kPjGYlXHc="
        );
    }

    #[test]
    fn v1_c_node_get_with_query() {
        let headers = [("date", "Mon, 09 Nov 2015 06:11:16 GMT"), APIV, METHOD];
        let query = [("size", "1000"), ("logstoreName", ""), ("offset", "0")];
        assert_eq!(
            v1_string_to_sign("GET", "/logstores", &query, &headers),
            "GET\n\n\nMon, 09 Nov 2015 06:11:16 GMT\nx-log-apiversion:0.6.0\nx-log-signaturemethod:hmac-sha1\n/logstores?logstoreName=&offset=0&size=1000"
        );
        assert_eq!(
            v1(
                "4fdO2fTDDnZPU/L7CHNdemB2Nsk=",
                "GET",
                "/logstores",
                &query,
                &headers
            ),
            "jEYOTCJs2e88o+y5F4/S5IsnBJQ="
        );
    }

    const NODE_POST: [(&str, &str); 8] = [
        ("date", "Mon, 09 Nov 2015 06:03:03 GMT"),
        APIV,
        METHOD,
        ("content-md5", "1DD45FA4A70A9300CC9FE7305AF2C494"),
        ("content-length", "52"),
        ("content-type", "application/x-protobuf"),
        ("x-log-bodyrawsize", "50"),
        ("x-log-compresstype", "lz4"),
    ];

    #[test]
    fn v1_d_node_post() {
        assert_eq!(
            v1(
                "4fdO2fTDDnZPU/L7CHNdemB2Nsk=",
                "POST",
                "/logstores/test-logstore",
                &[],
                &NODE_POST
            ),
            "XWLGYHGg2F2hcfxWxMLiNkGki6g="
        );
    }

    #[test]
    fn v1_e_node_post_with_sts_token() {
        let token = "CAISiwJ1q6Ft5B2yfSjIr5D7Et3+35R02JuKR1P1lk40dt1giPfK1Dz2IHhLdXNrAuEXs/w0mmBQ7v8TlqZdVplOWU3Da+B364xK7Q75jHw5B0zwv9I+k5SANTW5KXyShb3/AYjQSNfaZY3eCTTtnTNyxr3XbCirW0ffX7SClZ9gaKZ8PGD6F00kYu1bPQx/ssQXGGLMPPK2SH7Qj3HXEVBjt3gX6wo9y9zmnZHNukGH3QOqkbVM9t6rGPX+MZkwZqUYesyuwel7epDG1CNt8BVQ/M909vccpmad5YrMUgQJuEvWa7KNo8caKgJmI7M3AbBFp/WlyKMn5raOydSrkE8cePtSVynP+g0hR0dZ+YgagAEFdb+5rO1e+OZ3kcmPKF5Zh2Sni+vF1qzKA/SElND5koQQV6uvVCweKnfzCPMKjY0OXWmfgtcwOTyJ4ABGsTGnILzBNRD/+Gdqe7wclZrj0aDUkTdFf8k7SudZuO9KOPBe8mS3pJoMs1p67mWA/J4Wn0dottbprb5EQOBRxUC6bw==";
        let mut headers = NODE_POST.to_vec();
        headers.push(("x-acs-security-token", token));
        let creds = Credentials::sts(
            "STS.NSNYgJ2KUoYaEuDrNazRLg2a6",
            "56Xqw2THF5vTHTNkGWR6uGRKXToKWMi2eLFjppPNV8RR",
            token,
        );
        assert_eq!(
            v1_authorization(&creds, "POST", "/logstores/test-logstore", &[], &headers),
            "LOG STS.NSNYgJ2KUoYaEuDrNazRLg2a6:G3R03b6PwVI+zUaLtqezsBDL/j8="
        );
    }

    const EPOCH: (&str, &str) = ("Date", "Thu, 01 Jan 1970 00:00:00 GMT");

    #[test]
    fn v1_f_rust_empty_credentials() {
        assert_eq!(
            v1("", "GET", "/", &[], &[EPOCH, APIV, METHOD]),
            "SApFTtfTFKHmzdEdaMe5TjNn+RQ="
        );
    }

    fn rust_json_headers(token: Option<&'static str>) -> Vec<(&'static str, &'static str)> {
        let mut h = vec![
            EPOCH,
            APIV,
            METHOD,
            ("Content-MD5", "CE688F8D1AC3ED309BA9BE0A5ABAFCE5"),
            ("Content-Type", "application/json"),
        ];
        if let Some(t) = token {
            h.push(("x-acs-security-token", t));
        }
        h
    }

    #[test]
    fn v1_g_h_rust_post_with_query_and_token() {
        let body = "\n            {\"key\": \"value\"}\n        ";
        assert_eq!(
            format!("{:X}", md5::Md5::digest(body.as_bytes())),
            "CE688F8D1AC3ED309BA9BE0A5ABAFCE5"
        );
        let query = [("type", "log"), ("offset", "0"), ("line", "100")];
        let path = "/logstores/test-logstore";
        assert!(
            v1_string_to_sign("POST", path, &query, &rust_json_headers(None))
                .ends_with("/logstores/test-logstore?line=100&offset=0&type=log")
        );
        assert_eq!(
            v1(
                "test-access-key",
                "POST",
                path,
                &query,
                &rust_json_headers(None)
            ),
            "4pL2xZJERC3tPKtRiHh9+nMG3tI="
        );
        assert_eq!(
            v1(
                "test-access-key",
                "POST",
                path,
                &query,
                &rust_json_headers(Some("test-security-token"))
            ),
            "ZQt+0wIvpd+O9yIJKeKxZTJ2hv0="
        );
    }

    #[test]
    fn v1_i_rust_cursor_query() {
        let query = [
            ("type", "log"),
            ("count", "1000"),
            ("cursor", "MTczNzY2OTAzNjAxNzIxODQ1NA=="),
        ];
        assert_eq!(
            v1(
                "test-access-key",
                "POST",
                "/logstores/test/shards/2",
                &query,
                &rust_json_headers(Some("test-security-token"))
            ),
            "K3rw5WXRe77aZ/meSyEa8NNUYFc="
        );
    }

    #[test]
    fn v1_ignores_x_log_date_and_other_headers() {
        let base = [EPOCH, APIV, METHOD];
        let mut more = base.to_vec();
        more.push(("x-log-date", "whatever"));
        more.push(("User-Agent", "x"));
        more.push(("Host", "p.example.com"));
        assert_eq!(
            v1("k", "GET", "/", &[], &base),
            v1("k", "GET", "/", &[], &more)
        );
    }

    // ---- docs/protocol.md §3.2 (derived PutLogs vectors) ----

    fn putlogs_headers<'a>(
        md5: &'a str,
        raw: &'a str,
        lz4: bool,
        token: Option<&'a str>,
    ) -> Vec<(&'a str, &'a str)> {
        let mut h = vec![
            ("Content-Type", "application/x-protobuf"),
            APIV,
            METHOD,
            ("Date", "Mon, 01 Jan 2024 00:00:00 GMT"),
            ("Content-MD5", md5),
            ("x-log-bodyrawsize", raw),
        ];
        if lz4 {
            h.push(("x-log-compresstype", "lz4"));
        }
        if let Some(t) = token {
            h.push(("x-acs-security-token", t));
        }
        h
    }

    #[test]
    fn derived_putlogs_vectors() {
        let raw = hex::decode("0a23088081c8ac06120d0a056c6576656c1204494e464f120c0a036d7367120568656c6c6f1a017422093132372e302e302e3132210a0b5f5f7061636b5f69645f5f1212303132333435363738394142434445462d30").unwrap();
        let mut lz4 = vec![0xf0, 0x47];
        lz4.extend_from_slice(&raw);
        let md5_raw = format!("{:X}", md5::Md5::digest(&raw));
        let md5_lz4 = format!("{:X}", md5::Md5::digest(&lz4));
        assert_eq!(md5_raw, "BB50B808A8165BB5CF47BE0ACE603E38");
        assert_eq!(md5_lz4, "6CEFDA9B6DED75B6723739CFA93BF218");
        let secret = "testAccessKeySecret";
        let lb = "/logstores/test-logstore/shards/lb";
        assert_eq!(
            v1(
                secret,
                "POST",
                lb,
                &[],
                &putlogs_headers(&md5_raw, "86", false, None)
            ),
            "oLIioeo0lFw79sy/Z6r1OGDcTp8="
        );
        assert_eq!(
            v1(
                secret,
                "POST",
                lb,
                &[],
                &putlogs_headers(&md5_lz4, "86", true, None)
            ),
            "KPhGYZ9Jka7opTJm9zcH6BOpzBU="
        );
        let route = "/logstores/test-logstore/shards/route";
        let q = [("key", "5f3c0b8a4e1d2c6b7a8f9e0d1c2b3a49")];
        let tok = Some("testToken");
        assert_eq!(
            v1(
                secret,
                "POST",
                route,
                &q,
                &putlogs_headers(&md5_raw, "86", false, tok)
            ),
            "G32zXPNPHVdx4o++b9EqWg/cYHY="
        );
        assert_eq!(
            v1(
                secret,
                "POST",
                route,
                &q,
                &putlogs_headers(&md5_lz4, "86", true, tok)
            ),
            "ld4GmrQb2PwP02eUtGX0KV5rNEs="
        );
    }

    // ---- docs/protocol.md §4 (v4) ----

    const V4_SECRET: &str = "zxasdasdasw2";
    const V4_BODY: &[u8] = b"adasd= -asd zcas";
    const V4_HEADERS: [(&str, &str); 5] = [
        ("hello", "world"),
        ("hello-Text", "a12X- "),
        (" Ko ", ""),
        ("x-log-test", "het123"),
        ("x-acs-ppp", "dds"),
    ];
    const V4_PARAMS: [(&str, &str); 4] =
        [(" abc", "efg"), (" agc ", ""), ("", "efg"), ("A-bc", "eFg")];

    fn v4(
        method: &str,
        path: &str,
        params: &[(&str, &str)],
        headers: &[(&str, &str)],
        body: &[u8],
        region: &str,
    ) -> String {
        let hash = sha256_hex(body);
        let mut h = headers.to_vec();
        h.push(("x-log-date", "20220808T032330Z"));
        h.push(("x-log-content-sha256", &hash));
        v4_signature(V4_SECRET, region, method, path, params, &h)
    }

    #[test]
    fn v4_canonical_request_of_vector_1() {
        let hash = sha256_hex(V4_BODY);
        let mut h = V4_HEADERS.to_vec();
        h.push(("x-log-date", "20220808T032330Z"));
        h.push(("x-log-content-sha256", &hash));
        let (canonical, signed) = v4_canonical_request("POST", "/logstores", &V4_PARAMS, &h, &hash);
        assert_eq!(canonical, "POST\n/logstores\n=efg& abc=efg& agc &A-bc=eFg\nx-acs-ppp:dds\nx-log-content-sha256:c7a4fd95f1d70933caf91641e8000768cea86100dc5649fd4f16fead718a62e4\nx-log-date:20220808T032330Z\nx-log-test:het123\n\nx-acs-ppp;x-log-content-sha256;x-log-date;x-log-test\nc7a4fd95f1d70933caf91641e8000768cea86100dc5649fd4f16fead718a62e4");
        assert_eq!(
            signed,
            "x-acs-ppp;x-log-content-sha256;x-log-date;x-log-test"
        );
    }

    #[test]
    fn v4_vectors_1_to_5() {
        assert_eq!(
            v4(
                "POST",
                "/logstores",
                &V4_PARAMS,
                &V4_HEADERS,
                V4_BODY,
                "cn-hangzhou"
            ),
            "a98f5632e93836e63839cd836a54055f480020a9364ca944e2d34f2eb9bf1bed"
        );
        assert_eq!(
            v4("POST", "/logstores", &[], &[], V4_BODY, "cn-shanghai"),
            "8a10a5e723cb2e75964816de660b2c16a58af8bc0261f7f0722d832468c76ce8"
        );
        assert_eq!(
            v4(
                "POST",
                "/logstores",
                &V4_PARAMS,
                &V4_HEADERS,
                b"",
                "cn-hangzhou"
            ),
            "5a66d8f8051983e0e9d08e0f960ef9252ef971eead5bb5c7acec8617a2eb2701"
        );
        assert_eq!(
            v4(
                "GET",
                "/logstores",
                &V4_PARAMS,
                &V4_HEADERS,
                b"",
                "cn-hangzhou"
            ),
            "d92741852500791d662a8d469ff61627c0559ecd86c3f59b7bf6772b6c62666a"
        );
        let mut params = V4_PARAMS.to_vec();
        params.push(("abs-ij*asd/vc", "a~js+d ada"));
        params.push(("a abAas123/vc", "a~jdad a2ADFs+d ada"));
        assert_eq!(
            v4(
                "POST",
                "/logstores/hello/a+*~bb/cc",
                &params,
                &V4_HEADERS,
                V4_BODY,
                "cn-hangzhou"
            ),
            "2c204068e961a8813a6bcf7ac422f7fa6e9bf9a5da493e0165dfe100854d18ff"
        );
    }

    #[test]
    fn v4_percent_encoding_vector() {
        assert_eq!(
            v4_percent_encode("123abc!@#$%^&*()-=_+ ~|\\/"),
            "123abc%21%40%23%24%25%5E%26%2A%28%29-%3D_%2B%20~%7C%5C%2F"
        );
    }

    #[test]
    fn authorization_headers_parse() {
        assert_eq!(
            Authorization::parse("LOG id:sig="),
            Some(Authorization::V1 {
                access_key_id: "id",
                signature: "sig="
            })
        );
        assert_eq!(
            Authorization::parse("SLS4-HMAC-SHA256 Credential=ak/20220808/cn-hangzhou/sls/aliyun_v4_request,Signature=ab12"),
            Some(Authorization::V4 { access_key_id: "ak", day: "20220808", region: "cn-hangzhou", signature: "ab12" })
        );
        assert_eq!(
            Authorization::parse("Bearer k-1"),
            Some(Authorization::Bearer("k-1"))
        );
        for bad in [
            "",
            "LOG nocolon",
            "LOG :x",
            "Basic abc",
            "SLS4-HMAC-SHA256 Credential=a/b,Signature=x",
            "Bearer  ",
        ] {
            assert_eq!(Authorization::parse(bad), None, "{bad:?}");
        }
        let creds = Credentials::new("ak", "sk");
        let h = [
            ("x-log-date", "20220808T032330Z"),
            ("x-log-content-sha256", EMPTY_BODY_SHA256),
        ];
        let value = v4_authorization(&creds, "cn-hangzhou", "GET", "/", &[], &h);
        let Some(Authorization::V4 { signature, .. }) = Authorization::parse(&value) else {
            panic!("{value}")
        };
        assert_eq!(
            signature,
            v4_signature("sk", "cn-hangzhou", "GET", "/", &[], &h)
        );
    }

    #[test]
    fn debug_output_redacts_secrets() {
        let text = format!("{:?}", Credentials::sts("id", "very-secret", "tok-secret"));
        assert!(
            text.contains("id") && !text.contains("very-secret") && !text.contains("tok-secret")
        );
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq("abc", "abc"));
        assert!(!constant_time_eq("abc", "abd"));
        assert!(!constant_time_eq("abc", "ab"));
    }
}
