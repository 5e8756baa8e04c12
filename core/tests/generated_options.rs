//! The files generated from the table of options (`core/src/producer/config/options.rs`):
//! `docs/configuration.md`, the `ProducerOptions` interface of `node/lib/index.d.ts` (between its
//! `BEGIN`/`END` markers) and `python/loghose/_options.py`. Each test renders a file from the
//! table and fails when the repository's copy differs; with `LOGHOSE_REGENERATE=1` it writes the
//! rendered file instead:
//!
//! ```text
//! LOGHOSE_REGENERATE=1 cargo test -p loghose --test generated_options
//! ```

use std::path::PathBuf;

use loghose::producer::bindings::{Front, OptionKind, OptionSpec, Unit, FRONT_OPTIONS, OPTIONS};
use loghose::producer::ProducerConfig;
use serde_json::Value;

const TABLE: &str = "core/src/producer/config/options.rs";
const REGENERATE: &str = "LOGHOSE_REGENERATE=1 cargo test -p loghose --test generated_options";
const TS_BEGIN: &str = "  // BEGIN options generated from the table of options\n";
const TS_END: &str = "  // END options generated from the table of options\n";

fn repository(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

/// Compares `rendered` with the repository's `path`, or writes it there when regenerating.
fn check(path: &str, rendered: &str) {
    let file = repository(path);
    if std::env::var_os("LOGHOSE_REGENERATE").is_some() {
        std::fs::write(&file, rendered).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&file).unwrap_or_default();
    if current != rendered {
        let line = current
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| current.lines().count().min(rendered.lines().count()));
        panic!(
            "{path} differs from what the table of options ({TABLE}) produces, from line {}; \
             run `{REGENERATE}` and commit the result",
            line + 1
        );
    }
}

/// The defaults, by option name, as the engine serializes them.
fn defaults() -> serde_json::Map<String, Value> {
    match serde_json::to_value(ProducerConfig::default()).unwrap() {
        Value::Object(map) => map,
        other => panic!("defaults are not an object: {other}"),
    }
}

fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` with every backticked engine option name spelt as Node spells it.
fn camel_names(text: &str) -> String {
    let mut out = text.to_owned();
    for option in OPTIONS {
        out = out.replace(
            &format!("`{}`", option.name),
            &format!("`{}`", camel(option.name)),
        );
    }
    out
}

/// A whole number with spaces between thousands from 10 000 on.
fn whole(n: u64) -> String {
    let digits = n.to_string();
    if n < 10_000 {
        return digits;
    }
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

fn amount(unit: Unit, n: u64) -> String {
    match unit {
        Unit::Count => whole(n),
        Unit::Milliseconds => {
            let spans = [
                (86_400_000, "days"),
                (3_600_000, "h"),
                (60_000, "min"),
                (1000, "s"),
            ];
            for (size, name) in spans {
                if n >= size.max(10_000) && n.is_multiple_of(size) {
                    return format!("{} {name}", whole(n / size));
                }
            }
            format!("{} ms", whole(n))
        }
        Unit::Bytes => {
            let units = ["PiB", "TiB", "GiB", "MiB", "KiB"];
            for (i, name) in units.iter().enumerate() {
                let size = 1u64 << (10 * (5 - i));
                if n >= size && n.is_multiple_of(size) {
                    return format!("{} {name}", whole(n / size));
                }
            }
            let plural = if n == 1 { "" } else { "s" };
            format!("{} byte{plural}", whole(n))
        }
    }
}

fn default_text(spec: &OptionSpec, defaults: &serde_json::Map<String, Value>) -> String {
    let value = &defaults[spec.name];
    match (spec.kind, value) {
        (OptionKind::Number { unit, .. }, Value::Number(n)) => amount(unit, n.as_u64().unwrap()),
        (_, Value::Null) => "none".into(),
        (_, Value::String(s)) if s.is_empty() => "empty".into(),
        (_, Value::String(s)) => format!("`{s}`"),
        (_, Value::Array(a)) if a.is_empty() => "none".into(),
        (_, other) => format!("`{other}`"),
    }
}

fn range_text(spec: &OptionSpec) -> String {
    match spec.kind {
        OptionKind::Text {
            required,
            max_bytes,
        } => {
            let mut parts = Vec::new();
            if required {
                parts.push("required".to_owned());
            }
            if max_bytes > 0 {
                parts.push(format!("up to {max_bytes} bytes"));
            }
            parts.join(", ")
        }
        OptionKind::OptionalText { max_bytes } if max_bytes > 0 => {
            format!("up to {max_bytes} bytes")
        }
        OptionKind::Name(kind) => {
            let rule = kind.rule();
            format!(
                "required, {}",
                rule.strip_prefix("must be ").unwrap_or(rule)
            )
        }
        OptionKind::Number {
            unit,
            min,
            max,
            at_least,
            power_of_two,
        } => {
            let span = format!("{} to {}", amount(unit, min), amount(unit, max));
            match (at_least, power_of_two) {
                (Some(other), _) => format!("{span}, at least `{other}`"),
                (None, true) => format!("a power of two, {span}"),
                (None, false) => span,
            }
        }
        OptionKind::Choice(words) => words
            .iter()
            .map(|w| format!("`{w}`"))
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    }
}

/// Whether a producer cannot start without the option.
fn required(spec: &OptionSpec) -> bool {
    matches!(
        spec.kind,
        OptionKind::Name(_) | OptionKind::Text { required: true, .. }
    )
}

fn one_line(doc: &str) -> String {
    doc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` wrapped at `width` columns, each line prefixed by `prefix`.
