//! The seed benchmark workloads (`docs/scenarios.md`), defined once so the Rust benches, the
//! harnesses and the language fronts all measure the same records.
//!
//! S1 (the C producer's published server benchmark): each iteration adds two logs, one of ten
//! fields (~700 bytes) and one of four (~200 bytes); topic `test_topic`, tags `tag_1=val_1` …
//! `tag_5=val_5`. S6: one large value of seeded access-log text ([`s6_payload`]), the same in
//! every harness. The harnesses' rows are printed as markdown tables by [`markdown_tables`],
//! the one table writer of every front. Pure data, any thread. [`harness`] is the rest of
//! what every front's harness shares: the child emulator, the exactly-once check, the process
//! figures and the rows.

pub mod harness;

/// The 48-byte alphabet run the S1 values are built from.
pub const S1_ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+";
/// S1 topic.
pub const S1_TOPIC: &str = "test_topic";
/// S1 tags, in order.
pub const S1_TAGS: [(&str, &str); 5] = [
    ("tag_1", "val_1"),
    ("tag_2", "val_2"),
    ("tag_3", "val_3"),
    ("tag_4", "val_4"),
    ("tag_5", "val_5"),
];

/// The ten-field S1 log of iteration `index` (`content_key_1` … `content_key_9`, `index`).
pub fn s1_log_a(index: u64) -> Vec<(String, String)> {
    let mut fields = Vec::with_capacity(10);
    fields.push((
        "content_key_1".to_owned(),
        format!("1{S1_ALPHABET}{S1_ALPHABET}{S1_ALPHABET}"),
    ));
    for digit in 2..=9 {
        fields.push((
            format!("content_key_{digit}"),
            format!("{digit}{S1_ALPHABET}"),
        ));
    }
    fields.push(("index".to_owned(), index.to_string()));
    fields
}

