//! What the table of options says about each option: its kind (type, unit, range), which
//! fronts take it, its documentation. [`ProducerConfig`](super::ProducerConfig) is generated
//! from the table by [`producer_options!`]; validation reads the ranges from it, and the
//! generated files (`docs/configuration.md`, the `ProducerOptions` of `node/lib/index.d.ts` and
//! `python/loghose/_options.py`) are rendered from it by `core/tests/generated_options.rs`,
//! which fails when a file in the repository differs from what the table produces.
//!
//! Plain data, read on whichever thread validates a configuration; nothing here allocates.

/// The unit of a whole-number option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes (the name ends in `_bytes`).
    Bytes,
    /// Milliseconds (the name ends in `_ms`).
    Milliseconds,
    /// A count of things.
    Count,
}

/// What values an option takes, as every front spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// Text of at most `max_bytes` bytes (0: no limit of its own); `required` when a producer
    /// cannot start without it.
    Text {
        /// Needed to start a producer.
        required: bool,
        /// Longest value in bytes, 0 for no limit of its own.
        max_bytes: usize,
    },
    /// Text, or nothing (the default).
    OptionalText {
        /// Longest value in bytes, 0 for no limit of its own.
        max_bytes: usize,
    },
    /// A credential: text never shown in an error message.
    Secret {
        /// Absent by default (`None`) rather than empty.
        optional: bool,
    },
    /// A project or logstore name, checked against the service's naming rule.
    Name(crate::wire::names::NameKind),
    /// `true` or `false`.
    Flag,
    /// A whole number in `unit` from `min` (or the value of the option `at_least`, when
    /// larger) to `max`; `power_of_two` when only powers of two are taken.
    Number {
        /// The unit.
        unit: Unit,
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
        /// Another option this one must be at least.
        at_least: Option<&'static str>,
        /// Only powers of two.
        power_of_two: bool,
    },
    /// One of these words. A word with `<ms>` in it stands for a family (`interval:<ms>`).
    Choice(&'static [&'static str]),
    /// `(key, value)` pairs added to every group.
    Tags,
    /// A socket address, `host:port`, or nothing.
    Address,
}

impl OptionKind {
    /// A whole number in `unit` from `min` to `max`.
    pub const fn number(unit: Unit, min: u64, max: u64) -> OptionKind {
        OptionKind::Number {
            unit,
            min,
            max,
            at_least: None,
            power_of_two: false,
        }
    }
}

/// One option of the engine: what `producer_options!` records of each field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionSpec {
    /// The engine's (Rust, Python, the command's configuration file) name; Node spells it in
    /// camelCase.
    pub name: &'static str,
    /// Its values.
    pub kind: OptionKind,
    /// Its documentation (the field's doc comment), the same in every front.
    pub doc: &'static str,
}

/// A front that takes an option of its own (it is not the engine's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Front {
    /// The Python package (a keyword argument of `Producer`).
    Python,
    /// The Node package (a field of `ProducerOptions`).
    Node,
}

/// An option one front takes besides the engine's: how that front names and types it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrontOption {
    /// Which front.
    pub front: Front,
    /// Its name there.
    pub name: &'static str,
    /// Its type, in that front's type language.
    pub type_name: &'static str,
    /// Its default, as text.
    pub default: &'static str,
    /// Its documentation.
    pub doc: &'static str,
}

/// A field's value as the table checks it: whole numbers only.
pub(super) trait OptionValue {
    fn as_number(&self) -> Option<u64> {
        None
    }
    fn as_text(&self) -> Option<&str> {
        None
    }
}

macro_rules! whole_numbers {
    ($($t:ty),*) => {$(
        impl OptionValue for $t {
            fn as_number(&self) -> Option<u64> {
                u64::try_from(*self).ok()
            }
        }
    )*};
}
whole_numbers!(u32, u64, usize);

impl OptionValue for String {
    fn as_text(&self) -> Option<&str> {
        Some(self)
    }
}

impl OptionValue for Option<String> {
    fn as_text(&self) -> Option<&str> {
        self.as_deref()
    }
}

impl OptionValue for bool {}
impl OptionValue for Vec<(String, String)> {}
impl OptionValue for Option<std::net::SocketAddr> {}
impl OptionValue for crate::wire::compress::Compression {}
impl OptionValue for crate::wire::keys::KeyPolicy {}
impl OptionValue for super::values::SignatureVersion {}
impl OptionValue for super::values::ConcurrencyMode {}
impl OptionValue for super::values::TimePrecision {}
impl OptionValue for super::values::SpoolSync {}

/// Generates [`ProducerConfig`](super::ProducerConfig) (fields, doc comments, `Default`), the
/// table [`OPTIONS`](super::OPTIONS) and the accessor validation reads values through, from
/// one list: `doc comment, name: type = default, kind;` per option.
macro_rules! producer_options {
    ($(
        $(#[doc = $doc:literal])+
        $name:ident : $ty:ty = $default:expr, $kind:expr;
    )+) => {
        /// Every option of a producer. Build one with `ProducerConfig::new(endpoint, project,
        /// logstore)` or a preset, adjust fields, and hand it to `Producer::new`. Defaults,
        /// units and ranges: [`OPTIONS`] (and `docs/configuration.md`, generated from it).
        #[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct ProducerConfig {
            $(
                $(#[doc = $doc])+
                pub $name: $ty,
            )+
        }

        impl Default for ProducerConfig {
            fn default() -> Self {
                ProducerConfig { $($name: $default,)+ }
            }
        }

        /// The table of the engine's options, in the order of [`ProducerConfig`]'s fields.
        pub const OPTIONS: &[OptionSpec] = &[$(
            OptionSpec {
                name: stringify!($name),
                kind: $kind,
                doc: concat!($($doc, "\n"),+),
            },
        )+];

        impl ProducerConfig {
            /// Each option's value as the table checks it, in the order of [`OPTIONS`].
            pub(super) fn table_values(&self) -> Vec<&dyn spec::OptionValue> {
                vec![$(&self.$name as &dyn spec::OptionValue),+]
            }
        }
    };
}
pub(super) use producer_options;
