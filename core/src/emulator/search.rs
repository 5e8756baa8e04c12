//! The search part of a GetLogs / GetHistograms query, as the service reads it: full-text
//! words and "phrases", `key: value`, a trailing `*` for a prefix, `and` / `or` / `not` (any
//! case) and parentheses, words side by side meaning `and`, comparisons (`>`, `>=`, `<`, `<=`,
//! `=`) on `long` and `double` fields, and the reserved keys `__topic__`, `__source__` and
//! `__tag__:<name>`. An analytic part (`| select …`) is refused by name: it is not emulated.
//!
//! A query is parsed once and checked against the logstore's index (a key searched must be
//! indexed, full-text words need the index's `line` part, comparisons a numeric key), then
//! matched log by log. Parsing is bounded (length and nesting) so that hostile queries get a
//! 400, never a deep recursion. Pure functions, run on the request's thread.

use super::catalog::{Index, KeyIndex, TextIndex};
use super::stored::StoredLog;

/// The longest query accepted, in bytes.
pub(crate) const MAX_QUERY_BYTES: usize = 16 * 1024;
/// The deepest nesting of parentheses and `not`s accepted.
const MAX_DEPTH: usize = 64;

/// Why a query was refused (the service answers 400 `ParameterInvalid` with it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct QueryError(pub(crate) String);

/// A field a term looks at.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Key {
    Field(String),
    Topic,
    Source,
    Tag(String),
}

/// What a term looks for in a text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Pattern {
    Word(String),
    Prefix(String),
    /// Words one after the other.
    Phrase(Vec<String>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Compare {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
}

/// A parsed search.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Query {
    All,
    Text {
        key: Option<Key>,
        pattern: Pattern,
    },
    Number {
        key: String,
        op: Compare,
        value: f64,
    },
    /// Every one (kept flat: a long query of words side by side is no deep tree).
    And(Vec<Query>),
    /// Any one.
    Or(Vec<Query>),
    Not(Box<Query>),
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Open,
    Close,
    Colon,
    Op(Compare),
    Word(String),
    Quoted(String),
}

fn tokens(text: &str) -> Result<Vec<Token>, QueryError> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '(' => out.push(Token::Open),
            ')' => out.push(Token::Close),
            ':' => out.push(Token::Colon),
            '|' => {
                return Err(QueryError(format!(
                    "the analytic part of the query ({:?}) is not emulated: the emulator answers \
                     searches only",
                    text[at..].trim()
                )))
            }
            '>' | '<' | '=' => {
                let or_equal = c != '=' && chars.next_if(|(_, n)| *n == '=').is_some();
                out.push(Token::Op(match (c, or_equal) {
                    ('>', false) => Compare::Gt,
                    ('>', true) => Compare::Ge,
                    ('<', false) => Compare::Lt,
                    ('<', true) => Compare::Le,
                    _ => Compare::Eq,
                }));
            }
            '"' => {
                let mut quoted = String::new();
                loop {
                    match chars.next() {
                        None => {
                            return Err(QueryError(format!(
                                "a quote opened at byte {at} is never closed"
                            )))
                        }
                        Some((_, '"')) => break,
                        Some((_, '\\')) => {
                            if let Some((_, escaped)) = chars.next() {
                                quoted.push(escaped);
                            }
                        }
                        Some((_, c)) => quoted.push(c),
                    }
                }
                out.push(Token::Quoted(quoted));
            }
            c => {
                let mut word = String::from(c);
                while let Some((_, n)) =
                    chars.next_if(|(_, n)| !n.is_whitespace() && !"()\":<>=|".contains(*n))
                {
                    word.push(n);
                }
                out.push(Token::Word(word));
            }
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
}

