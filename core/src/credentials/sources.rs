//! The sources of the default credential chain and how each is read from the environment and
//! the files: which variables, which file, which profile, which endpoint.
//!
//! Nothing here touches the network. [`plan`] reads the environment once (when a producer is
//! built) into the ordered list of sources the chain will ask; a profile file is read again on
//! each fetch, so a file written after the producer started is found. Errors are sentences
//! that name the variable, file or profile at fault and never a secret.

use std::path::PathBuf;

use crate::wire::sign::Credentials;

/// The default STS lifetime asked for, in seconds (the vendor's default).
pub(crate) const STS_DURATION_SECS: u64 = 3600;
/// The ECS metadata service.
pub(crate) const ECS_METADATA_ENDPOINT: &str = "http://100.100.100.200";

/// The variables the chain reads (also for the docs and the error messages).
pub(crate) mod var {
    pub(crate) const ACCESS_KEY_ID: &str = "ALIBABA_CLOUD_ACCESS_KEY_ID";
    pub(crate) const ROLE_ARN: &str = "ALIBABA_CLOUD_ROLE_ARN";
    pub(crate) const OIDC_PROVIDER_ARN: &str = "ALIBABA_CLOUD_OIDC_PROVIDER_ARN";
    pub(crate) const OIDC_TOKEN_FILE: &str = "ALIBABA_CLOUD_OIDC_TOKEN_FILE";
    pub(crate) const ROLE_SESSION_NAME: &str = "ALIBABA_CLOUD_ROLE_SESSION_NAME";
    pub(crate) const STS_REGION: &str = "ALIBABA_CLOUD_STS_REGION";
    pub(crate) const VPC_ENDPOINT_ENABLED: &str = "ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED";
    pub(crate) const CLI_PROFILE_DISABLED: &str = "ALIBABA_CLOUD_CLI_PROFILE_DISABLED";
    pub(crate) const PROFILE: &str = "ALIBABA_CLOUD_PROFILE";
    pub(crate) const CREDENTIALS_FILE: &str = "ALIBABA_CLOUD_CREDENTIALS_FILE";
    pub(crate) const ECS_METADATA: &str = "ALIBABA_CLOUD_ECS_METADATA";
    pub(crate) const ECS_METADATA_DISABLED: &str = "ALIBABA_CLOUD_ECS_METADATA_DISABLED";
    pub(crate) const IMDSV1_DISABLED: &str = "ALIBABA_CLOUD_IMDSV1_DISABLED";
    pub(crate) const CREDENTIALS_URI: &str = "ALIBABA_CLOUD_CREDENTIALS_URI";
    /// loghose's own: where STS is (the emulator, a proxy); wins over the region variables.
    pub(crate) const STS_ENDPOINT: &str = "LOGHOSE_STS_ENDPOINT";
    /// loghose's own: where the ECS metadata service is (the emulator).
    pub(crate) const ECS_METADATA_ENDPOINT: &str = "LOGHOSE_ECS_METADATA_ENDPOINT";
}

/// Reads variables: the process environment, or a table in tests.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The user's home directory, where the official SDKs look for `.aliyun` and `.alibabacloud`:
/// `HOME` on Unix; on Windows `USERPROFILE` first (`HOME` is usually unset there, or set by a
/// Unix-like shell to another place), then `HOME`. Unset or empty: none (the profile sources
/// are skipped and say so).
pub(crate) fn user_home(lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let names: &[&str] = if cfg!(windows) {
        &["USERPROFILE", "HOME"]
    } else {
        &["HOME"]
    };
    names
        .iter()
        .filter_map(|name| lookup(name))
        .find(|value| !value.is_empty())
        .map(PathBuf::from)
}

fn non_empty(lookup: Lookup<'_>, name: &str) -> Option<String> {
    lookup(name).filter(|v| !v.is_empty())
}

