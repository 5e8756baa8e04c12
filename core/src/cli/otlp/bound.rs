//! How many elements a request body holds, counted on its bytes before it is decoded, so that a
//! small body cannot become a large allocation: an attribute is two bytes of protobuf and
//! three of JSON, but a decoded `KeyValue` takes about sixty, a `LogRecord` about two hundred,
//! and a JSON value tree more. Sixteen MiB of empty attributes would decode to hundreds of MB;
//! counted first, it is refused in one pass over its bytes, allocating nothing.
//!
//! An element is a message of the request: a resource's or scope's logs, a record, a scope, a
//! resource, an attribute, a value (a record's body, an attribute's value, each item of a list
//! or map), and each string of an entity reference's key lists. Protobuf is walked along the
//! OTLP logs schema (only fields that are messages are entered; nesting deeper than prost
//! decodes stops the walk, and prost then refuses the body). OTLP/JSON counts its objects,
//! which are the same messages. A body that is not well formed is counted as far as it reads;
//! the decoder then says what is wrong with it. Runs on the decoding thread; pure.

/// The messages of the OTLP logs schema whose fields are entered.
#[derive(Clone, Copy)]
enum Message {
    Request,
    ResourceLogs,
    Resource,
    EntityRef,
    ScopeLogs,
    Scope,
    Record,
    KeyValue,
    Value,
    List,
    Map,
}

/// What a length-delimited field `number` of `message` holds: a message to count and enter,
/// a string to count (entity reference keys), or bytes to skip (`None`).
fn field(message: Message, number: u64) -> Option<Option<Message>> {
    use Message::*;
    let entered = match (message, number) {
        (Request, 1) => ResourceLogs,
        (ResourceLogs, 1) => Resource,
        (ResourceLogs, 2) => ScopeLogs,
        (Resource, 1) | (Scope, 3) | (Record, 6) | (Map, 1) => KeyValue,
        (Resource, 3) => EntityRef,
        (EntityRef, 3 | 4) => return Some(None),
        (ScopeLogs, 1) => Scope,
        (ScopeLogs, 2) => Record,
        (Record, 5) | (KeyValue, 2) | (List, 1) => Value,
        (Value, 5) => List,
        (Value, 6) => Map,
        _ => return None,
    };
    Some(Some(entered))
}

/// prost's own limit on nested messages; deeper bodies are refused by the decoder.
const MAX_DEPTH: u32 = 100;

/// Whether the protobuf `body` (an `ExportLogsServiceRequest`) holds more than `limit`
/// elements.
pub(crate) fn protobuf_over(body: &[u8], limit: usize) -> bool {
    let mut count = 0usize;
    walk(body, Message::Request, 0, &mut count, limit).is_err()
}

/// Counts the elements of `bytes` (the fields of one `message`) into `count`; `Err` once it
/// passes `limit`. Bytes that do not read as protobuf end the walk of their message.
fn walk(
    mut bytes: &[u8],
    message: Message,
    depth: u32,
    count: &mut usize,
    limit: usize,
) -> Result<(), ()> {
    while !bytes.is_empty() {
        let Some(tag) = varint(&mut bytes) else {
            return Ok(());
        };
        let skipped = match tag & 7 {
            0 => varint(&mut bytes).map(|_| 0),
            1 => Some(8),
            5 => Some(4),
            2 => {
                let Some(len) = varint(&mut bytes).and_then(|n| usize::try_from(n).ok()) else {
                    return Ok(());
                };
                if len > bytes.len() {
                    return Ok(());
                }
                let (inner, rest) = bytes.split_at(len);
                if let Some(entered) = field(message, tag >> 3) {
                    *count += 1;
                    if *count > limit {
                        return Err(());
                    }
                    if let Some(entered) = entered {
                        if depth < MAX_DEPTH {
                            walk(inner, entered, depth + 1, count, limit)?;
                        }
                    }
                }
                bytes = rest;
                Some(0)
            }
            // Groups (3, 4) and unknown wire types: prost refuses them.
            _ => None,
        };
        match skipped {
            Some(n) if n <= bytes.len() => bytes = &bytes[n..],
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// Reads a base-128 varint from the front of `bytes`.
fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Some(value);
        }
    }
    None
}