fn wrap(text: &str, prefix: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && prefix.len() + line.len() + 1 + word.len() > width {
            lines.push(format!("{prefix}{line}"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(format!("{prefix}{line}"));
    }
    lines
}

/// The doc, the default and the range, in one sentence-ended paragraph.
fn described(spec: &OptionSpec, defaults: &serde_json::Map<String, Value>) -> String {
    let mut text = one_line(spec.doc);
    if !required(spec) {
        text.push_str(&format!(" Default {}.", default_text(spec, defaults)));
    }
    let range = range_text(spec);
    // A choice's words are in its type.
    let range = match spec.kind {
        OptionKind::Choice(_) => String::new(),
        _ => range,
    };
    if !range.is_empty() {
        let mut range = range;
        if let Some(first) = range.get(..1) {
            range.replace_range(..1, &first.to_uppercase());
        }
        text.push_str(&format!(" {range}."));
    }
    text
}

fn type_name(spec: &OptionSpec) -> &'static str {
    match spec.kind {
        OptionKind::Text { .. } | OptionKind::Name(_) | OptionKind::Secret { .. } => "text",
        OptionKind::OptionalText { .. } => "text or none",
        OptionKind::Flag => "boolean",
        OptionKind::Number { unit, .. } => match unit {
            Unit::Bytes => "bytes",
            Unit::Milliseconds => "milliseconds",
            Unit::Count => "whole number",
        },
        OptionKind::Choice(_) => "word",
        OptionKind::Tags => "key/value pairs",
        OptionKind::Address => "host:port or none",
    }
}

fn typescript_type(spec: &OptionSpec) -> String {
    match spec.kind {
        OptionKind::Text { .. }
        | OptionKind::Name(_)
        | OptionKind::Secret { .. }
        | OptionKind::OptionalText { .. }
        | OptionKind::Address => "string".into(),
        OptionKind::Flag => "boolean".into(),
        OptionKind::Number { .. } => "number".into(),
        OptionKind::Choice(words) => words
            .iter()
            .map(|w| match w.split_once("<ms>") {
                Some((head, tail)) => format!("`{head}${{number}}{tail}`"),
                None => format!("'{w}'"),
            })
            .collect::<Vec<_>>()
            .join(" | "),
        OptionKind::Tags => "Record<string, string> | Array<[string, string]>".into(),
    }
}

fn python_type(spec: &OptionSpec) -> String {
    match spec.kind {
        OptionKind::Text { .. } | OptionKind::Name(_) => "str".into(),
        OptionKind::Secret { optional } if !optional => "str".into(),
        OptionKind::Secret { .. } | OptionKind::OptionalText { .. } => "str | None".into(),
        OptionKind::Flag => "bool".into(),
        OptionKind::Number { .. } => "int".into(),
        OptionKind::Choice(words) if words.iter().any(|w| w.contains('<')) => "str".into(),
        OptionKind::Choice(words) => format!(
            "Literal[{}]",
            words
                .iter()
                .map(|w| format!("\"{w}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        OptionKind::Tags => "Mapping[str, str] | Iterable[tuple[str, str]]".into(),
        OptionKind::Address => "str | tuple[str, int] | None".into(),
    }
}

fn markdown() -> String {
    let defaults = defaults();
    let mut out = format!(
        "# Configuration\n\n\
         <!-- Generated from the table of options ({TABLE}) by core/tests/generated_options.rs. \
         Edit the table, then run `{REGENERATE}`. -->\n\n\
         Every option of a producer, from one table in the engine. Python takes them as keyword \
         arguments of `Producer` (and `AsyncProducer`, `LoghoseHandler`, …), Node as the fields of \
         `ProducerOptions` in camelCase (`linger_ms` is `lingerMs`), Rust as the fields of \
         `ProducerConfig`, and the `loghose` command in its configuration file or as \
         `--option NAME=VALUE`. Every value is checked when the producer is built: an unknown \
         name, a wrong type or a value out of its range is a `ConfigError` naming the option \
         (with a \"did you mean\" for a misspelt name).\n\n\
         Presets (`Producer.from_preset`, `Producer.fromPreset`, `ProducerConfig::preset`, \
         `--preset`) set some of these first: `server` and `pi` ({}).\n\n\
         | Option | Node | Type | Default | Range | What it does |\n\
         |---|---|---|---|---|---|\n",
        presets()
    );
    for spec in OPTIONS {
        let range = range_text(spec);
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} | {} |\n",
            spec.name,
            camel(spec.name),
            type_name(spec),
            if required(spec) {
                "—".to_owned()
            } else {
                default_text(spec, &defaults)
            },
            range.replace('|', "\\|"),
            one_line(spec.doc).replace('|', "\\|"),
        ));
    }
    out.push_str(
        "\n## Options of one front\n\n\
         Taken by one front only, besides the table above.\n\n\
         | Front | Option | Type | Default | What it does |\n|---|---|---|---|---|\n",
    );
    for option in FRONT_OPTIONS {
        let front = match option.front {
            Front::Python => "Python",
            Front::Node => "Node",
        };
        out.push_str(&format!(
            "| {front} | `{}` | `{}` | {} | {} |\n",
            option.name,
            option.type_name.replace('|', "\\|"),
            option.default,
            one_line(option.doc).replace('|', "\\|"),
        ));
    }
    out
}

/// What each preset sets, as `name: option value, …`.
fn presets() -> String {
    ProducerConfig::PRESETS
        .iter()
        .map(|name| {
            let json = ProducerConfig::preset_options_json(name).unwrap();
            let Value::Object(changed) = serde_json::from_str(&json).unwrap() else {
                panic!("preset {name} is not an object");
            };
            let values = OPTIONS
                .iter()
                .filter(|spec| changed.contains_key(spec.name))
                .map(|spec| format!("`{}` {}", spec.name, default_text(spec, &changed)))
                .collect::<Vec<_>>()
                .join(", ");
            format!("`{name}`: {values}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn typescript_options() -> String {
    let defaults = defaults();
    let mut out = String::from(TS_BEGIN);
    for spec in OPTIONS {
        let doc = camel_names(&described(spec, &defaults));
        push_jsdoc(&mut out, &doc);
        let mark = if required(spec) { "" } else { "?" };
        out.push_str(&format!(
            "  {}{mark}: {}\n",
            camel(spec.name),
            typescript_type(spec)
        ));
    }
    for option in FRONT_OPTIONS.iter().filter(|o| o.front == Front::Node) {
        push_jsdoc(
            &mut out,
            &format!("{} Default {}.", one_line(option.doc), option.default),
        );
        out.push_str(&format!("  {}?: {}\n", option.name, option.type_name));
    }
    out.push_str(TS_END);
    out
}

fn push_jsdoc(out: &mut String, text: &str) {
    let lines = wrap(text, "", 100 - 6);
    if lines.len() == 1 {
        out.push_str(&format!("  /** {} */\n", lines[0]));
        return;
    }
    for (i, line) in lines.iter().enumerate() {
        let lead = if i == 0 { "  /** " } else { "   *  " };
        out.push_str(&format!("{lead}{line}\n"));
    }
    out.push_str("   */\n");
}

fn node_declarations() -> String {
    let path = repository("node/lib/index.d.ts");
    let current = std::fs::read_to_string(&path).unwrap();
    let (Some(begin), Some(end)) = (current.find(TS_BEGIN), current.find(TS_END)) else {
        panic!("node/lib/index.d.ts lacks the markers {TS_BEGIN:?} and {TS_END:?}");
    };
    format!(
        "{}{}{}",
        &current[..begin],
        typescript_options(),
        &current[end + TS_END.len()..]
    )
}

fn python_options() -> String {
    let defaults = defaults();
    let mut out = format!(
        "\"\"\"The producer's options as a typed dictionary, so a type checker catches a misspelt or\n\
         mistyped option (``Producer(lingr_ms=10)``, ``Producer(linger_ms=\"10\")``) before it runs.\n\n\
         Generated from the engine's table of options ({TABLE}) by\n\
         core/tests/generated_options.rs; edit the table, then run\n\
         ``{REGENERATE}``.\n\
         At run time the engine checks every value again and raises ``ConfigError`` naming the\n\
         option, its expected type and unit, with a \"did you mean\" for a misspelt name.\n\
         \"\"\"\n\n\
         from __future__ import annotations\n\n\
         from collections.abc import Iterable, Mapping\n\
         from typing import Literal, TypedDict\n\n\n\
         class ProducerOptions(TypedDict, total=False):\n    \
         \"\"\"Every option of a producer (all optional here; ``endpoint``, ``project`` and\n    \
         ``logstore`` are required by the engine; keys not given come from the default credential\n    \
         chain).\"\"\"\n"
    );
    for spec in OPTIONS {
        out.push('\n');
        for line in wrap(&described(spec, &defaults), "    #: ", 120) {
            out.push_str(&line);
            out.push('\n');
        }
        out.push_str(&format!("    {}: {}\n", spec.name, python_type(spec)));
    }
    out
}

#[test]
fn docs_configuration_is_what_the_table_produces() {
    check("docs/configuration.md", &markdown());
}

#[test]
fn node_producer_options_are_what_the_table_produces() {
    check("node/lib/index.d.ts", &node_declarations());
}

#[test]
fn python_producer_options_are_what_the_table_produces() {
    check("python/loghose/_options.py", &python_options());
}

#[test]
fn the_table_lists_every_option_the_engine_parses_in_order() {
    let names: Vec<&str> = OPTIONS.iter().map(|o| o.name).collect();
    let parsed = ProducerConfig::option_names();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    let mut parsed_sorted: Vec<&str> = parsed.iter().map(String::as_str).collect();
    parsed_sorted.sort_unstable();
    assert_eq!(sorted, parsed_sorted);
    assert!(OPTIONS.iter().all(|o| !o.doc.trim().is_empty()));
}