fn is_true(lookup: Lookup<'_>, name: &str) -> bool {
    lookup(name).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// `AssumeRoleWithOIDC`: a role taken with a token file (ACK's RRSA).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OidcRole {
    pub role_arn: String,
    pub provider_arn: String,
    pub token_file: PathBuf,
    pub session_name: String,
    pub policy: Option<String>,
    /// `scheme://host[:port]`.
    pub sts_endpoint: String,
}

/// `AssumeRole`: a RAM role taken with a permanent key, the request signed with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RamRole {
    pub key: Credentials,
    pub role_arn: String,
    pub session_name: String,
    pub duration_secs: u64,
    pub policy: Option<String>,
    pub external_id: Option<String>,
    /// `scheme://host[:port]`.
    pub sts_endpoint: String,
}

/// An ECS instance's RAM role, from the metadata service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EcsRole {
    /// The role; asked of the service when not given.
    pub role_name: Option<String>,
    pub endpoint: String,
    /// No fallback to requests without a metadata token.
    pub imds_v1_disabled: bool,
}

/// What one source (or one profile) stands for once read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Leaf {
    Static(Credentials),
    Oidc(OidcRole),
    Ram(RamRole),
    Ecs(EcsRole),
    Uri(String),
}

/// One step of the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    Oidc(OidcRole),
    /// The Alibaba Cloud CLI's `config.json`.
    CliProfile {
        path: PathBuf,
        profile: Option<String>,
        ctx: Context,
    },
    /// The shared `credentials.ini`.
    ProfileFile {
        path: PathBuf,
        section: String,
        ctx: Context,
    },
    Ecs(EcsRole),
    Uri(String),
}

/// What a profile's roles need from the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Context {
    sts_endpoint: String,
    session_name: String,
    ecs_endpoint: String,
    imds_v1_disabled: bool,
}

impl Source {
    /// How errors name it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Source::Oidc(_) => "OIDC role",
            Source::CliProfile { .. } => "CLI profile",
            Source::ProfileFile { .. } => "profile file",
            Source::Ecs(_) => "ECS instance role",
            Source::Uri(_) => "credentials URI",
        }
    }

    /// Whether it is there without asking a service: a source the user set up.
    pub(crate) fn is_configured(&self) -> bool {
        match self {
            Source::Oidc(_) | Source::Uri(_) => true,
            Source::CliProfile { path, .. } | Source::ProfileFile { path, .. } => path.is_file(),
            Source::Ecs(_) => false,
        }
    }

    /// What to fetch, read now (a profile file is read each time).
    pub(crate) fn leaf(&self) -> Result<Leaf, String> {
        match self {
            Source::Oidc(role) => Ok(Leaf::Oidc(role.clone())),
            Source::Ecs(role) => Ok(Leaf::Ecs(role.clone())),
            Source::Uri(uri) => Ok(Leaf::Uri(uri.clone())),
            Source::CliProfile { path, profile, ctx } => cli_profile(path, profile.as_deref(), ctx),
            Source::ProfileFile { path, section, ctx } => profile_file(path, section, ctx),
        }
    }
}