fn is_operator(token: Option<&Token>, name: &str) -> bool {
    matches!(token, Some(Token::Word(w)) if w.eq_ignore_ascii_case(name))
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn deeper(&mut self) -> Result<(), QueryError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(QueryError(format!(
                "the query nests deeper than {MAX_DEPTH} levels"
            )));
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Query, QueryError> {
        let mut any = vec![self.and()?];
        while is_operator(self.peek(), "or") {
            self.at += 1;
            any.push(self.and()?);
        }
        Ok(if any.len() == 1 {
            any.remove(0)
        } else {
            Query::Or(any)
        })
    }

    fn and(&mut self) -> Result<Query, QueryError> {
        let mut every = vec![self.not()?];
        loop {
            match self.peek() {
                None | Some(Token::Close) => break,
                t if is_operator(t, "or") => break,
                t if is_operator(t, "and") => self.at += 1,
                _ => {}
            }
            every.push(self.not()?);
        }
        Ok(if every.len() == 1 {
            every.remove(0)
        } else {
            Query::And(every)
        })
    }

    fn not(&mut self) -> Result<Query, QueryError> {
        if is_operator(self.peek(), "not") {
            self.at += 1;
            self.deeper()?;
            let inner = self.not()?;
            self.depth -= 1;
            return Ok(Query::Not(Box::new(inner)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Query, QueryError> {
        match self.next() {
            Some(Token::Open) => {
                self.deeper()?;
                let inner = self.or()?;
                self.depth -= 1;
                match self.next() {
                    Some(Token::Close) => Ok(inner),
                    _ => Err(QueryError("a parenthesis is never closed".into())),
                }
            }
            Some(Token::Word(w)) if w == "*" => Ok(Query::All),
            Some(Token::Word(w))
                if w.eq_ignore_ascii_case("and") || w.eq_ignore_ascii_case("or") =>
            {
                Err(QueryError(format!(
                    "the query has {w:?} where a word was expected (quote it to search the word)"
                )))
            }
            Some(Token::Word(w)) => self.after_word(w),
            Some(Token::Quoted(q)) => self.after_word_quoted(q),
            Some(other) => Err(QueryError(format!(
                "the query has {} where a word was expected",
                describe(&other)
            ))),
            None => Err(QueryError(
                "the query ends where a word was expected".into(),
            )),
        }
    }

    /// A word, maybe a key: `key: value`, `key > 3`, `__tag__:name: value`.
    fn after_word(&mut self, word: String) -> Result<Query, QueryError> {
        match self.peek() {
            Some(Token::Colon) => {
                self.at += 1;
                let key = if word == "__tag__" {
                    match (self.next(), self.next()) {
                        (Some(Token::Word(name)), Some(Token::Colon)) => Key::Tag(name),
                        _ => {
                            return Err(QueryError(
                                "a tag is searched as __tag__:<name>: <value>".into(),
                            ))
                        }
                    }
                } else {
                    reserved(word)
                };
                let pattern = match self.next() {
                    Some(Token::Word(w)) => pattern_of_word(&w),
                    Some(Token::Quoted(q)) => pattern_of_phrase(&q),
                    _ => {
                        return Err(QueryError(
                            "a key and its colon are not followed by a value".into(),
                        ))
                    }
                };
                Ok(Query::Text {
                    key: Some(key),
                    pattern,
                })
            }
            Some(Token::Op(op)) => {
                let op = *op;
                self.at += 1;
                let value = match self.next() {
                    Some(Token::Word(w)) => w.parse::<f64>().ok(),
                    _ => None,
                }
                .ok_or_else(|| QueryError(format!("{word} is compared with no number")))?;
                Ok(Query::Number {
                    key: word,
                    op,
                    value,
                })
            }
            _ => Ok(Query::Text {
                key: None,
                pattern: pattern_of_word(&word),
            }),
        }
    }

    fn after_word_quoted(&mut self, quoted: String) -> Result<Query, QueryError> {
        if matches!(self.peek(), Some(Token::Colon)) {
            // A quoted key (a name with spaces or separators).
            return self.after_word(quoted);
        }
        Ok(Query::Text {
            key: None,
            pattern: pattern_of_phrase(&quoted),
        })
    }
}

fn describe(token: &Token) -> String {
    match token {
        Token::Open => "'('".into(),
        Token::Close => "')'".into(),
        Token::Colon => "':'".into(),
        Token::Op(_) => "a comparison".into(),
        Token::Word(w) | Token::Quoted(w) => format!("{w:?}"),
    }
}

fn reserved(word: String) -> Key {
    match word.as_str() {
        "__topic__" => Key::Topic,
        "__source__" => Key::Source,
        _ => Key::Field(word),
    }
}

fn pattern_of_word(word: &str) -> Pattern {
    match word.strip_suffix('*') {
        Some(prefix) if !prefix.is_empty() => Pattern::Prefix(prefix.to_owned()),
        _ => Pattern::Word(word.to_owned()),
    }
}

fn pattern_of_phrase(text: &str) -> Pattern {
    let words: Vec<String> = TextIndex::default()
        .words(text)
        .map(str::to_owned)
        .collect();
    match words.len() {
        1 => pattern_of_word(&words[0]),
        _ => Pattern::Phrase(words),
    }
}

/// Parses a query's search part (empty: everything).
pub(crate) fn parse(text: &str) -> Result<Query, QueryError> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(QueryError(format!(
            "the query is {} bytes long; the emulator reads at most {MAX_QUERY_BYTES}",
            text.len()
        )));
    }
    let tokens = tokens(text)?;
    if tokens.is_empty() {
        return Ok(Query::All);
    }
    let mut parser = Parser {
        tokens,
        at: 0,
        depth: 0,
    };
    let query = parser.or()?;
    match parser.peek() {
        None => Ok(query),
        Some(t) => Err(QueryError(format!(
            "the query has {} where it should end",
            describe(t)
        ))),
    }
}

/// Checks that the index can answer `query`.
pub(crate) fn check(query: &Query, index: &Index) -> Result<(), QueryError> {
    match query {
        Query::All => Ok(()),
        Query::Text { key: None, .. } if index.line.is_none() => Err(QueryError(
            "full-text search needs the index's line part (only keys are indexed): search key: \
             value, or add a line index"
                .into(),
        )),
        Query::Text {
            key: Some(Key::Field(name)),
            ..
        } if !index.keys.contains_key(name) => Err(QueryError(format!(
            "key {name} is not indexed (indexed keys: {})",
            index.keys.keys().cloned().collect::<Vec<_>>().join(", ")
        ))),
        Query::Text { .. } => Ok(()),
        Query::Number { key, .. } => match index.keys.get(key) {
            Some(KeyIndex::Long | KeyIndex::Double) => Ok(()),
            Some(KeyIndex::Text(_)) => Err(QueryError(format!(
                "key {key} is indexed as text: comparisons need a long or double index"
            ))),
            None => Err(QueryError(format!("key {key} is not indexed"))),
        },
        Query::And(all) | Query::Or(all) => all.iter().try_for_each(|q| check(q, index)),
        Query::Not(a) => check(a, index),
    }
}

fn word_matches(text_index: &TextIndex, word: &str, pattern: &Pattern) -> bool {
    let same = |a: &str, b: &str| {
        if text_index.case_sensitive {
            a == b
        } else {
            a.eq_ignore_ascii_case(b) || a.to_lowercase() == b.to_lowercase()
        }
    };
    match pattern {
        Pattern::Word(w) => same(word, w),
        Pattern::Prefix(p) => {
            word.len() >= p.len() && word.is_char_boundary(p.len()) && same(&word[..p.len()], p)
        }
        Pattern::Phrase(_) => false,
    }
}

fn text_matches(text_index: &TextIndex, text: &str, pattern: &Pattern) -> bool {
    match pattern {
        Pattern::Phrase(phrase) => {
            let words: Vec<&str> = text_index.words(text).collect();
            words.windows(phrase.len()).any(|w| {
                w.iter()
                    .zip(phrase)
                    .all(|(a, b)| word_matches(text_index, a, &Pattern::Word(b.clone())))
            })
        }
        _ => text_index
            .words(text)
            .any(|w| word_matches(text_index, w, pattern)),
    }
}

/// Whether `log` matches `query` (checked against `index` first).
pub(crate) fn matches(query: &Query, index: &Index, log: &StoredLog) -> bool {
    match query {
        Query::All => true,
        Query::Text { key: None, pattern } => {
            let Some(line) = &index.line else {
                return false;
            };
            log.contents
                .iter()
                .any(|(_, v)| text_matches(line, v, pattern))
        }
        Query::Text {
            key: Some(key),
            pattern,
        } => {
            let default = TextIndex::default();
            match key {
                Key::Topic => log
                    .topic
                    .as_deref()
                    .is_some_and(|t| text_matches(&default, t, pattern)),
                Key::Source => log
                    .source
                    .as_deref()
                    .is_some_and(|s| text_matches(&default, s, pattern)),
                Key::Tag(name) => log
                    .tag(name)
                    .is_some_and(|t| text_matches(&default, t, pattern)),
                Key::Field(name) => {
                    let values = log.contents.iter().filter(|(k, _)| k == name);
                    match index.keys.get(name) {
                        Some(KeyIndex::Text(text_index)) => values
                            .into_iter()
                            .any(|(_, v)| text_matches(text_index, v, pattern)),
                        Some(KeyIndex::Long | KeyIndex::Double) => {
                            let Pattern::Word(w) = pattern else {
                                return false;
                            };
                            let Ok(wanted) = w.parse::<f64>() else {
                                return false;
                            };
                            values
                                .into_iter()
                                .any(|(_, v)| v.trim().parse::<f64>() == Ok(wanted))
                        }
                        None => false,
                    }
                }
            }
        }
        Query::Number { key, op, value } => log
            .contents
            .iter()
            .filter(|(k, _)| k == key)
            .filter_map(|(_, v)| v.trim().parse::<f64>().ok())
            .any(|n| match op {
                Compare::Gt => n > *value,
                Compare::Ge => n >= *value,
                Compare::Lt => n < *value,
                Compare::Le => n <= *value,
                Compare::Eq => n == *value,
            }),
        Query::And(all) => all.iter().all(|q| matches(q, index, log)),
        Query::Or(any) => any.iter().any(|q| matches(q, index, log)),
        Query::Not(a) => !matches(a, index, log),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn index() -> Index {
        Index::parse(
            json!({
                "line": {"token": [",", " ", ";", "=", "/"]},
                "keys": {
                    "level": {"type": "text"},
                    "path": {"type": "text", "token": ["/"]},
                    "status": {"type": "long"},
                    "latency": {"type": "double"},
                    "msg": {"type": "text", "caseSensitive": true},
                }
            }),
            0,
        )
        .unwrap()
    }

    fn log(fields: &[(&str, &str)]) -> StoredLog {
        StoredLog {
            shard: 0,
            time: 100,
            time_ns: None,
            topic: Some("web".into()),
            source: Some("10.0.0.7".into()),
            tags: vec![("__path__".into(), "/var/log/app.log".into())],
            contents: fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn hits(query: &str, log: &StoredLog) -> bool {
        let index = index();
        let q = parse(query).unwrap_or_else(|e| panic!("{query}: {e:?}"));
        check(&q, &index).unwrap_or_else(|e| panic!("{query}: {e:?}"));
        matches(&q, &index, log)
    }

    #[test]
    fn searches_match_as_the_service_reads_them() {
        let l = log(&[
            ("level", "ERROR"),
            ("path", "/api/v1/orders"),
            ("status", "503"),
            ("latency", "12.5"),
            ("msg", "Payment declined for order 42"),
        ]);
        for (query, want) in [
            ("", true),
            ("*", true),
            ("error", true),
            ("ERROR and orders", true),
            ("error orders", true),
            ("error and missing", false),
            ("missing or declined", true),
            ("missing or absent", false),
            ("missing or Payment", true),
            ("not error", false),
            ("not (missing or warn)", true),
            ("NOT missing AND error", true),
            ("level: error", true),
            ("level: warn", false),
            ("path: orders", true),
            ("path: ord*", true),
            ("path: x*", false),
            ("status > 500", true),
            ("status >= 503 and status <= 503", true),
            ("status < 500", false),
            ("status: 503", true),
            ("status = 503", true),
            ("latency > 12.4 and latency < 12.6", true),
            ("msg: Payment", true),
            ("msg: payment", false),
            ("\"declined for order\"", true),
            ("\"order for declined\"", false),
            ("msg: \"declined for\"", true),
            ("__topic__: web", true),
            ("__topic__: db", false),
            ("__source__: 10.0.0.7", true),
            ("__tag__:__path__: \"/var/log/app.log\"", true),
            ("__tag__:__path__: other", false),
            ("(level: error or level: warn) and status > 499", true),
        ] {
            assert_eq!(hits(query, &l), want, "{query}");
        }
    }

    #[test]
    fn what_the_index_cannot_answer_is_refused_naming_it() {
        let index = index();
        for (query, names) in [
            ("user: bob", "key user is not indexed"),
            ("level > 3", "indexed as text"),
            ("missing > 3", "key missing is not indexed"),
        ] {
            let e = check(&parse(query).unwrap(), &index).unwrap_err();
            assert!(e.0.contains(names), "{query}: {}", e.0);
        }
        let keys_only = Index::parse(json!({"keys": {"level": {"type": "text"}}}), 0).unwrap();
        let e = check(&parse("error").unwrap(), &keys_only).unwrap_err();
        assert!(e.0.contains("line"), "{}", e.0);
    }

    #[test]
    fn bad_queries_are_refused_with_a_reason_never_a_panic() {
        for (query, names) in [
            ("* | select count(*)", "analytic part"),
            ("(error", "never closed"),
            ("error)", "where it should end"),
            ("\"open", "never closed"),
            ("status >", "no number"),
            ("level:", "not followed by a value"),
            ("and", "where a word was expected"),
            ("__tag__:x", "__tag__:<name>"),
        ] {
            let e = parse(query).unwrap_err();
            assert!(e.0.contains(names), "{query}: {}", e.0);
        }
        let deep = "(".repeat(1_000) + "x" + &")".repeat(1_000);
        assert!(parse(&deep).unwrap_err().0.contains("nests deeper"));
        let nots = "not ".repeat(1_000) + "x";
        assert!(parse(&nots).unwrap_err().0.contains("nests deeper"));
        assert!(parse(&"x ".repeat(10_000))
            .unwrap_err()
            .0
            .contains("bytes long"));
        // Words side by side up to the length limit make a flat query, not a deep one.
        let words = "x ".repeat(MAX_QUERY_BYTES / 2 - 1);
        let Query::And(all) = parse(&words).unwrap() else {
            panic!("an and of every word")
        };
        assert_eq!(all.len(), MAX_QUERY_BYTES / 2 - 1);
    }
}
