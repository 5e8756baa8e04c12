//! What the management API keeps besides the logs: a logstore's settings (as CreateLogStore
//! and UpdateLogStore set them) and its index (as CreateIndex and UpdateIndex set it), checked
//! as the service checks them. The index is kept twice: the configuration as it was given
//! (GetIndex answers it back) and parsed into what a query needs (which fields are searchable,
//! as text or as numbers, and how their text is split into words).
//!
//! Plain data, read and written under the store's lock; parsing happens before it is taken.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::ApiError;

/// The longest retention the service allows, in days (3650: "kept for ever").
pub(crate) const MAX_TTL_DAYS: u64 = 3650;
/// The most logstores a project holds (the service's default quota).
pub(crate) const MAX_LOGSTORES_PER_PROJECT: usize = 200;
/// The most shards automatic splitting may reach.
pub(crate) const MAX_SPLIT_SHARD: u64 = 256;
/// The service's default word separators for text indexes.
pub(crate) const DEFAULT_TOKENS: &str = ", '\";=()[]{}?@&<>/:\n\t\r";

/// A logstore's settings.
#[derive(Clone, Debug)]
pub(crate) struct LogstoreSettings {
    pub(crate) ttl_days: u32,
    pub(crate) enable_tracking: bool,
    pub(crate) auto_split: bool,
    pub(crate) max_split_shard: u32,
    pub(crate) append_meta: bool,
    pub(crate) telemetry_type: String,
    /// `standard` or `query`, when given.
    pub(crate) mode: Option<String>,
    pub(crate) hot_ttl: Option<i64>,
    pub(crate) infrequent_access_ttl: Option<i64>,
    pub(crate) enable_modify: bool,
    pub(crate) modified: u32,
}

impl LogstoreSettings {
    /// What a logstore made by auto-creation (or given no settings) has: the service's
    /// defaults.
    pub(crate) fn new(now: u32) -> Self {
        LogstoreSettings {
            ttl_days: 30,
            enable_tracking: false,
            auto_split: true,
            max_split_shard: 64,
            append_meta: false,
            telemetry_type: String::new(),
            mode: None,
            hot_ttl: None,
            infrequent_access_ttl: None,
            enable_modify: false,
            modified: now,
        }
    }

    /// Applies a CreateLogStore or UpdateLogStore body: fields absent keep their value.
    pub(crate) fn apply(&mut self, body: &Map<String, Value>, now: u32) -> Result<(), ApiError> {
        if let Some(v) = body.get("ttl") {
            let ttl = whole(v, "ttl")?;
            if !(1..=MAX_TTL_DAYS).contains(&ttl) {
                return Err(invalid(format!(
                    "ttl {ttl} is out of range: 1 to {MAX_TTL_DAYS} days"
                )));
            }
            self.ttl_days = ttl as u32;
        }
        if let Some(v) = body.get("maxSplitShard") {
            let max = whole(v, "maxSplitShard")?;
            if !(1..=MAX_SPLIT_SHARD).contains(&max) {
                return Err(invalid(format!(
                    "maxSplitShard {max} is out of range: 1 to {MAX_SPLIT_SHARD}"
                )));
            }
            self.max_split_shard = max as u32;
        }
        for (key, field) in [
            ("enable_tracking", &mut self.enable_tracking),
            ("autoSplit", &mut self.auto_split),
            ("appendMeta", &mut self.append_meta),
            ("enableModify", &mut self.enable_modify),
        ] {
            if let Some(v) = body.get(key) {
                *field = v
                    .as_bool()
                    .ok_or_else(|| invalid(format!("{key} must be true or false, not {v}")))?;
            }
        }
        if let Some(v) = body.get("telemetryType") {
            let t = v.as_str().unwrap_or_default();
            if !matches!(t, "" | "None" | "Metrics" | "Event") {
                return Err(invalid(format!(
                    "telemetryType {v} is not one of None, Metrics, Event"
                )));
            }
            self.telemetry_type = t.to_owned();
        }
        if let Some(v) = body.get("mode") {
            match v.as_str() {
                Some(m @ ("standard" | "query")) => self.mode = Some(m.to_owned()),
                _ => return Err(invalid(format!("mode {v} is not one of standard, query"))),
            }
        }
        if let Some(v) = body.get("hot_ttl") {
            self.hot_ttl = Some(
                v.as_i64()
                    .ok_or_else(|| invalid("hot_ttl must be a number"))?,
            );
        }
        if let Some(v) = body.get("infrequentAccessTTL") {
            self.infrequent_access_ttl = Some(
                v.as_i64()
                    .ok_or_else(|| invalid("infrequentAccessTTL must be a number"))?,
            );
        }
        self.modified = now;
        Ok(())
    }
}