/// The chain after the environment's keys (which the caller has looked at already): the
/// vendor's order, with the sources the environment turns off left out. Also returns why each
/// left-out source was skipped, for the error that lists them all.
pub(crate) fn plan(lookup: Lookup<'_>, home: Option<PathBuf>) -> (Vec<Source>, Vec<String>) {
    let mut sources = Vec::new();
    let mut skipped = vec![format!("environment: {} is not set", var::ACCESS_KEY_ID)];
    let ctx = Context {
        sts_endpoint: sts_endpoint(lookup),
        session_name: non_empty(lookup, var::ROLE_SESSION_NAME).unwrap_or_else(default_session),
        ecs_endpoint: non_empty(lookup, var::ECS_METADATA_ENDPOINT)
            .unwrap_or_else(|| ECS_METADATA_ENDPOINT.into()),
        imds_v1_disabled: is_true(lookup, var::IMDSV1_DISABLED),
    };
    let oidc = [var::ROLE_ARN, var::OIDC_PROVIDER_ARN, var::OIDC_TOKEN_FILE]
        .map(|name| non_empty(lookup, name));
    match oidc {
        [Some(role_arn), Some(provider_arn), Some(token_file)] => {
            sources.push(Source::Oidc(OidcRole {
                role_arn,
                provider_arn,
                token_file: token_file.into(),
                session_name: ctx.session_name.clone(),
                policy: None,
                sts_endpoint: ctx.sts_endpoint.clone(),
            }))
        }
        _ => skipped.push(format!(
            "OIDC role: {}, {} and {} are not all set",
            var::ROLE_ARN,
            var::OIDC_PROVIDER_ARN,
            var::OIDC_TOKEN_FILE
        )),
    }
    let profile = non_empty(lookup, var::PROFILE);
    if is_true(lookup, var::CLI_PROFILE_DISABLED) {
        skipped.push(format!(
            "CLI profile: {} is true",
            var::CLI_PROFILE_DISABLED
        ));
    } else if let Some(home) = &home {
        sources.push(Source::CliProfile {
            path: home.join(".aliyun").join("config.json"),
            profile: profile.clone(),
            ctx: ctx.clone(),
        });
    } else {
        skipped.push("CLI profile: no home directory".into());
    }
    let file = non_empty(lookup, var::CREDENTIALS_FILE)
        .map(PathBuf::from)
        .or_else(|| {
            home.as_ref()
                .map(|h| h.join(".alibabacloud").join("credentials.ini"))
        });
    match file {
        Some(path) => sources.push(Source::ProfileFile {
            path,
            section: profile.unwrap_or_else(|| "default".into()),
            ctx: ctx.clone(),
        }),
        None => skipped.push("profile file: no home directory".into()),
    }
    if is_true(lookup, var::ECS_METADATA_DISABLED) {
        skipped.push(format!(
            "ECS instance role: {} is true",
            var::ECS_METADATA_DISABLED
        ));
    } else {
        sources.push(Source::Ecs(EcsRole {
            role_name: non_empty(lookup, var::ECS_METADATA),
            endpoint: ctx.ecs_endpoint.clone(),
            imds_v1_disabled: ctx.imds_v1_disabled,
        }));
    }
    match non_empty(lookup, var::CREDENTIALS_URI) {
        Some(uri) => sources.push(Source::Uri(uri)),
        None => skipped.push(format!(
            "credentials URI: {} is not set",
            var::CREDENTIALS_URI
        )),
    }
    (sources, skipped)
}

/// `https://sts.aliyuncs.com`, or the region's (VPC) endpoint, or loghose's override.
fn sts_endpoint(lookup: Lookup<'_>) -> String {
    if let Some(e) = non_empty(lookup, var::STS_ENDPOINT) {
        return with_scheme(&e, "https");
    }
    let prefix = if is_true(lookup, var::VPC_ENDPOINT_ENABLED) {
        "sts-vpc"
    } else {
        "sts"
    };
    match non_empty(lookup, var::STS_REGION) {
        Some(region) => format!("https://{prefix}.{region}.aliyuncs.com"),
        None => "https://sts.aliyuncs.com".into(),
    }
}

fn with_scheme(endpoint: &str, scheme: &str) -> String {
    let endpoint = endpoint.trim_end_matches('/');
    if endpoint.contains("://") {
        endpoint.to_owned()
    } else {
        format!("{scheme}://{endpoint}")
    }
}

/// `loghose-<unix seconds>`, as the vendor names a session it is not told the name of.
fn default_session() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("loghose-{secs}")
}

fn read(path: &std::path::Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{} does not exist", path.display()),
        _ => format!("reading {}: {e}", path.display()),
    })
}

