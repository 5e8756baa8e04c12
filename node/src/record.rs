//! Records given as JSON (the general path: records with options, non-string values, or text
//! the fast path cannot frame): parsed straight into the engine's encoder, in order, without
//! building JavaScript or Rust maps. Values may be strings, numbers or booleans (converted as
//! `String()` would); anything else is a `TypeError` naming the key.

use loghose::producer::bindings::{BindingAdds, ScratchError};
use loghose::producer::{
    LogEncoder, Producer, ProducerError, RecordError, RecordSet, SendOptions, Track,
};

use crate::errors::Raised;

/// A JSON string, borrowed when it has no escapes.
pub(crate) struct Text<'de>(pub(crate) std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A field value as JavaScript may give it: text, number or boolean (converted as `String()`
/// would); anything else is refused.
enum Scalar<'de> {
    Text(std::borrow::Cow<'de, str>),
    Converted(String),
    Refused(&'static str),
}

impl<'de> serde::Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Text(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Converted(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Converted(v))
            }
            fn visit_bool<E>(self, v: bool) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Converted(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Converted(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Converted(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<Scalar<'de>, E> {
                // Written as every front writes a float (Python's repr).
                Ok(Scalar::Converted(loghose::producer::bindings::float_text(
                    v,
                )))
            }
            fn visit_unit<E>(self) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Refused("null"))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Scalar<'de>, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Scalar::Refused("object"))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Scalar<'de>, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Scalar::Refused("array"))
            }
        }
        d.deserialize_any(V)
    }
}

/// Why a JSON record could not be encoded.
pub(crate) enum JsonRecordError {
    Type(String),
    Record(RecordError),
}

impl From<RecordError> for JsonRecordError {
    fn from(e: RecordError) -> Self {
        JsonRecordError::Record(e)
    }
}

/// Encodes a record given as JSON — an object, or an array of `[key, value]` pairs — straight
/// into the engine's encoder, in order.
fn encode_json(enc: &mut LogEncoder<'_>, json: &str) -> std::result::Result<(), JsonRecordError> {
    use serde::de::{Deserializer as _, MapAccess, SeqAccess, Visitor};
    struct Record<'e, 'b> {
        enc: &'e mut LogEncoder<'b>,
        failure: Option<JsonRecordError>,
    }
    impl Record<'_, '_> {
        fn field(&mut self, key: &str, value: Scalar<'_>) -> bool {
            let result = match value {
                Scalar::Text(v) => self.enc.field_str(key, &v),
                Scalar::Converted(v) => self.enc.field_str(key, &v),
                Scalar::Refused(kind) => {
                    self.failure = Some(JsonRecordError::Type(format!(
                        "value of field {key:?} must be a string, Buffer, number or boolean, not {kind}"
                    )));
                    return false;
                }
            };
            match result {
                Ok(()) => true,
                Err(e) => {
                    self.failure = Some(JsonRecordError::Record(e));
                    false
                }
            }
        }
    }
    impl<'de> Visitor<'de> for &mut Record<'_, '_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object or an array of [key, value] pairs")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
            while let Some(key) = map.next_key::<Text<'de>>()? {
                let value = map.next_value::<Scalar<'de>>()?;
                if !self.field(&key.0, value) {
                    return Err(serde::de::Error::custom("stop"));
                }
            }
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
            while let Some((key, value)) = seq.next_element::<(Text<'de>, Scalar<'de>)>()? {
                if !self.field(&key.0, value) {
                    return Err(serde::de::Error::custom("stop"));
                }
            }
            Ok(())
        }
    }
    let mut record = Record { enc, failure: None };
    let mut de = serde_json::Deserializer::from_str(json);
    let parsed = de.deserialize_any(&mut record);
    if let Some(failure) = record.failure {
        return Err(failure);
    }
    parsed.map_err(|e| {
        JsonRecordError::Type(format!(
            "contents must be an object or an array of [key, value] pairs: {e}"
        ))
    })
}

/// Queues one record given as JSON. It is encoded apart and then copied into its batch (the
/// engine's scratch path), so a type error found halfway leaves no trace and counts the record
/// as invalid.
pub(crate) fn send_json(
    producer: &Producer,
    json: &str,
    opts: &SendOptions<'_>,
    track: Track,
) -> std::result::Result<(), Raised> {
    finish_send(producer.send_with_scratch(opts, track, |enc| encode_json(enc, json)))
}

/// The outcome of a scratch-path send, as the facade's errors.
pub(crate) fn finish_send<T>(
    result: std::result::Result<T, ScratchError<JsonRecordError>>,
) -> std::result::Result<(), Raised> {
    match result {
        Ok(_) => Ok(()),
        Err(ScratchError::Producer(e)) => Err(e.into()),
        Err(ScratchError::Fill(e)) => Err(e.into()),
    }
}

impl From<JsonRecordError> for Raised {
    fn from(e: JsonRecordError) -> Raised {
        match e {
            JsonRecordError::Record(e) => ProducerError::from(e).into(),
            JsonRecordError::Type(message) => Raised::type_error(message),
        }
    }
}

/// Queues every record of a JSON array, or none of them (see [`Producer::send_all`]): each is
/// encoded first; the first that cannot be is refused with its index, and nothing is queued.
pub(crate) fn send_many_json(
    producer: &Producer,
    json: &str,
) -> std::result::Result<usize, Raised> {
    producer.ensure_owned()?;
    let records: Vec<&serde_json::value::RawValue> = serde_json::from_str(json)
        .map_err(|e| Raised::type_error(format!("records must be an array: {e}")))?;
    let mut set: RecordSet<'_> = producer.record_set();
    for (index, record) in records.iter().enumerate() {
        set.push(&SendOptions::default(), |enc| {
            encode_json(enc, record.get())
        })
        .map_err(|e| Raised::from(e).prefixed(format_args!("record {index}: ")))?;
    }
    Ok(producer.send_all(&set, &SendOptions::default())?)
}