/// A whole non-negative number (the SDKs send numbers; some tools send them as text).
fn whole(v: &Value, key: &str) -> Result<u64, ApiError> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| invalid(format!("{key} must be a whole number, not {v}")))
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("ParameterInvalid", message)
}

fn index_invalid(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("IndexInfoInvalid", message)
}

/// How a text field is split into words, and whether case matters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TextIndex {
    pub(crate) separators: Vec<char>,
    pub(crate) case_sensitive: bool,
}

impl Default for TextIndex {
    fn default() -> Self {
        TextIndex {
            separators: DEFAULT_TOKENS.chars().collect(),
            case_sensitive: false,
        }
    }
}

impl TextIndex {
    fn parse(value: &Value, what: &str) -> Result<TextIndex, ApiError> {
        let mut separators = Vec::new();
        match value.get("token") {
            None => separators = DEFAULT_TOKENS.chars().collect(),
            Some(Value::Array(tokens)) => {
                for t in tokens {
                    let t = t.as_str().ok_or_else(|| {
                        index_invalid(format!("{what}: a token must be text, not {t}"))
                    })?;
                    separators.extend(t.chars());
                }
            }
            Some(other) => {
                return Err(index_invalid(format!(
                    "{what}: token must be a list of separators, not {other}"
                )))
            }
        }
        Ok(TextIndex {
            separators,
            case_sensitive: value
                .get("caseSensitive")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }

    /// The words of `text`.
    pub(crate) fn words<'t>(&'t self, text: &'t str) -> impl Iterator<Item = &'t str> + 't {
        // ASCII separators looked up in a bit set: this runs for every character a search
        // indexes.
        let ascii = self
            .separators
            .iter()
            .filter(|c| c.is_ascii())
            .fold(0u128, |set, c| set | (1u128 << (*c as u32)));
        text.split(move |c: char| {
            if c.is_ascii() {
                ascii & (1u128 << (c as u32)) != 0 || c.is_ascii_whitespace()
            } else {
                self.separators.contains(&c) || c.is_whitespace()
            }
        })
        .filter(|w| !w.is_empty())
    }
}

/// How one field is indexed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KeyIndex {
    Text(TextIndex),
    Long,
    Double,
}

/// A logstore's index.
#[derive(Clone, Debug)]
pub(crate) struct Index {
    /// The configuration as it was given.
    pub(crate) config: Value,
    /// Full-text search over every field's value, when configured.
    pub(crate) line: Option<TextIndex>,
    /// The fields searchable by name.
    pub(crate) keys: BTreeMap<String, KeyIndex>,
    pub(crate) modified: u32,
}

