//! The producer's configuration for `loghose send` and `loghose pipe`, from three places, the
//! nearer winning: command-line flags, then environment variables, then a configuration file.
//!
//! - The file: `--config FILE` (or `LOGHOSE_CONFIG`), else `$XDG_CONFIG_HOME/loghose/config.toml`
//!   or `~/.config/loghose/config.toml` (on Windows `%APPDATA%\loghose\config.toml`) when it
//!   exists. TOML, with the engine's option names
//!   (`endpoint`, `project`, `logstore`, `access_key_id`, `linger_ms`, …) and `preset`.
//! - The environment: `LOGHOSE_ENDPOINT`, `LOGHOSE_PROJECT`, `LOGHOSE_LOGSTORE`,
//!   `LOGHOSE_PRESET`, and the standard `ALIBABA_CLOUD_ACCESS_KEY_ID`,
//!   `ALIBABA_CLOUD_ACCESS_KEY_SECRET`, `ALIBABA_CLOUD_SECURITY_TOKEN`.
//! - Flags: the same names (`--endpoint`, …), and `--option NAME=VALUE` for any other option
//!   (the value read as JSON when it parses, else as text).
//!
//! The result goes through the engine's own parser ([`ProducerConfig::from_json`]), so every
//! error names the option and what it expects, exactly as the Python and Node fronts report.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::producer::{Producer, ProducerConfig};

/// Where the producer sends, and how: flags over environment over the configuration file.
// The fields' doc comments are the command's --help text, where a URL is plain text.
#[allow(rustdoc::bare_urls)]
#[derive(clap::Args, Debug, Default, Clone)]
pub struct ProducerArgs {
    /// Configuration file (TOML, the engine's option names); default
    /// ~/.config/loghose/config.toml when it exists.
    #[arg(long, env = "LOGHOSE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Option preset: `server` or `pi` (small buffers and batches for a small machine).
    #[arg(long, env = "LOGHOSE_PRESET")]
    pub preset: Option<String>,
    /// Service endpoint, e.g. https://cn-hangzhou.log.aliyuncs.com.
    #[arg(long, env = "LOGHOSE_ENDPOINT")]
    pub endpoint: Option<String>,
    /// Project.
    #[arg(long, env = "LOGHOSE_PROJECT")]
    pub project: Option<String>,
    /// Logstore.
    #[arg(long, env = "LOGHOSE_LOGSTORE")]
    pub logstore: Option<String>,
    /// AccessKey ID.
    #[arg(long, env = "ALIBABA_CLOUD_ACCESS_KEY_ID", hide_env_values = true)]
    pub access_key_id: Option<String>,
    /// AccessKey secret.
    #[arg(long, env = "ALIBABA_CLOUD_ACCESS_KEY_SECRET", hide_env_values = true)]
    pub access_key_secret: Option<String>,
    /// STS security token, with a temporary key.
    #[arg(long, env = "ALIBABA_CLOUD_SECURITY_TOKEN", hide_env_values = true)]
    pub security_token: Option<String>,
    /// The records' topic.
    #[arg(long)]
    pub topic: Option<String>,
    /// The records' source (default: this machine's address toward the endpoint).
    #[arg(long)]
    pub source: Option<String>,
    /// Any other producer option, as NAME=VALUE (repeatable), e.g. --option linger_ms=500.
    #[arg(long = "option", value_name = "NAME=VALUE")]
    pub options: Vec<String>,
}

/// Why no configuration could be made.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    /// The configuration file could not be read.
    #[error("cannot read the configuration file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The configuration file is not valid TOML, or not a table of options.
    #[error("configuration file {path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// `--option` without `=`.
    #[error("--option wants NAME=VALUE, got {0:?}")]
    OptionSyntax(String),
    /// The engine refused the options.
    #[error(transparent)]
    Config(#[from] crate::producer::ConfigError),
}

/// The configuration file used when none is named, if it exists.
fn default_config_file() -> Option<PathBuf> {
    let file = config_dir(&|name| std::env::var_os(name))?
        .join("loghose")
        .join("config.toml");
    file.is_file().then_some(file)
}

