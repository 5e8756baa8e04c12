//! OTLP log records as Log Service logs: the field layout of the OpenTelemetry Collector's Log
//! Service exporter, exactly as the Python and Node OTel processors write it (one layout
//! whichever way a record comes): `host` and `service` (the resource's `host.name` and
//! `service.name`), `resource` (its other attributes), `otlp.name` and `otlp.version` (the
//! scope), `timeUnixNano`, `severityNumber`, `severityText`, `attribute`, `content` (the body),
//! `flags`, `traceID` and `spanID` (lowercase hex, empty when unset).
//!
//! `resource` and `attribute` are compact JSON objects with sorted keys whose values are text
//! (numbers and booleans as written, lists and maps as JSON); a structured body is JSON too.
//! The JSON is what Python's `json` writes with sorted keys and compact separators, with the
//! characters HTML treats specially escaped as Go's `encoding/json` does. A record without a
//! body is a log with an empty `content`, not a drop.
//!
//! Pure functions, run on the receiver's thread. Recursion follows the value's nesting, which
//! the decoders bound (prost and serde_json refuse more than about a hundred levels).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use base64::Engine as _;
use opentelemetry_proto::tonic::common::v1::{any_value::Value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::resource::v1::Resource;

/// The fields a resource gives every record under it (worked out once per resource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourceFields {
    pub host: String,
    pub service: String,
    pub resource: String,
}

impl ResourceFields {
    pub(crate) fn of(resource: Option<&Resource>) -> ResourceFields {
        let attributes = resource.map(|r| r.attributes.as_slice()).unwrap_or(&[]);
        let find = |key: &str| {
            attributes
                .iter()
                .rev()
                .find(|kv| kv.key == key)
                .map(|kv| text(kv.value.as_ref()))
                .unwrap_or_default()
        };
        ResourceFields {
            host: find("host.name"),
            service: find("service.name"),
            resource: object(attributes, &["host.name", "service.name"]),
        }
    }

    /// The value of a resource attribute as text, if present (for routing).
    pub(crate) fn attribute(resource: Option<&Resource>, key: &str) -> Option<String> {
        resource?
            .attributes
            .iter()
            .rev()
            .find(|kv| kv.key == key)
            .map(|kv| text(kv.value.as_ref()))
    }
}

/// One record's fields, in the processors' order, and its time in Unix nanoseconds (the
/// record's timestamp, else when it was observed; `None`: neither is set).
pub(crate) fn fields(
    resource: &ResourceFields,
    scope_name: &str,
    scope_version: &str,
    record: &LogRecord,
) -> ([(&'static str, String); 13], Option<u64>) {
    let hex = |bytes: &[u8]| {
        if bytes.iter().all(|b| *b == 0) {
            String::new()
        } else {
            hex::encode(bytes)
        }
    };
    let fields = [
        ("host", resource.host.clone()),
        ("service", resource.service.clone()),
        ("resource", resource.resource.clone()),
        ("otlp.name", scope_name.to_owned()),
        ("otlp.version", scope_version.to_owned()),
        ("timeUnixNano", record.time_unix_nano.to_string()),
        ("severityNumber", record.severity_number.to_string()),
        ("severityText", record.severity_text.clone()),
        ("attribute", object(&record.attributes, &[])),
        ("content", text(record.body.as_ref())),
        ("flags", format!("{:x}", record.flags & 0xff)),
        ("traceID", hex(&record.trace_id)),
        ("spanID", hex(&record.span_id)),
    ];
    let at = [record.time_unix_nano, record.observed_time_unix_nano]
        .into_iter()
        .find(|t| *t != 0);
    (fields, at)
}

/// A value as text (the OTel data model's string form): strings as they are, numbers and
/// booleans as written, bytes in base64, lists and maps as JSON, nothing as "".
pub(crate) fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        None => String::new(),
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::BoolValue(b)) => if *b { "true" } else { "false" }.to_owned(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::DoubleValue(f)) => float_text(*f),
        Some(Value::BytesValue(b)) => base64::engine::general_purpose::STANDARD.encode(b),
        Some(other) => {
            let mut out = String::new();
            json_value(Some(other), &mut out);
            go_escape(out)
        }
    }
}

/// A float as the exporter writes one: the shortest digits that read back the same, never in
/// exponent form (Rust's `Display` is exactly that); `NaN`, `+Inf`, `-Inf`.
fn float_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        f.to_string()
    }
}

/// The attributes as a JSON object of their text, keys sorted (the last of a repeated key
/// wins), leaving out `leave`.
fn object(attributes: &[KeyValue], leave: &[&str]) -> String {
    let sorted: BTreeMap<&str, String> = attributes
        .iter()
        .filter(|kv| !leave.contains(&kv.key.as_str()))
        .map(|kv| (kv.key.as_str(), text(kv.value.as_ref())))
        .collect();
    let mut out = String::from("{");
    for (i, (key, value)) in sorted.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_string(key, &mut out);
        out.push(':');
        json_string(value, &mut out);
    }
    out.push('}');
    go_escape(out)
}