/// The four-field S1 log.
pub fn s1_log_b() -> Vec<(String, String)> {
    [
        ("LogHub", "Real-time log collection and consumption"),
        ("Search/Analytics", "Query and real-time analysis"),
        ("Visualized", "dashboard and report functions"),
        ("Interconnection", "Grafana and JDBC/SQL92"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect()
}

/// The S1 log number `n` of a run: even numbers are the ten-field log of iteration `n / 2`,
/// odd numbers the four-field log.
pub fn s1_log(n: u64) -> Vec<(String, String)> {
    if n.is_multiple_of(2) {
        s1_log_a(n / 2)
    } else {
        s1_log_b()
    }
}

/// S1 as its driver adds it: both records prebuilt once, the iteration number formatted on the
/// stack for each ten-field log (as the C benchmark's `sprintf`), fields written straight into
/// the producer's encoder.
pub struct S1Workload {
    /// The ten-field log (its `index` value is replaced on every add).
    pub a: Vec<(String, String)>,
    /// The four-field log.
    pub b: Vec<(String, String)>,
}

impl Default for S1Workload {
    fn default() -> Self {
        S1Workload {
            a: s1_log_a(0),
            b: s1_log_b(),
        }
    }
}

impl S1Workload {
    /// Writes S1 log number `n` into `enc` (even: the ten-field log of iteration `n / 2`; odd:
    /// the four-field one).
    #[inline]
    pub fn fill(
        &self,
        enc: &mut loghose::producer::LogEncoder<'_>,
        n: u64,
    ) -> Result<(), loghose::producer::RecordError> {
        if n.is_multiple_of(2) {
            for (k, v) in &self.a[..9] {
                enc.field_str(k, v)?;
            }
            let mut index = itoa::Buffer::new();
            enc.field_str("index", index.format(n / 2))
        } else {
            for (k, v) in &self.b {
                enc.field_str(k, v)?;
            }
            Ok(())
        }
    }

    /// Adds S1 log number `n` to `producer` with the default destination.
    #[inline]
    pub fn add(
        &self,
        producer: &loghose::producer::Producer,
        n: u64,
    ) -> Result<(), loghose::producer::ProducerError> {
        producer.add_with(|enc| self.fill(enc, n))
    }

    /// Raw bytes (keys + values) of log number `n`.
    pub fn raw_bytes(&self, n: u64) -> u64 {
        let fields = if n.is_multiple_of(2) {
            &self.a
        } else {
            &self.b
        };
        let index_fix = if n.is_multiple_of(2) {
            itoa::Buffer::new().format(n / 2).len() as u64 - 1
        } else {
            0
        };
        fields
            .iter()
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum::<u64>()
            + index_fix
    }
}

/// S1-R, S1 with real logs: log number `n` of a run as an access log is (client address, local
/// time, method, path with ids, status, bytes, latency, user agent, request id, upstream), its
/// values varied by a generator seeded with `n`, so any harness can make any log and every run
/// sends the same ones. A few dozen clients, a clock that only moves forward (a second every
/// 1 000 logs) and a few routes: batches compress about as real access logs do (4–8:1 with lz4),
/// not as S1's 100:1. Its `request_id` starts with `n` in 12 hex digits ([`s1r_number`]).
pub fn s1r_log(n: u64) -> Vec<(&'static str, String)> {
    const PATHS: [&str; 12] = [
        "/api/v1/orders",
        "/api/v1/orders/{id}",
        "/api/v1/users/{id}",
        "/api/v1/users/{id}/settings",
        "/api/v1/cart",
        "/api/v1/cart/items",
        "/api/v1/search",
        "/static/app.js",
        "/static/app.css",
        "/healthz",
        "/login",
        "/api/v2/inventory/{id}",
    ];
    const AGENTS: [&str; 6] = [
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
        "okhttp/4.12.0",
        "python-requests/2.32.3",
        "curl/8.11.0",
    ];
    const METHODS: [&str; 4] = ["GET", "GET", "POST", "PUT"];
    const STATUSES: [&str; 6] = ["200", "200", "200", "201", "304", "404"];
    let mut rng = fastrand::Rng::with_seed(n ^ 0x5152_5f4c_4f47_5321);
    // One of 48 clients, each always the same address.
    let client = rng.u64(..48);
    let mut ip = fastrand::Rng::with_seed(client);
    let client_ip = format!("10.{}.{}.{}", ip.u8(..), ip.u8(..), ip.u8(1..255));
    let time_local = chrono::DateTime::from_timestamp(1_764_720_000 + (n / 1000) as i64, 0)
        .unwrap_or_default()
        .format("%d/%b/%Y:%H:%M:%S +0000")
        .to_string();
    let path = PATHS[rng.usize(..PATHS.len())].replace("{id}", &rng.u32(1..200_000).to_string());
    vec![
        ("client_ip", client_ip),
        ("time_local", time_local),
        ("method", METHODS[rng.usize(..METHODS.len())].to_owned()),
        ("path", path),
        ("status", STATUSES[rng.usize(..STATUSES.len())].to_owned()),
        ("bytes_sent", rng.u32(200..60_000).to_string()),
        ("request_time_ms", format!("{:.3}", rng.f64() * 250.0)),
        ("user_agent", AGENTS[rng.usize(..AGENTS.len())].to_owned()),
        ("request_id", format!("{n:012x}{:04x}", rng.u16(..))),
        ("upstream", format!("app-{}:8080", rng.u8(1..9))),
    ]
}

/// How many distinct S1-R records a run cycles through: far more than an lz4 window (64 KiB)
/// holds, so each batch compresses as distinct real logs do.
pub const S1R_POOL: u64 = 4096;

/// S1-R as every harness adds it (and the C driver, from [`S1RWorkload::pool_lines`]): the
/// records of [`S1R_POOL`] logs prebuilt once; log `n` is record `n % S1R_POOL` with the first
/// 12 hex digits of its `request_id` set to `n` (formatted on the stack for each add, as S1's
/// `index`), fields written straight into the producer's encoder. Topic and tags as S1's.
pub struct S1RWorkload {
    /// The pool's records, in order.
    pub pool: Vec<Vec<(&'static str, String)>>,
}

impl Default for S1RWorkload {
    fn default() -> Self {
        S1RWorkload {
            pool: (0..S1R_POOL).map(s1r_log).collect(),
        }
    }
}

impl S1RWorkload {
    /// Writes S1-R log number `n` into `enc`.
    #[inline]
    pub fn fill(
        &self,
        enc: &mut loghose::producer::LogEncoder<'_>,
        n: u64,
    ) -> Result<(), loghose::producer::RecordError> {
        for (k, v) in &self.pool[(n % S1R_POOL) as usize] {
            if *k == "request_id" {
                let id = Self::request_id(n, v);
                enc.field_bytes_utf8(k.as_bytes(), as_str(&id))?;
            } else {
                enc.field_str(k, v)?;
            }
        }
        Ok(())
    }

    /// Adds S1-R log number `n` to `producer` with the default destination.
    #[inline]
    pub fn add(
        &self,
        producer: &loghose::producer::Producer,
        n: u64,
    ) -> Result<(), loghose::producer::ProducerError> {
        producer.add_with(|enc| self.fill(enc, n))
    }

    /// S1-R log number `n`'s fields, as [`S1RWorkload::fill`] writes them (what a read-back
    /// compares with).
    pub fn fields(&self, n: u64) -> Vec<(&'static str, String)> {
        self.pool[(n % S1R_POOL) as usize]
            .iter()
            .map(|(k, v)| {
                let v = if *k == "request_id" {
                    as_str(&Self::request_id(n, v)).to_owned()
                } else {
                    v.clone()
                };
                (*k, v)
            })
            .collect()
    }

    /// The pool as the C driver reads it: a record a line, `key=value` fields separated by tabs
    /// (no S1-R key or value holds a tab, a newline or, in a key, `=`).
    pub fn pool_lines(&self) -> String {
        let mut out = String::new();
        for record in &self.pool {
            let fields: Vec<String> = record.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push_str(&fields.join("\t"));
            out.push('\n');
        }
        out
    }

    /// `pooled`'s request id with its first 12 hex digits set to `n` (on the stack).
    fn request_id(n: u64, pooled: &str) -> [u8; 16] {
        let mut id = [b'0'; 16];
        let tail = pooled.as_bytes().get(12..16).unwrap_or(b"0000");
        id[12..].copy_from_slice(tail);
        let mut rest = n;
        for digit in id[..12].iter_mut().rev() {
            *digit = b"0123456789abcdef"[(rest & 15) as usize];
            rest >>= 4;
        }
        id
    }
}

/// ASCII hex digits as text.
fn as_str(id: &[u8; 16]) -> &str {
    std::str::from_utf8(id).unwrap_or("0000000000000000")
}

/// The number of the S1-R log whose `request_id` is this (what an exactly-once check counts).
pub fn s1r_number(request_id: &str) -> Option<u64> {
    u64::from_str_radix(request_id.get(..12)?, 16).ok()
}

/// `logs` logs of S1, or of S1-R when `real`, encoded into batches of about `batch_bytes` raw
/// bytes as the producer encodes them, times advancing by `step_ns` a log from a fixed start
/// at `precision`: what the codec and digest measurements compress and hash.
pub fn encoded_batches(
    real: bool,
    precision: loghose::producer::TimePrecision,
    logs: u64,
    step_ns: u64,
    batch_bytes: usize,
) -> Vec<loghose::producer::bindings::BatchBuf> {
    use loghose::producer::bindings::BatchBuf;
    use loghose::producer::LogEncoder;
    let s1 = S1Workload::default();
    let mut out = Vec::new();
    let mut buf = BatchBuf::with_capacity(batch_bytes + (64 << 10));
    let start_ns: u64 = 1_700_000_000 * 1_000_000_000 + 123_456_789;
    for n in 0..logs {
        let t = start_ns + n * step_ns;
        let (secs, nanos) = ((t / 1_000_000_000) as u32, (t % 1_000_000_000) as u32);
        let nanos = precision.apply(Some(nanos));
        let mut enc = LogEncoder::begin(
            &mut buf,
            secs,
            nanos,
            loghose::wire::keys::KeyPolicy::Service,
        );
        // Both workloads' logs are valid and far below every limit.
        let _ = if real {
            s1r_log(n).iter().try_for_each(|(k, v)| enc.field_str(k, v))
        } else {
            s1.fill(&mut enc, n)
        };
        let _ = enc.finish(usize::MAX);
        if buf.len() >= batch_bytes {
            out.push(std::mem::replace(
                &mut buf,
                BatchBuf::with_capacity(batch_bytes + (64 << 10)),
            ));
        }
    }
    if !buf.is_empty() {
        out.push(buf);
    }
    out
}

/// S6's payload: `size` bytes of access-log lines whose values vary (a seeded generator, so
/// every harness and every run sends the same text), which compresses as real logs do (about
/// 4:1 with lz4, 6:1 with zstd), not as S1's 100:1. ASCII, so any `size` is a valid string.
pub fn s6_payload(size: usize) -> String {
    const PATHS: [&str; 6] = [
        "/api/v1/items",
        "/api/v1/orders",
        "/login",
        "/static/app.js",
        "/api/v2/search",
        "/healthz",
    ];
    const AGENTS: [&str; 4] = [
        "Mozilla/5.0 (X11; Linux x86_64)",
        "curl/8.11.0",
        "okhttp/4.12.0",
        "python-requests/2.32.3",
    ];
    const METHODS: [&str; 3] = ["GET", "POST", "PUT"];
    const STATUSES: [u16; 7] = [200, 200, 200, 201, 304, 404, 500];
    use std::fmt::Write as _;
    let mut rng = fastrand::Rng::with_seed(6);
    // A service's clients are a few dozen addresses, its clock only moves forward, and most
    // requests hit a few routes: what makes real access logs compress 4–8:1.
    let clients: Vec<String> = (0..48)
        .map(|_| format!("10.{}.{}.{}", rng.u8(..), rng.u8(..), rng.u8(1..255)))
        .collect();
    let mut millis: u64 = 0;
    let mut out = String::with_capacity(size + 256);
    while out.len() < size {
        millis += rng.u64(0..40);
        let secs = millis / 1000;
        let _ = writeln!(
            out,
            "{} - - [01/Dec/2026:{:02}:{:02}:{:02}.{:03} +0000] \"{} {}?id={} HTTP/1.1\" {} {} {}ms \"{}\"",
            clients[rng.usize(..clients.len())],
            (secs / 3600) % 24,
            (secs / 60) % 60,
            secs % 60,
            millis % 1000,
            METHODS[rng.usize(..METHODS.len())],
            PATHS[rng.usize(..PATHS.len())],
            rng.u32(..5000),
            STATUSES[rng.usize(..STATUSES.len())],
            rng.u32(100..50_000),
            rng.u32(1..2000),
            AGENTS[rng.usize(..AGENTS.len())],
        );
    }
    out.truncate(size);
    out
}

/// One row of a benchmark's results: its columns in order (JSON values, as every front's
/// harness hands them over).
pub type Row = Vec<(String, serde_json::Value)>;

/// Rows as markdown tables: one per shape of row (a scenario's rates, its unthrottled run, its
/// codecs…), in the order the shapes first appear; the `scenario` column, empty (null)
/// columns and lists (a backlog series) left out. Floats are written with three decimals
/// below 10, one below 1 000, none above; integers, booleans and strings as they are; objects
/// as compact JSON.
pub fn markdown_tables(rows: &[Row]) -> String {
    let mut shapes: Vec<(Vec<&str>, Vec<&Row>)> = Vec::new();
    for row in rows {
        let keys: Vec<&str> = row
            .iter()
            .filter(|(k, v)| k != "scenario" && !v.is_null() && !v.is_array())
            .map(|(k, _)| k.as_str())
            .collect();
        match shapes.iter_mut().find(|(shape, _)| *shape == keys) {
            Some((_, group)) => group.push(row),
            None => shapes.push((keys, vec![row])),
        }
    }
    let mut out = String::new();
    for (keys, group) in &shapes {
        out.push_str(&format!(
            "| {} |\n|{}\n",
            keys.join(" | "),
            "---:|".repeat(keys.len())
        ));
        for row in group {
            let cells: Vec<String> = keys
                .iter()
                .map(|k| {
                    row.iter()
                        .find(|(name, _)| name == k)
                        .map_or_else(String::new, |(_, v)| cell(v))
                })
                .collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        out.push('\n');
    }
    out
}

/// [`markdown_tables`] of rows given as JSON: a list of rows, each a list of `[column, value]`
/// pairs (pairs keep the columns' order, which a JSON object need not).
pub fn markdown_tables_json(rows_json: &str) -> Result<String, serde_json::Error> {
    let rows: Vec<Row> = serde_json::from_str(rows_json)?;
    Ok(markdown_tables(&rows))
}

fn cell(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) if n.is_f64() => {
            let v = n.as_f64().unwrap_or(f64::NAN);
            match v.abs() {
                a if a < 10.0 => format!("{v:.3}"),
                a if a < 1000.0 => format!("{v:.1}"),
                _ => format!("{v:.0}"),
            }
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_print_as_one_table_per_shape_in_order() {
        let rows = markdown_tables_json(
            r#"[
                [["scenario", "s1"], ["rate", 1000], ["cpu_pct", 2.5], ["lost", 0], ["backlog", [1, 2]]],
                [["scenario", "s1"], ["rate", 200000], ["cpu_pct", 47.25], ["lost", 0], ["backlog", [3]]],
                [["scenario", "s1"], ["unthrottled", true], ["logs_per_s", 1234567.8], ["p99_ms", null]],
                [["scenario", "s1"], ["rate", 5], ["cpu_pct", 0.1], ["lost", 2], ["us", {"dict": 0.5}]]
            ]"#,
        )
        .unwrap();
        assert_eq!(
            rows,
            "| rate | cpu_pct | lost |\n|---:|---:|---:|\n| 1000 | 2.500 | 0 |\n| 200000 | 47.2 | 0 |\n\n\
             | unthrottled | logs_per_s |\n|---:|---:|\n| true | 1234568 |\n\n\
             | rate | cpu_pct | lost | us |\n|---:|---:|---:|---:|\n| 5 | 0.100 | 2 | {\"dict\":0.5} |\n\n"
        );
        assert!(markdown_tables_json("{}").is_err(), "rows are a list");
        assert_eq!(markdown_tables(&[]), "");
    }

    fn size(fields: &[(String, String)]) -> usize {
        fields.iter().map(|(k, v)| k.len() + v.len()).sum()
    }

    #[test]
    fn s1_logs_have_the_documented_shape_and_size() {
        let a = s1_log(0);
        assert_eq!(a.len(), 10);
        assert_eq!(a[0].1.len(), 1 + 3 * 48);
        assert_eq!(a[9], ("index".to_owned(), "0".to_owned()));
        assert!((600..=720).contains(&size(&a)), "{}", size(&a));
        let b = s1_log(1);
        assert_eq!(b.len(), 4);
        assert!((150..=220).contains(&size(&b)), "{}", size(&b));
        assert_eq!(s1_log(6)[9].1, "3");
    }

    #[test]
    fn s6_payload_is_sized_repeatable_and_compresses_like_logs() {
        for size in [0, 1, 1000, 1 << 20] {
            assert_eq!(s6_payload(size).len(), size);
        }
        assert_eq!(s6_payload(5000), s6_payload(5000));
        let text = s6_payload(1 << 20);
        let lz4 = loghose::wire::compress::compress(
            loghose::wire::compress::Compression::Lz4,
            text.as_bytes(),
        )
        .expect("compresses");
        let ratio = text.len() as f64 / lz4.len() as f64;
        assert!((3.0..8.0).contains(&ratio), "lz4 ratio {ratio}");
    }

    #[test]
    fn s1r_logs_are_varied_numbered_and_compress_like_real_logs() {
        let w = S1RWorkload::default();
        for n in [0u64, 1, 4095, 4096, 123_456_789, (1 << 48) - 1] {
            let fields = w.fields(n);
            assert_eq!(fields.len(), 10);
            let id = &fields.iter().find(|(k, _)| *k == "request_id").unwrap().1;
            assert_eq!(s1r_number(id), Some(n), "{id}");
            // The rest is the pool's record.
            let pooled = &w.pool[(n % S1R_POOL) as usize];
            for ((k, v), (pk, pv)) in fields.iter().zip(pooled) {
                assert_eq!(k, pk);
                if *k == "request_id" {
                    assert_eq!(v[12..], pv[12..]);
                } else {
                    assert_eq!(v, pv);
                }
            }
            // What `fill` writes is what `fields` says.
            let mut buf = loghose::producer::bindings::BatchBuf::with_capacity(1024);
            let mut enc = loghose::producer::LogEncoder::begin(
                &mut buf,
                1_700_000_000,
                None,
                loghose::wire::keys::KeyPolicy::Service,
            );
            w.fill(&mut enc, n).unwrap();
            enc.finish(usize::MAX).unwrap();
            let decoded =
                <loghose::wire::proto::LogGroup as prost::Message>::decode(&buf[..]).unwrap();
            let written: Vec<(&str, &str)> = decoded.logs[0]
                .contents
                .iter()
                .map(|c| (c.key.as_str(), c.value.as_str()))
                .collect();
            let want: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            assert_eq!(written, want);
        }
        let lines = w.pool_lines();
        assert_eq!(lines.lines().count() as u64, S1R_POOL);
        assert!(lines.lines().all(|l| l.split('\t').count() == 10));
        // Distinct records, compressing 4–8:1 with lz4 as real access logs do.
        let batch: Vec<u8> = (0..4096u64)
            .flat_map(|n| {
                w.fields(n)
                    .into_iter()
                    .flat_map(|(k, v)| [k.as_bytes().to_vec(), v.into_bytes()])
                    .flatten()
            })
            .collect();
        let lz4 =
            loghose::wire::compress::compress(loghose::wire::compress::Compression::Lz4, &batch)
                .unwrap();
        let ratio = batch.len() as f64 / lz4.len() as f64;
        assert!((3.0..8.0).contains(&ratio), "lz4 ratio {ratio}");
    }
}