/// Where a user's configuration lives: `$XDG_CONFIG_HOME`, else on Windows `%APPDATA%` (the
/// roaming profile's folder), else `~/.config`.
fn config_dir(lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let set = |name: &str| lookup(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("XDG_CONFIG_HOME")
        .or_else(|| if cfg!(windows) { set("APPDATA") } else { None })
        .or_else(|| crate::credentials::sources::user_home(lookup).map(|h| h.join(".config")))
}

fn read_file(path: &Path) -> Result<Map<String, Value>, OptionsError> {
    let text = std::fs::read_to_string(path).map_err(|source| OptionsError::Read {
        path: path.to_owned(),
        source,
    })?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| OptionsError::File {
            path: path.to_owned(),
            message: e.message().to_owned(),
        })?;
    match serde_json::to_value(table) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(OptionsError::File {
            path: path.to_owned(),
            message: "expected a table of options".into(),
        }),
    }
}

impl ProducerArgs {
    /// The producer these options make over the command's own `defaults` (which a preset,
    /// the file, the environment and the flags all override); what is wrong is printed
    /// (prefixed with `command`) and answered as the usage exit status.
    pub fn producer(&self, command: &str, defaults: &[(&str, Value)]) -> Result<Producer, u8> {
        let built = self
            .resolve(defaults)
            .map_err(|e| e.to_string())
            .and_then(|config| Producer::new(config).map_err(|e| e.to_string()));
        built.map_err(|e| {
            eprintln!("{command}: {e}");
            super::EXIT_USAGE
        })
    }

    /// The producer configuration these flags, the environment and the file make, over
    /// `defaults`.
    pub fn resolve(&self, defaults: &[(&str, Value)]) -> Result<ProducerConfig, OptionsError> {
        let file = match &self.config {
            Some(path) => Some(read_file(path)?),
            None => default_config_file().map(|p| read_file(&p)).transpose()?,
        };
        let mut file = file.unwrap_or_default();
        let preset = match (&self.preset, file.remove("preset")) {
            (Some(p), _) => Some(p.clone()),
            (None, Some(Value::String(p))) => Some(p),
            (None, Some(other)) => {
                return Err(OptionsError::File {
                    path: self.config.clone().unwrap_or_default(),
                    message: format!("preset must be a string, got {other}"),
                })
            }
            (None, None) => None,
        };
        let mut merged: Map<String, Value> = defaults
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone()))
            .collect();
        if let Some(name) = &preset {
            if let Ok(Value::Object(map)) =
                serde_json::from_str(&ProducerConfig::preset_options_json(name)?)
            {
                merged.extend(map);
            }
        }
        merged.extend(file);
        let given = [
            ("endpoint", &self.endpoint),
            ("project", &self.project),
            ("logstore", &self.logstore),
            ("access_key_id", &self.access_key_id),
            ("access_key_secret", &self.access_key_secret),
            ("security_token", &self.security_token),
            ("topic", &self.topic),
            ("source", &self.source),
        ];
        for (name, value) in given {
            if let Some(v) = value {
                merged.insert(name.into(), Value::String(v.clone()));
            }
        }
        for option in &self.options {
            let (name, value) = option
                .split_once('=')
                .ok_or_else(|| OptionsError::OptionSyntax(option.clone()))?;
            let value =
                serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
            merged.insert(name.trim().to_owned(), value);
        }
        let config = ProducerConfig::from_json(&Value::Object(merged).to_string())?;
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    fn dir(pairs: &[(&str, &str)]) -> Option<PathBuf> {
        let map: HashMap<&str, OsString> =
            pairs.iter().map(|(k, v)| (*k, OsString::from(v))).collect();
        config_dir(&|name| map.get(name).cloned())
    }

    #[test]
    fn the_configuration_directory_is_the_platforms_own() {
        let home = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
        let everything = [
            ("XDG_CONFIG_HOME", "/xdg"),
            ("APPDATA", "/appdata"),
            (home, "/u"),
        ];
        assert_eq!(dir(&everything), Some("/xdg".into()));
        let expected = if cfg!(windows) {
            "/appdata"
        } else {
            "/u/.config"
        };
        assert_eq!(dir(&everything[1..]), Some(PathBuf::from(expected)));
        assert_eq!(
            dir(&[("XDG_CONFIG_HOME", ""), (home, "/u")]),
            Some(PathBuf::from("/u").join(".config"))
        );
        assert_eq!(dir(&[]), None);
    }
}