fn static_keys(
    id: Option<&str>,
    secret: Option<&str>,
    token: Option<&str>,
    wheres: &str,
) -> Result<Leaf, String> {
    match (
        id.filter(|v| !v.is_empty()),
        secret.filter(|v| !v.is_empty()),
    ) {
        (Some(id), Some(secret)) => Ok(Leaf::Static(Credentials {
            access_key_id: id.into(),
            access_key_secret: secret.into(),
            security_token: token.filter(|t| !t.is_empty()).map(str::to_owned),
        })),
        _ => Err(format!(
            "{wheres} has no access_key_id and access_key_secret"
        )),
    }
}

/// The current (or named) profile of the CLI's `config.json`.
fn cli_profile(
    path: &std::path::Path,
    wanted: Option<&str>,
    ctx: &Context,
) -> Result<Leaf, String> {
    let text = read(path)?;
    let config: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?;
    let name = match wanted {
        Some(n) => n.to_owned(),
        None => config
            .get("current")
            .and_then(|v| v.as_str())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("{} names no current profile", path.display()))?
            .to_owned(),
    };
    let profile = config
        .get("profiles")
        .and_then(|p| p.as_array())
        .and_then(|ps| {
            ps.iter()
                .find(|p| p.get("name").and_then(|n| n.as_str()) == Some(&name))
        })
        .ok_or_else(|| format!("{} has no profile {name:?}", path.display()))?;
    let field = |k: &str| profile.get(k).and_then(|v| v.as_str());
    let wheres = format!("profile {name:?} of {}", path.display());
    let duration_secs = profile.get("expired_seconds").and_then(|v| v.as_u64());
    profile_leaf(&CLI_PROFILE, field, duration_secs, ctx, &wheres)
}

/// The kinds of credentials a profile can name.
#[derive(Clone, Copy)]
enum ProfileKind {
    Keys,
    StsToken,
    RamRole,
    EcsRole,
    Oidc,
}

/// How one profile format spells its kinds of credentials and their fields (`None`: the
/// format has no such field).
struct ProfileFormat {
    /// The field that names the kind, and each kind's name in it.
    kind_field: &'static str,
    kinds: &'static [(&'static str, ProfileKind)],
    role_arn: &'static str,
    session: &'static str,
    role_policy: &'static str,
    external_id: Option<&'static str>,
    role_name: &'static str,
    oidc_token_file: &'static str,
    oidc_policy: Option<&'static str>,
}

/// The CLI's `config.json` (`mode`).
const CLI_PROFILE: ProfileFormat = ProfileFormat {
    kind_field: "mode",
    kinds: &[
        ("AK", ProfileKind::Keys),
        ("StsToken", ProfileKind::StsToken),
        ("RamRoleArn", ProfileKind::RamRole),
        ("EcsRamRole", ProfileKind::EcsRole),
        ("OIDC", ProfileKind::Oidc),
    ],
    role_arn: "ram_role_arn",
    session: "ram_session_name",
    role_policy: "policy",
    external_id: Some("external_id"),
    role_name: "ram_role_name",
    oidc_token_file: "oidc_token_file",
    oidc_policy: None,
};

/// `credentials.ini` (`type`).
const INI_PROFILE: ProfileFormat = ProfileFormat {
    kind_field: "type",
    kinds: &[
        ("access_key", ProfileKind::Keys),
        ("ram_role_arn", ProfileKind::RamRole),
        ("ecs_ram_role", ProfileKind::EcsRole),
        ("oidc_role_arn", ProfileKind::Oidc),
    ],
    role_arn: "role_arn",
    session: "role_session_name",
    role_policy: "policy",
    external_id: None,
    role_name: "role_name",
    oidc_token_file: "oidc_token_file_path",
    oidc_policy: Some("policy"),
};

