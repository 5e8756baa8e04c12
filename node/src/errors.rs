//! Errors as the facade's classes, made here: the facade hands its classes (`LoghoseError`
//! and its subclasses, and `TypeError`) to [`use_error_classes`] once per environment (the
//! main thread and each worker load the package anew), and every error the addon raises is an
//! instance of its class, with `code` set to the class's name, built by calling that class.
//! Nothing is encoded in the message, and nothing in JavaScript converts errors afterwards.
//!
//! Runs on the JavaScript thread of the environment it raises in. An environment whose
//! classes were never handed over (the addon loaded without the facade) gets plain `Error`s
//! with the same `code`.

use loghose::emulator::EmbeddedError;
use loghose::producer::{ErrorKind, ProducerError};
use napi::bindgen_prelude::{Function, JsObjectValue, Object, ObjectRef, Unknown};
use napi::{Env, Error, JsValue, Result, Status};
use napi_derive::napi;

/// The facade's classes of this environment.
struct ErrorClasses(ObjectRef<false>);

/// Hands the facade's error classes to the addon for this environment: an object whose
/// properties are the classes, by name (`ConfigError`, …, `LoghoseError`, `TypeError`).
#[napi(ts_args_type = "classes: Record<string, new (message: string) => Error>")]
#[cfg_attr(test, allow(dead_code))]
pub(crate) fn use_error_classes(env: Env, classes: Object) -> Result<()> {
    let reference = classes.create_ref::<false>()?;
    // The reference lives as long as the environment; Node releases what it refers to with
    // the environment itself.
    env.set_instance_data(ErrorClasses(reference), (), |_| {})
}

/// An error on its way to JavaScript: the facade's class and the message. Made anywhere
/// (engine threads included); raised on the JavaScript thread by [`Raised::into_js`].
#[derive(Debug)]
pub(crate) struct Raised {
    class: &'static str,
    message: String,
}

impl Raised {
    pub(crate) fn new(class: &'static str, message: impl std::fmt::Display) -> Raised {
        Raised {
            class,
            message: message.to_string(),
        }
    }

    /// A `TypeError` (a value of the wrong type, as JavaScript's own functions raise).
    pub(crate) fn type_error(message: impl std::fmt::Display) -> Raised {
        Raised::new("TypeError", message)
    }

    /// The same error with `prefix` before its message.
    pub(crate) fn prefixed(self, prefix: impl std::fmt::Display) -> Raised {
        Raised {
            class: self.class,
            message: format!("{prefix}{}", self.message),
        }
    }

    /// The error as an instance of its class in `env`, ready to be thrown.
    pub(crate) fn into_js(self, env: &Env) -> Error {
        match instance(env, self.class, &self.message) {
            Ok(error) => error,
            Err(_) => Error::new(Status::GenericFailure, self.message),
        }
    }
}

impl From<ProducerError> for Raised {
    fn from(e: ProducerError) -> Raised {
        let kind = e.kind();
        let message = e.to_string();
        // The engine names options as Rust spells them (`linger_ms`); JavaScript callers
        // gave them in camelCase (`lingerMs`).
        let message = match kind {
            ErrorKind::Config | ErrorKind::SpoolLocked => camel_case_names(&message),
            _ => message,
        };
        Raised::new(kind.class_name(), message)
    }
}

impl From<loghose::producer::ConfigError> for Raised {
    fn from(e: loghose::producer::ConfigError) -> Raised {
        Raised::from(ProducerError::from(e))
    }
}

impl From<EmbeddedError> for Raised {
    fn from(e: EmbeddedError) -> Raised {
        let class = e.kind().class_name();
        Raised::new(class, e)
    }
}

/// `Err(e)` of a [`Raised`] result, raised in `env`.
pub(crate) trait RaiseIn<T> {
    fn raise_in(self, env: &Env) -> Result<T>;
}

impl<T, E: Into<Raised>> RaiseIn<T> for std::result::Result<T, E> {
    fn raise_in(self, env: &Env) -> Result<T> {
        self.map_err(|e| e.into().into_js(env))
    }
}

fn instance(env: &Env, class: &str, message: &str) -> Result<Error> {
    let classes = match env.get_instance_data::<ErrorClasses>()? {
        Some(classes) => Some(classes.0.get_value(env)?),
        None => None,
    };
    let own = classes.and_then(|c| {
        c.get_named_property::<Function<String, Unknown>>(class)
            .ok()
    });
    let constructor = match own {
        Some(constructor) => constructor,
        None => env
            .get_global()?
            .get_named_property::<Function<String, Unknown>>("Error")?,
    };
    let error = constructor.new_instance(message.to_owned())?;
    if class != "TypeError" {
        // What a constructor returns is an object.
        let mut object = Object::from_raw(env.raw(), error.raw());
        object.set_named_property("code", class)?;
    }
    Ok(Error::from(error))
}

/// `text` with each backticked snake_case name (`` `linger_ms` ``) in camelCase.
pub(crate) fn camel_case_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        out.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        let Some(close) = rest.find('`') else {
            break;
        };
        let name = &rest[..close];
        let snake = name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if snake {
            let mut upper = false;
            for c in name.chars() {
                match (c, upper) {
                    ('_', _) => upper = true,
                    (c, true) => {
                        out.push(c.to_ascii_uppercase());
                        upper = false;
                    }
                    (c, false) => out.push(c),
                }
            }
        } else {
            out.push_str(name);
        }
        out.push('`');
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_names_in_messages_are_spelt_as_javascript_spells_them() {
        assert_eq!(
            camel_case_names("`lingr_ms`: unknown option; did you mean `linger_ms`?"),
            "`lingrMs`: unknown option; did you mean `lingerMs`?"
        );
        assert_eq!(
            camel_case_names("`Name` and `__topic__` and `a b` stay; `x2_y` → `x2Y`"),
            "`Name` and `__topic__` and `a b` stay; `x2Y` → `x2Y`"
        );
        assert_eq!(camel_case_names("open `tail"), "open `tail");
    }
}