/// A value inside a list or map, as Python's `json` writes it (sorted keys, compact).
fn json_value(value: Option<&Value>, out: &mut String) {
    match value {
        None => out.push_str("null"),
        Some(Value::StringValue(s)) => json_string(s, out),
        Some(Value::BoolValue(b)) => out.push_str(if *b { "true" } else { "false" }),
        Some(Value::IntValue(i)) => {
            let _ = write!(out, "{i}");
        }
        // A profiles dictionary index (not used in logs): the number.
        Some(Value::StringValueStrindex(i)) => {
            let _ = write!(out, "{i}");
        }
        Some(Value::DoubleValue(f)) => out.push_str(&python_float(*f)),
        Some(Value::BytesValue(b)) => {
            json_string(&base64::engine::general_purpose::STANDARD.encode(b), out)
        }
        Some(Value::ArrayValue(list)) => {
            out.push('[');
            for (i, v) in list.values.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_value(v.value.as_ref(), out);
            }
            out.push(']');
        }
        Some(Value::KvlistValue(map)) => {
            let sorted: BTreeMap<&str, Option<&Value>> = map
                .values
                .iter()
                .map(|kv| {
                    (
                        kv.key.as_str(),
                        kv.value.as_ref().and_then(|v| v.value.as_ref()),
                    )
                })
                .collect();
            out.push('{');
            for (i, (key, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string(key, out);
                out.push(':');
                json_value(v, out);
            }
            out.push('}');
        }
    }
}

/// A float in JSON as Python's `repr` writes it: fixed notation with at least one decimal
/// between 1e-4 and 1e16, else the shortest digits with a signed two-digit exponent; `NaN`,
/// `Infinity`, `-Infinity`.
fn python_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..16).contains(&exponent) {
        let fixed = f.to_string();
        if fixed.contains('.') {
            fixed
        } else {
            fixed + ".0"
        }
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    }
}

/// A JSON string as Python's `json` writes it with `ensure_ascii=False`.
fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Escapes `<`, `>`, `&`, U+2028 and U+2029 as Go's `encoding/json` does.
fn go_escape(text: String) -> String {
    if !text.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{ArrayValue as List, KeyValueList as Map};

    fn v(value: Value) -> Option<AnyValue> {
        Some(AnyValue { value: Some(value) })
    }

    fn kv(key: &str, value: Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: v(value),
            ..Default::default()
        }
    }

    #[test]
    fn values_read_as_the_processors_write_them() {
        use Value::*;
        assert_eq!(text(None), "");
        assert_eq!(text(v(StringValue("a<b".into())).as_ref()), "a<b");
        assert_eq!(text(v(BoolValue(true)).as_ref()), "true");
        assert_eq!(text(v(IntValue(-7)).as_ref()), "-7");
        assert_eq!(text(v(DoubleValue(1.0)).as_ref()), "1");
        assert_eq!(text(v(DoubleValue(1e20)).as_ref()), "100000000000000000000");
        assert_eq!(text(v(DoubleValue(1.5e-7)).as_ref()), "0.00000015");
        assert_eq!(text(v(DoubleValue(f64::NEG_INFINITY)).as_ref()), "-Inf");
        assert_eq!(text(v(BytesValue(b"hi".to_vec())).as_ref()), "aGk=");
        let list = List {
            values: vec![
                AnyValue {
                    value: Some(DoubleValue(1.0)),
                },
                AnyValue {
                    value: Some(DoubleValue(1e20)),
                },
                AnyValue {
                    value: Some(DoubleValue(1.5e-7)),
                },
                AnyValue { value: None },
                AnyValue {
                    value: Some(StringValue("x&\"\n\u{1}".into())),
                },
            ],
        };
        assert_eq!(
            text(v(ArrayValue(list)).as_ref()),
            r#"[1.0,1e+20,1.5e-07,null,"x\u0026\"\n\u0001"]"#
        );
        let map = Map {
            values: vec![kv("b", IntValue(2)), kv("a", BoolValue(false))],
        };
        assert_eq!(text(v(KvlistValue(map)).as_ref()), r#"{"a":false,"b":2}"#);
    }

    #[test]
    fn a_record_has_the_exporters_fields_and_an_empty_body_is_a_record() {
        let resource = Resource {
            attributes: vec![
                kv("service.name", Value::StringValue("checkout".into())),
                kv("host.name", Value::StringValue("box-1".into())),
                kv("zone", Value::StringValue("cn-hangzhou-h".into())),
                kv("cpus", Value::IntValue(4)),
            ],
            ..Default::default()
        };
        let fields_of = ResourceFields::of(Some(&resource));
        assert_eq!(fields_of.resource, r#"{"cpus":"4","zone":"cn-hangzhou-h"}"#);
        let record = LogRecord {
            observed_time_unix_nano: 1_700_000_000_123_456_789,
            severity_number: 9,
            severity_text: "INFO".into(),
            attributes: vec![kv("user", Value::StringValue("ann".into()))],
            flags: 1,
            trace_id: vec![0xab; 16],
            span_id: vec![0; 8],
            ..Default::default()
        };
        let (fields, at) = fields(&fields_of, "app", "1.2", &record);
        let get = |k: &str| {
            fields
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("host"), Some("box-1"));
        assert_eq!(get("service"), Some("checkout"));
        assert_eq!(get("otlp.name"), Some("app"));
        assert_eq!(get("timeUnixNano"), Some("0"));
        assert_eq!(get("severityNumber"), Some("9"));
        assert_eq!(get("attribute"), Some(r#"{"user":"ann"}"#));
        assert_eq!(get("content"), Some(""));
        assert_eq!(get("flags"), Some("1"));
        assert_eq!(get("traceID"), Some("abababababababababababababababab"));
        assert_eq!(get("spanID"), Some(""));
        assert_eq!(at, Some(1_700_000_000_123_456_789));
    }
}