/// The credentials a profile of `format` names, its fields read through `field`.
fn profile_leaf<'p>(
    format: &ProfileFormat,
    field: impl Fn(&str) -> Option<&'p str>,
    duration_secs: Option<u64>,
    ctx: &Context,
    wheres: &str,
) -> Result<Leaf, String> {
    let named = field(format.kind_field).unwrap_or("");
    let Some(&(_, kind)) = format.kinds.iter().find(|(name, _)| *name == named) else {
        let names: Vec<&str> = format.kinds.iter().map(|(name, _)| *name).collect();
        let (last, others) = names.split_last().unwrap_or((&"", &[]));
        return Err(format!(
            "{wheres}: {} {named:?} is not supported ({} and {last} are)",
            format.kind_field,
            others.join(", ")
        ));
    };
    let keys = |token: Option<&str>| {
        static_keys(
            field("access_key_id"),
            field("access_key_secret"),
            token,
            wheres,
        )
    };
    let optional = |key: Option<&str>| key.and_then(&field);
    match kind {
        ProfileKind::Keys => keys(None),
        ProfileKind::StsToken => keys(field("sts_token")),
        ProfileKind::RamRole => ram_leaf(
            keys(None)?,
            RoleFields {
                role_arn: field(format.role_arn),
                session: field(format.session),
                duration_secs,
                policy: field(format.role_policy),
                external_id: optional(format.external_id),
            },
            ctx,
            wheres,
        ),
        ProfileKind::EcsRole => Ok(Leaf::Ecs(EcsRole {
            role_name: field(format.role_name)
                .filter(|v| !v.is_empty())
                .map(str::to_owned),
            endpoint: ctx.ecs_endpoint.clone(),
            imds_v1_disabled: ctx.imds_v1_disabled,
        })),
        ProfileKind::Oidc => oidc_leaf(
            field(format.role_arn),
            field("oidc_provider_arn"),
            field(format.oidc_token_file),
            field(format.session),
            optional(format.oidc_policy),
            ctx,
            wheres,
        ),
    }
}

fn oidc_leaf(
    role_arn: Option<&str>,
    provider_arn: Option<&str>,
    token_file: Option<&str>,
    session: Option<&str>,
    policy: Option<&str>,
    ctx: &Context,
    wheres: &str,
) -> Result<Leaf, String> {
    let given = |v: Option<&str>, key: &str| {
        v.filter(|v| !v.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| format!("{wheres} has no {key}"))
    };
    Ok(Leaf::Oidc(OidcRole {
        role_arn: given(role_arn, "role ARN")?,
        provider_arn: given(provider_arn, "OIDC provider ARN")?,
        token_file: given(token_file, "OIDC token file")?.into(),
        session_name: session
            .filter(|v| !v.is_empty())
            .map_or_else(|| ctx.session_name.clone(), str::to_owned),
        policy: policy.filter(|v| !v.is_empty()).map(str::to_owned),
        sts_endpoint: ctx.sts_endpoint.clone(),
    }))
}

/// A RAM role's fields as a profile gives them (absent or empty: not given).
struct RoleFields<'a> {
    role_arn: Option<&'a str>,
    session: Option<&'a str>,
    duration_secs: Option<u64>,
    policy: Option<&'a str>,
    external_id: Option<&'a str>,
}

fn ram_leaf(key: Leaf, role: RoleFields<'_>, ctx: &Context, wheres: &str) -> Result<Leaf, String> {
    let RoleFields {
        role_arn,
        session,
        duration_secs,
        policy,
        external_id,
    } = role;
    let Leaf::Static(key) = key else {
        return Err(format!("{wheres} has no access key"));
    };
    let role_arn = role_arn
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("{wheres} has no role ARN"))?;
    let duration_secs = duration_secs
        .filter(|d| *d > 0)
        .unwrap_or(STS_DURATION_SECS);
    if duration_secs < 900 {
        return Err(format!(
            "{wheres}: a session of {duration_secs} s is shorter than STS allows (900 s)"
        ));
    }
    let given = |v: Option<&str>| v.filter(|v| !v.is_empty()).map(str::to_owned);
    Ok(Leaf::Ram(RamRole {
        key,
        role_arn: role_arn.to_owned(),
        session_name: given(session).unwrap_or_else(|| ctx.session_name.clone()),
        duration_secs,
        policy: given(policy),
        external_id: given(external_id),
        sts_endpoint: ctx.sts_endpoint.clone(),
    }))
}

