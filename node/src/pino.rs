//! pino's JSON lines into logs, parsed here rather than with a `JSON.parse` per line in
//! JavaScript: the line's bytes go straight into the engine's encoder, in order.
//!
//! Mapping: `time` (pino's milliseconds since the epoch) becomes the log's time, to the
//! nanosecond the float carries, and is not repeated as a field (a `time` that is not a number,
//! from a custom time function, stays a field and the log takes the current time); `level`, a
//! number, becomes its label (10 `trace`, 20 `debug`, 30 `info`, 40 `warn`, 50 `error`, 60
//! `fatal`; other numbers as digits; a label given as text stays as it is); every other key
//! (`msg`, `pid`, `hostname`, bindings, the logged object's keys) becomes a field: strings as
//! they are, numbers as every front writes them, `true`/`false`/`null` as those words, nested
//! objects and arrays as their compact JSON text (pino writes it compact; it is taken as is).
//!
//! Runs on the thread that calls `sendPinoLine` (pino's worker for the transport, the main
//! thread for the destination); a line that is not a JSON object is refused as a TypeError and
//! counted as invalid, and nothing else is lost.

use loghose::producer::bindings::split_unix_seconds;
use loghose::producer::bindings::BindingAdds;
use loghose::producer::{LogEncoder, Producer, SendOptions, Track};
use serde::de::{Deserializer as _, Error as _, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::record::{finish_send, JsonRecordError, Text};

/// The line's top-level `time`, read without parsing past it (pino writes it second).
fn line_time(line: &str) -> Option<f64> {
    struct Find<'a>(&'a mut Option<f64>);
    impl<'de> Visitor<'de> for Find<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Text<'de>>()? {
                if key.0 == "time" {
                    if let Ok(t) = map.next_value::<f64>() {
                        *self.0 = Some(t);
                    }
                    // Stop here: the rest of the line is read once, by the encoder.
                    return Err(A::Error::custom("found"));
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut found = None;
    let _ = serde_json::Deserializer::from_str(line).deserialize_map(Find(&mut found));
    found
}

fn level_label(raw: &str) -> Option<&'static str> {
    Some(match raw {
        "10" => "trace",
        "20" => "debug",
        "30" => "info",
        "40" => "warn",
        "50" => "error",
        "60" => "fatal",
        _ => return None,
    })
}

/// One value's field text, from its raw JSON.
fn put_raw(enc: &mut LogEncoder<'_>, key: &str, raw: &RawValue) -> Result<(), JsonRecordError> {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => {
            let value: Text<'_> = serde_json::from_str(text)
                .map_err(|e| JsonRecordError::Type(format!("field {key:?}: {e}")))?;
            enc.field_str(key, &value.0)?;
        }
        Some(b'{' | b'[' | b't' | b'f' | b'n') => enc.field_str(key, text)?,
        _ if !text.contains(['.', 'e', 'E']) => enc.field_str(key, text)?,
        _ => {
            let value: f64 = text.parse().map_err(|_| {
                JsonRecordError::Type(format!("field {key:?}: not a number: {text}"))
            })?;
            enc.field_str(key, &loghose::producer::bindings::float_text(value))?;
        }
    }
    Ok(())
}

fn encode_line(
    enc: &mut LogEncoder<'_>,
    line: &str,
    time_taken: bool,
) -> Result<(), JsonRecordError> {
    struct Line<'e, 'b> {
        enc: &'e mut LogEncoder<'b>,
        time_taken: bool,
        failure: Option<JsonRecordError>,
    }
    impl<'de> Visitor<'de> for &mut Line<'_, '_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Text<'de>>()? {
                let raw = map.next_value::<&'de RawValue>()?;
                let key = key.0.as_ref();
                if key == "time" && self.time_taken {
                    continue;
                }
                let result = match (key, level_label(raw.get())) {
                    ("level", Some(label)) => self.enc.field_str(key, label).map_err(Into::into),
                    _ => put_raw(self.enc, key, raw),
                };
                if let Err(e) = result {
                    self.failure = Some(e);
                    return Err(A::Error::custom("stop"));
                }
            }
            Ok(())
        }
    }
    let mut visitor = Line {
        enc,
        time_taken,
        failure: None,
    };
    let parsed = serde_json::Deserializer::from_str(line).deserialize_map(&mut visitor);
    if let Some(failure) = visitor.failure {
        return Err(failure);
    }
    parsed.map_err(|e| JsonRecordError::Type(format!("a pino line must be a JSON object: {e}")))
}

/// Queues the log of one pino line (see the module text).
pub(crate) fn send_pino_line(
    producer: &Producer,
    line: &str,
) -> std::result::Result<(), crate::errors::Raised> {
    let time = line_time(line).and_then(|ms| split_unix_seconds(ms / 1000.0).ok());
    let opts = SendOptions {
        time: time.map(|t| t.0),
        time_ns: time.map(|t| t.1),
        ..SendOptions::default()
    };
    finish_send(producer.send_with_scratch(&opts, Track::None, |enc| {
        encode_line(enc, line, time.is_some())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_is_found_without_reading_the_rest() {
        assert_eq!(
            line_time(r#"{"level":30,"time":1764558000123,"msg":"x"}"#),
            Some(1764558000123.0)
        );
        assert_eq!(
            line_time(r#"{"level":30,"time":"2026-12-01T00:00:00Z"}"#),
            None
        );
        assert_eq!(line_time(r#"{"level":30,"msg":"no time"}"#), None);
        assert_eq!(line_time("not json"), None);
        // A nested "time" is not the line's.
        assert_eq!(line_time(r#"{"a":{"time":5},"time":7}"#), Some(7.0));
    }

    #[test]
    fn levels_have_labels() {
        assert_eq!(level_label("30"), Some("info"));
        assert_eq!(level_label("35"), None);
    }
}
