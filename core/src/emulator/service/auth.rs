//! Authentication: the request date (RFC 1123 for v1, `yyyyMMddTHHmmssZ` for v4, one parser
//! and one ±15 min skew check for both), the access key and its STS token, and the v1, v4 and
//! bearer signatures; and the API version every signed request carries.

use chrono::{DateTime, NaiveDateTime, Utc};
use hyper::http::StatusCode;

use super::{Head, Key, Service};
use crate::emulator::error::ApiError;
use crate::wire::limits::API_VERSION;
use crate::wire::sign::{self, Authorization, EMPTY_BODY_SHA256, V1_SIGNATURE_METHOD};

/// How a request states its time.
#[derive(Clone, Copy)]
enum DateForm {
    /// `Date` (or `x-log-date` as its stand-in): RFC 1123, `Mon, 01 Jan 2024 00:00:00 GMT`.
    Http,
    /// `x-log-date` of a v4 request: `20240101T000000Z`.
    V4,
}

impl DateForm {
    fn parse(self, value: &str) -> Option<i64> {
        let value = value.trim();
        match self {
            DateForm::Http => DateTime::parse_from_rfc2822(value)
                .ok()
                .map(|d| d.timestamp()),
            DateForm::V4 => NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%SZ")
                .ok()
                .map(|d| d.and_utc().timestamp()),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            DateForm::Http => "an RFC 1123 date",
            DateForm::V4 => "yyyyMMddTHHmmssZ",
        }
    }
}

impl Service {
    /// Parses the request's date (`header` names it in errors) and checks it is within the
    /// allowed skew of the server's clock.
    fn check_date(&self, header: &str, date: &str, form: DateForm) -> Result<(), ApiError> {
        let at = form.parse(date).ok_or_else(|| {
            ApiError::bad_request(
                "InvalidDateFormat",
                format!("{header} {date:?} is not {}", form.describe()),
            )
        })?;
        let server_now = Utc::now() + chrono::Duration::seconds(self.config.clock_offset_secs);
        if (server_now.timestamp() - at).abs() > self.config.max_clock_skew_secs {
            let server = server_now.format("%a, %d %b %Y %H:%M:%S GMT");
            return Err(ApiError::bad_request(
                "RequestTimeExpired",
                format!("request time {date} has been expired while server time is {server}"),
            ));
        }
        Ok(())
    }

    pub(super) fn key_for(&self, head: &Head<'_>, access_key_id: &str) -> Result<Key, ApiError> {
        let key = self
            .keys
            .read()
            .get(access_key_id)
            .cloned()
            .ok_or_else(|| {
                ApiError::unauthorized(format!("AccessKeyId not found: {access_key_id}"))
            })?;
        if key.expires_at.is_some_and(|t| Utc::now().timestamp() >= t) {
            return Err(ApiError::unauthorized(
                "The security token you provided has expired.",
            ));
        }
        let sent = head.header("x-acs-security-token");
        match (&key.token, sent) {
            (None, None) => Ok(key),
            (Some(expected), Some(sent)) if sign::constant_time_eq(expected, sent) => Ok(key),
            (Some(_), None) => Err(ApiError::unauthorized(
                "The security token you provided is missing for a temporary AccessKeyId.",
            )),
            _ => Err(ApiError::unauthorized(
                "The security token you provided is invalid.",
            )),
        }
    }