/// A section of `credentials.ini`.
fn profile_file(path: &std::path::Path, section: &str, ctx: &Context) -> Result<Leaf, String> {
    let text = read(path)?;
    let entries = ini_section(&text, section)
        .ok_or_else(|| format!("{} has no [{section}] section", path.display()))?;
    let field = |k: &str| {
        entries
            .iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let wheres = format!("[{section}] of {}", path.display());
    profile_leaf(&INI_PROFILE, field, None, ctx, &wheres)
}

/// The `key = value` lines of one `[section]` (`;` and `#` begin comments), or `None` if it
/// is not there.
fn ini_section(text: &str, wanted: &str) -> Option<Vec<(String, String)>> {
    let mut current: Option<&str> = None;
    let mut found = None::<Vec<(String, String)>>;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(name.trim());
            if current == Some(wanted) && found.is_none() {
                found = Some(Vec::new());
            }
            continue;
        }
        if current != Some(wanted) {
            continue;
        }
        if let (Some(entries), Some((k, v))) = (found.as_mut(), line.split_once(['=', ':'])) {
            entries.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_home_directory_is_the_platforms_own() {
        let home = |pairs: &[(&str, &str)]| {
            let map = vars(pairs);
            user_home(&|k| map.get(k).map(std::ffi::OsString::from))
        };
        let both = [("HOME", "/home/u"), ("USERPROFILE", r"C:\Users\u")];
        if cfg!(windows) {
            assert_eq!(home(&both), Some(PathBuf::from(r"C:\Users\u")));
            assert_eq!(
                home(&[("HOME", "/home/u"), ("USERPROFILE", "")]),
                Some("/home/u".into())
            );
        } else {
            assert_eq!(home(&both), Some(PathBuf::from("/home/u")));
            assert_eq!(home(&[("USERPROFILE", r"C:\Users\u")]), None);
        }
        assert_eq!(home(&[("HOME", "")]), None);
        assert_eq!(home(&[]), None);
    }

    fn planned(pairs: &[(&str, &str)], home: Option<&str>) -> (Vec<Source>, Vec<String>) {
        let map = vars(pairs);
        plan(&|k| map.get(k).cloned(), home.map(PathBuf::from))
    }

    #[test]
    fn the_vendor_order_with_nothing_set_is_profiles_then_the_metadata_service() {
        let (sources, skipped) = planned(&[], Some("/home/u"));
        let names: Vec<_> = sources.iter().map(Source::name).collect();
        assert_eq!(names, ["CLI profile", "profile file", "ECS instance role"]);
        assert_eq!(
            sources[0],
            Source::CliProfile {
                path: "/home/u/.aliyun/config.json".into(),
                profile: None,
                ctx: match &sources[0] {
                    Source::CliProfile { ctx, .. } => ctx.clone(),
                    _ => unreachable!(),
                },
            }
        );
        assert!(
            matches!(&sources[1], Source::ProfileFile { path, section, .. }
            if path == &PathBuf::from("/home/u/.alibabacloud/credentials.ini") && section == "default")
        );
        assert!(
            matches!(&sources[2], Source::Ecs(EcsRole { endpoint, role_name: None, imds_v1_disabled: false })
            if endpoint == ECS_METADATA_ENDPOINT)
        );
        assert_eq!(skipped.len(), 3, "{skipped:?}");
        assert!(skipped[1].contains(var::ROLE_ARN));
    }

    #[test]
    fn every_variable_of_the_chain_is_read() {
        let (sources, skipped) = planned(
            &[
                (var::ROLE_ARN, "acs:ram::1:role/r"),
                (var::OIDC_PROVIDER_ARN, "acs:ram::1:oidc-provider/p"),
                (var::OIDC_TOKEN_FILE, "/var/run/token"),
                (var::ROLE_SESSION_NAME, "s"),
                (var::STS_REGION, "cn-hangzhou"),
                (var::VPC_ENDPOINT_ENABLED, "TRUE"),
                (var::CLI_PROFILE_DISABLED, "true"),
                (var::PROFILE, "prod"),
                (var::CREDENTIALS_FILE, "/etc/creds.ini"),
                (var::ECS_METADATA, "role-1"),
                (var::IMDSV1_DISABLED, "true"),
                (var::CREDENTIALS_URI, "http://127.0.0.1:1/c"),
            ],
            Some("/home/u"),
        );
        let names: Vec<_> = sources.iter().map(Source::name).collect();
        assert_eq!(
            names,
            [
                "OIDC role",
                "profile file",
                "ECS instance role",
                "credentials URI"
            ]
        );
        let Source::Oidc(role) = &sources[0] else {
            panic!()
        };
        assert_eq!(
            role.sts_endpoint,
            "https://sts-vpc.cn-hangzhou.aliyuncs.com"
        );
        assert_eq!(role.session_name, "s");
        assert_eq!(role.token_file, PathBuf::from("/var/run/token"));
        assert!(
            matches!(&sources[1], Source::ProfileFile { path, section, .. }
            if path == &PathBuf::from("/etc/creds.ini") && section == "prod")
        );
        assert!(
            matches!(&sources[2], Source::Ecs(EcsRole { role_name: Some(r), imds_v1_disabled: true, .. }) if r == "role-1")
        );
        assert_eq!(sources[3], Source::Uri("http://127.0.0.1:1/c".into()));
        assert!(skipped
            .iter()
            .any(|s| s.contains(var::CLI_PROFILE_DISABLED)));
    }

    #[test]
    fn an_incomplete_oidc_setting_or_disabled_metadata_is_skipped_with_the_reason() {
        let (sources, skipped) = planned(
            &[
                (var::ROLE_ARN, "acs:ram::1:role/r"),
                (var::OIDC_TOKEN_FILE, ""),
                (var::ECS_METADATA_DISABLED, "true"),
                (var::STS_ENDPOINT, "127.0.0.1:9"),
            ],
            None,
        );
        assert!(sources.is_empty(), "{sources:?}");
        let all = skipped.join("; ");
        for needle in [
            var::OIDC_TOKEN_FILE,
            "no home directory",
            var::ECS_METADATA_DISABLED,
            var::CREDENTIALS_URI,
        ] {
            assert!(all.contains(needle), "{needle} in {all}");
        }
        assert_eq!(
            sts_endpoint(&|k| (k == var::STS_ENDPOINT).then(|| "http://127.0.0.1:9/".into())),
            "http://127.0.0.1:9"
        );
    }

    fn ctx() -> Context {
        Context {
            sts_endpoint: "http://sts".into(),
            session_name: "default-session".into(),
            ecs_endpoint: "http://meta".into(),
            imds_v1_disabled: false,
        }
    }

    #[test]
    fn the_cli_config_gives_its_current_or_named_profile_by_mode() {
        let dir = std::env::temp_dir().join(format!("loghose-cli-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.json");
        std::fs::write(
            &path,
            r#"{"current":"ak","profiles":[
              {"name":"ak","mode":"AK","access_key_id":"id1","access_key_secret":"s1"},
              {"name":"sts","mode":"StsToken","access_key_id":"id2","access_key_secret":"s2","sts_token":"t2"},
              {"name":"ecs","mode":"EcsRamRole","ram_role_name":"r"},
              {"name":"oidc","mode":"OIDC","ram_role_arn":"ra","oidc_provider_arn":"pa","oidc_token_file":"/t"},
              {"name":"sso","mode":"CloudSSO"},
              {"name":"half","mode":"AK","access_key_id":"id"}]}"#,
        )
        .unwrap();
        assert_eq!(
            cli_profile(&path, None, &ctx()),
            Ok(Leaf::Static(Credentials::new("id1", "s1")))
        );
        assert_eq!(
            cli_profile(&path, Some("sts"), &ctx()),
            Ok(Leaf::Static(Credentials::sts("id2", "s2", "t2")))
        );
        assert!(matches!(cli_profile(&path, Some("ecs"), &ctx()),
            Ok(Leaf::Ecs(EcsRole { role_name: Some(r), endpoint, .. })) if r == "r" && endpoint == "http://meta"));
        assert!(matches!(cli_profile(&path, Some("oidc"), &ctx()),
            Ok(Leaf::Oidc(OidcRole { role_arn, session_name, sts_endpoint, .. }))
                if role_arn == "ra" && session_name == "default-session" && sts_endpoint == "http://sts"));
        let sso = cli_profile(&path, Some("sso"), &ctx()).unwrap_err();
        assert!(
            sso.contains("CloudSSO") && sso.contains("not supported"),
            "{sso}"
        );
        let half = cli_profile(&path, Some("half"), &ctx()).unwrap_err();
        assert!(
            half.contains("\"half\"") && half.contains("access_key_secret"),
            "{half}"
        );
        let none = cli_profile(&path, Some("nope"), &ctx()).unwrap_err();
        assert!(none.contains("no profile \"nope\""), "{none}");
        std::fs::write(&path, "{").unwrap();
        assert!(cli_profile(&path, None, &ctx())
            .unwrap_err()
            .contains("not valid JSON"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(cli_profile(&path, None, &ctx())
            .unwrap_err()
            .contains("does not exist"));
    }

    #[test]
    fn the_ini_file_gives_its_section_by_type() {
        let dir = std::env::temp_dir().join(format!("loghose-ini-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("credentials.ini");
        std::fs::write(
            &path,
            "; comment\n[default]\ntype = access_key\naccess_key_id = id1\naccess_key_secret = s1\n\n\
             [ecs]\ntype=ecs_ram_role\nrole_name=r\n[oidc]\ntype = oidc_role_arn\nrole_arn = ra\n\
             oidc_provider_arn = pa\noidc_token_file_path = /t\nrole_session_name = mine\npolicy = {}\n\
             [rsa]\ntype = rsa_key_pair\n[ram]\ntype = ram_role_arn\naccess_key_id = id2\n\
             access_key_secret = s2\nrole_arn = acs:ram::1:role/r\n",
        )
        .unwrap();
        assert_eq!(
            profile_file(&path, "default", &ctx()),
            Ok(Leaf::Static(Credentials::new("id1", "s1")))
        );
        assert!(matches!(profile_file(&path, "ecs", &ctx()),
            Ok(Leaf::Ecs(EcsRole { role_name: Some(r), .. })) if r == "r"));
        assert!(matches!(profile_file(&path, "oidc", &ctx()),
            Ok(Leaf::Oidc(OidcRole { session_name, policy: Some(p), .. })) if session_name == "mine" && p == "{}"));
        assert!(matches!(profile_file(&path, "ram", &ctx()),
            Ok(Leaf::Ram(RamRole { key, role_arn, session_name, duration_secs: 3600, .. }))
                if key == Credentials::new("id2", "s2") && role_arn == "acs:ram::1:role/r"
                    && session_name == "default-session"));
        let rsa = profile_file(&path, "rsa", &ctx()).unwrap_err();
        assert!(rsa.contains("rsa_key_pair"), "{rsa}");
        let missing = profile_file(&path, "prod", &ctx()).unwrap_err();
        assert!(missing.contains("no [prod] section"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