/// Whether the OTLP/JSON `body` holds more than `limit` elements: its objects, outside
/// strings, after the outermost one (the request itself).
pub(crate) fn json_over(body: &[u8], limit: usize) -> bool {
    let (mut objects, mut in_string, mut escaped) = (0usize, false, false);
    for &b in body {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b'{' {
            objects += 1;
            if objects > limit.saturating_add(1) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, ArrayValue, KeyValue};
    use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
    use prost::Message as _;

    fn request(records: Vec<LogRecord>) -> ExportLogsServiceRequest {
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                scope_logs: vec![ScopeLogs {
                    log_records: records,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    fn string(s: &str) -> Option<AnyValue> {
        Some(AnyValue {
            value: Some(any_value::Value::StringValue(s.into())),
        })
    }

    #[test]
    fn elements_are_counted_as_the_schema_nests_them() {
        let record = LogRecord {
            body: string("hello"),
            attributes: vec![
                KeyValue {
                    key: "a".into(),
                    value: string("1"),
                    ..Default::default()
                },
                KeyValue {
                    key: "list".into(),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::ArrayValue(ArrayValue {
                            values: vec![string("x").unwrap(), string("y").unwrap()],
                        })),
                    }),
                    ..Default::default()
                },
            ],
            // Bytes fields are not entered even when they read as a message.
            trace_id: vec![0x0a, 0x00, 0x0a, 0x00],
            ..Default::default()
        };
        let body = request(vec![record]).encode_to_vec();
        // resource logs, scope logs, record, body, 2 attributes, 2 values, the list, 2 items.
        let elements = 11;
        assert!(!protobuf_over(&body, elements));
        assert!(protobuf_over(&body, elements - 1));
    }

    #[test]
    fn a_million_empty_attributes_is_refused_in_one_pass() {
        let attributes = vec![KeyValue::default(); 1_000_000];
        let body = request(vec![LogRecord {
            attributes,
            ..Default::default()
        }])
        .encode_to_vec();
        assert!(body.len() < 2_100_000);
        assert!(protobuf_over(&body, 500_000));
        assert!(!protobuf_over(&body, 1_000_003));
        let json = format!(
            r#"{{"resourceLogs":[{{"scopeLogs":[{{"logRecords":[{{"attributes":[{}]}}]}}]}}]}}"#,
            vec!["{}"; 1_000_000].join(",")
        );
        assert!(json_over(json.as_bytes(), 500_000));
        assert!(!json_over(json.as_bytes(), 1_000_003));
    }

    #[test]
    fn json_braces_in_strings_are_not_objects() {
        let body = br#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"{{{\"{{"}}]}]}]}"#;
        // resource logs, scope logs, record, body.
        assert!(!json_over(body, 4));
        assert!(json_over(body, 3));
    }

    #[test]
    fn bodies_that_do_not_read_are_counted_as_far_as_they_go() {
        // A length past the end, a truncated varint, a group, a ten-byte run of continuations.
        for body in [&[0x0a, 0x05, 0x0a][..], &[0x0a, 0xff], &[0x0b], &[0xff; 11]] {
            assert!(!protobuf_over(body, 0), "{body:?}");
        }
        // Nesting deeper than prost decodes is not followed (nor does it overflow the stack).
        fn delimited(tag: u8, inner: Vec<u8>) -> Vec<u8> {
            let mut out = vec![tag];
            let mut n = inner.len();
            while n >= 0x80 {
                out.push((n & 0x7f) as u8 | 0x80);
                n >>= 7;
            }
            out.push(n as u8);
            out.extend(inner);
            out
        }
        let mut value = Vec::new();
        for _ in 0..10_000 {
            // AnyValue.array_value (5) holding ArrayValue.values (1) holding the value so far.
            value = delimited(0x2a, delimited(0x0a, value));
        }
        let mut count = 0;
        assert!(walk(&value, Message::Value, 0, &mut count, usize::MAX).is_ok());
        assert!(count <= 2 * MAX_DEPTH as usize + 2, "{count}");
    }
}