    /// Checks the request's signature (or API key); answers whether the signature covers the
    /// body itself (a v4 `x-log-content-sha256` of the body, checked here) — v1 covers it only
    /// through `Content-MD5`, which the caller checks.
    pub(super) fn authenticate(&self, head: &Head<'_>, body: &[u8]) -> Result<bool, ApiError> {
        let value = head
            .header("authorization")
            .ok_or_else(|| ApiError::unauthorized("missing Authorization header"))?;
        let query: Vec<(&str, &str)> = head
            .query
            .iter()
            .map(|(k, v)| (k.as_ref(), v.as_ref()))
            .collect();
        match Authorization::parse(value) {
            None => Err(ApiError::unauthorized("unsupported Authorization header")),
            Some(Authorization::Bearer(key)) => {
                if self.api_keys.contains(key) {
                    Ok(false)
                } else {
                    Err(ApiError::unauthorized("The API key is invalid."))
                }
            }
            Some(Authorization::V1 {
                access_key_id,
                signature,
            }) => {
                match head.header("x-log-signaturemethod") {
                    None => {
                        return Err(ApiError::bad_request(
                            "MissingSignatureMethod",
                            "x-log-signaturemethod is missing",
                        ))
                    }
                    Some(m) if m != V1_SIGNATURE_METHOD => {
                        return Err(ApiError::bad_request(
                            "InvalidSignatureMethod",
                            format!("signature method {m} is not supported"),
                        ))
                    }
                    Some(_) => {}
                }
                let (date, fallback) = match (head.header("date"), head.header("x-log-date")) {
                    (Some(d), _) => (d, false),
                    (None, Some(d)) => (d, true),
                    (None, None) => {
                        return Err(ApiError::bad_request(
                            "MissingDate",
                            "the Date header is missing",
                        ))
                    }
                };
                self.check_date("Date", date, DateForm::Http)?;
                let key = self.key_for(head, access_key_id)?;
                let string_to_sign = if fallback {
                    let mut headers = head.headers.clone();
                    headers.push(("date", date));
                    sign::v1_string_to_sign(head.method.as_str(), head.path, &query, &headers)
                } else {
                    sign::v1_string_to_sign(head.method.as_str(), head.path, &query, &head.headers)
                };
                let expected = sign::v1_signature(&key.secret, &string_to_sign);
                if sign::constant_time_eq(&expected, signature) {
                    Ok(false)
                } else {
                    Err(ApiError::new(
                        StatusCode::UNAUTHORIZED,
                        "SignatureNotMatch",
                        format!("Signature {signature} not matched."),
                    ))
                }
            }
            Some(Authorization::V4 {
                access_key_id,
                day,
                region,
                signature,
            }) => {
                let date = head
                    .header("x-log-date")
                    .ok_or_else(|| ApiError::bad_request("MissingDate", "x-log-date is missing"))?;
                self.check_date("x-log-date", date, DateForm::V4)?;
                let content_hash = head.header("x-log-content-sha256").ok_or_else(|| {
                    ApiError::bad_request("MissingContentSha256", "x-log-content-sha256 is missing")
                })?;
                if content_hash != EMPTY_BODY_SHA256 && content_hash != sign::sha256_hex(body) {
                    return Err(ApiError::new(
                        StatusCode::UNAUTHORIZED,
                        "SignatureNotMatch",
                        "x-log-content-sha256 does not match the body",
                    ));
                }
                let key = self.key_for(head, access_key_id)?;
                let expected = sign::v4_signature(
                    &key.secret,
                    region,
                    head.method.as_str(),
                    head.path,
                    &query,
                    &head.headers,
                );
                if !date.starts_with(day) || !sign::constant_time_eq(&expected, signature) {
                    return Err(ApiError::new(
                        StatusCode::UNAUTHORIZED,
                        "SignatureNotMatch",
                        format!("Signature {signature} not matched."),
                    ));
                }
                Ok(content_hash != EMPTY_BODY_SHA256)
            }
        }
    }

    /// Checks `Content-MD5` against the body; a request with a body must carry it unless its
    /// v4 signature covers the body (`body_signed`): nothing else would tie a v1 signature to
    /// the body (a replaced body of the same length would pass).
    pub(super) fn check_content_md5(
        head: &Head<'_>,
        body: &[u8],
        body_signed: bool,
    ) -> Result<(), ApiError> {
        match head.header("content-md5") {
            Some(md5) => {
                use md5::Digest as _;
                let actual = md5::Md5::digest(body);
                if !hex::decode(md5.trim()).is_ok_and(|sent| sent.as_slice() == actual.as_slice()) {
                    return Err(ApiError::bad_request(
                        "InvalidContentMD5",
                        format!("Content-MD5 {md5} does not match the body"),
                    ));
                }
                Ok(())
            }
            None if !body.is_empty() && !body_signed => Err(ApiError::bad_request(
                "MissingContentMD5",
                "Content-MD5 is missing: a request with a body must carry the MD5 of the body \
                 (or, signed v4, x-log-content-sha256 of the body)",
            )),
            None => Ok(()),
        }
    }

    pub(super) fn check_api_version(head: &Head<'_>) -> Result<(), ApiError> {
        match head.header("x-log-apiversion") {
            None => Err(ApiError::bad_request(
                "MissingAPIVersion",
                "x-log-apiversion is missing",
            )),
            Some(API_VERSION) => Ok(()),
            Some(v) => Err(ApiError::bad_request(
                "InvalidAPIVersion",
                format!("API version {v} is not supported"),
            )),
        }
    }
}