impl Index {
    /// Parses a CreateIndex / UpdateIndex body.
    pub(crate) fn parse(config: Value, now: u32) -> Result<Index, ApiError> {
        let Some(object) = config.as_object() else {
            return Err(index_invalid("the index must be a JSON object"));
        };
        let line = match object.get("line") {
            None | Some(Value::Null) => None,
            Some(line) => Some(TextIndex::parse(line, "line")?),
        };
        let mut keys = BTreeMap::new();
        match object.get("keys") {
            None | Some(Value::Null) => {}
            Some(Value::Object(fields)) => {
                for (name, spec) in fields {
                    let kind = match spec.get("type").and_then(Value::as_str).unwrap_or("text") {
                        "text" | "json" => KeyIndex::Text(TextIndex::parse(spec, name)?),
                        "long" => KeyIndex::Long,
                        "double" => KeyIndex::Double,
                        other => {
                            return Err(index_invalid(format!(
                                "key {name}: type {other:?} is not one of text, long, double, json"
                            )))
                        }
                    };
                    keys.insert(name.clone(), kind);
                }
            }
            Some(other) => {
                return Err(index_invalid(format!(
                    "keys must be an object of field configurations, not {other}"
                )))
            }
        }
        if line.is_none() && keys.is_empty() {
            return Err(index_invalid(
                "the index configures neither full-text (line) nor any key (keys)",
            ));
        }
        Ok(Index {
            config,
            line,
            keys,
            modified: now,
        })
    }

    /// GetIndex's answer: the configuration with the service's bookkeeping fields.
    pub(crate) fn answer(&self, ttl_days: u32) -> Value {
        let mut answer = self.config.clone();
        if let Some(object) = answer.as_object_mut() {
            object.insert("ttl".into(), ttl_days.into());
            object.insert("lastModifyTime".into(), self.modified.into());
            object
                .entry("index_mode")
                .or_insert_with(|| Value::from("v2"));
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_apply_what_is_given_and_refuse_what_the_service_refuses() {
        let mut s = LogstoreSettings::new(1);
        let body = json!({"ttl": 7, "autoSplit": false, "maxSplitShard": 8, "appendMeta": true});
        s.apply(body.as_object().unwrap(), 2).unwrap();
        assert_eq!(
            (
                s.ttl_days,
                s.auto_split,
                s.max_split_shard,
                s.append_meta,
                s.modified
            ),
            (7, false, 8, true, 2)
        );
        for (bad, names) in [
            (json!({"ttl": 0}), "ttl 0"),
            (json!({"ttl": 4000}), "ttl 4000"),
            (json!({"ttl": "x"}), "ttl must be"),
            (json!({"maxSplitShard": 1000}), "maxSplitShard 1000"),
            (json!({"autoSplit": "yes"}), "autoSplit"),
            (json!({"mode": "fast"}), "mode"),
        ] {
            let e = s.apply(bad.as_object().unwrap(), 3).unwrap_err();
            assert_eq!(e.code, "ParameterInvalid");
            assert!(e.message.contains(names), "{}", e.message);
        }
        assert_eq!(
            s.ttl_days, 7,
            "a refused body changes nothing it was refused for"
        );
    }

    #[test]
    fn an_index_parses_its_line_and_keys() {
        let index = Index::parse(
            json!({
                "line": {"token": [",", " "], "caseSensitive": false},
                "keys": {
                    "status": {"type": "long"},
                    "latency": {"type": "double"},
                    "path": {"type": "text", "token": ["/"], "caseSensitive": true},
                }
            }),
            5,
        )
        .unwrap();
        assert_eq!(index.line.as_ref().unwrap().separators, vec![',', ' ']);
        assert_eq!(index.keys["status"], KeyIndex::Long);
        assert_eq!(index.keys["latency"], KeyIndex::Double);
        let KeyIndex::Text(path) = &index.keys["path"] else {
            panic!("text")
        };
        assert!(path.case_sensitive);
        assert_eq!(path.words("/a/b c").collect::<Vec<_>>(), ["a", "b", "c"]);
        for bad in [
            json!([]),
            json!({}),
            json!({"keys": {"x": {"type": "geo"}}}),
            json!({"line": {"token": [1]}}),
            json!({"keys": []}),
        ] {
            assert_eq!(Index::parse(bad, 0).unwrap_err().code, "IndexInfoInvalid");
        }
    }
}
