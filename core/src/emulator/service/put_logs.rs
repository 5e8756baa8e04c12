//! PutLogs: every check the service makes, in its order, then the store. The first failure
//! refuses the whole request; nothing of a refused request is stored.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use hyper::http::{Response, StatusCode};

use super::{codec_error, missing, scan_error, unix_now, Head, Service, DECODE_SCRATCH};
use crate::emulator::error::ApiError;
use crate::emulator::quotas::Throttled;
use crate::emulator::store::{Placement, Refused, StoredGroup};
use crate::wire::compress::{self, Compression};
use crate::wire::hashkey;
use crate::wire::limits::MAX_RAW_BODY_BYTES;
use crate::wire::scan;

/// The decompression area each server thread keeps between requests.
const KEPT_SCRATCH_BYTES: usize = 4 * 1024 * 1024;

/// Shrinks the decompression area back to [`KEPT_SCRATCH_BYTES`] when dropped.
struct ShrinkAfter<'a>(&'a mut Vec<u8>);

impl Drop for ShrinkAfter<'_> {
    fn drop(&mut self) {
        if self.0.capacity() > KEPT_SCRATCH_BYTES {
            *self.0 = Vec::new();
        }
    }
}

/// The identity of a pack id: a hash of where it was written and its value.
fn pack_id_key(project: &str, logstore: &str, pack_id: &[u8]) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::hash::DefaultHasher::new();
    (project, logstore, pack_id).hash(&mut hasher);
    hasher.finish()
}

/// The pack ids of the last [`PackIds::CAPACITY`] accepted groups that carried one, to count
/// groups accepted twice (a producer's retry of a batch the emulator had already stored).
#[derive(Default)]
pub(crate) struct PackIds {
    seen: std::collections::HashSet<u64>,
    order: std::collections::VecDeque<u64>,
}

impl PackIds {
    /// How many pack ids are remembered (about 6 MiB at most).
    const CAPACITY: usize = 1 << 18;

    /// Remembers `keys`; answers how many were already known.
    pub(crate) fn record(&mut self, keys: &[u64]) -> u64 {
        let mut duplicates = 0;
        for &key in keys {
            if !self.seen.insert(key) {
                duplicates += 1;
                continue;
            }
            self.order.push_back(key);
            if self.order.len() > Self::CAPACITY {
                if let Some(old) = self.order.pop_front() {
                    self.seen.remove(&old);
                }
            }
        }
        duplicates
    }

    pub(crate) fn clear(&mut self) {
        *self = PackIds::default();
    }
}

impl Service {
    pub(super) fn put_logs(
        &self,
        head: &Head<'_>,
        logstore: &str,
        body: Bytes,
    ) -> Result<Response<Bytes>, ApiError> {
        self.counters.put_requests.fetch_add(1, Ordering::Relaxed);
        Self::check_api_version(head)?;
        match head.header("content-type") {
            None => {
                return Err(ApiError::bad_request(
                    "MissingContentType",
                    "Content-Type is missing",
                ))
            }
            Some(t) if !t.trim().eq_ignore_ascii_case("application/x-protobuf") => {
                return Err(ApiError::bad_request(
                    "InvalidContentType",
                    format!("Content-Type {t} is not application/x-protobuf"),
                ))
            }
            Some(_) => {}
        }
        if head.header("content-length").is_none() {
            return Err(ApiError::new(
                StatusCode::LENGTH_REQUIRED,
                "MissingContentLength",
                "Content-Length is missing",
            ));
        }
        let body_signed = self.authenticate(head, &body)?;
        let project = self.project_of(head.header("host"));
        self.store
            .ensure(&project, logstore, unix_now())
            .map_err(|m| missing(m, &project, logstore))?;

        let raw_size: usize = match head.header("x-log-bodyrawsize") {
            None => {
                return Err(ApiError::bad_request(
                    "MissingBodyRawSize",
                    "x-log-bodyrawsize is missing",
                ))
            }
            // Decimal digits only: Rust's parse would also take a sign (`+22`).
            Some(v) => v
                .trim()
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| v.trim().parse().ok())
                .flatten()
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "InvalidBodyRawSize",
                        format!("x-log-bodyrawsize {v:?} is not a number"),
                    )
                })?,
        };
        if raw_size > MAX_RAW_BODY_BYTES {
            return Err(ApiError::bad_request(
                "PostBodyTooLarge",
                format!("body raw size {raw_size} exceeds the limit of {MAX_RAW_BODY_BYTES} bytes"),
            ));
        }
        Self::check_content_md5(head, &body, body_signed)?;
        let codec =
            Compression::from_header(head.header("x-log-compresstype")).map_err(codec_error)?;
        let hash_key = head.param("key").or_else(|| head.header("x-log-hashkey"));
        let placement = match hash_key {
            None => Placement::LoadBalance,
            Some(k) => Placement::HashKey(hashkey::parse(k.trim()).ok_or_else(|| {
                ApiError::bad_request(
                    "ParameterInvalid",
                    format!("hash key {k:?} is not 1 to 32 hex digits"),
                )
            })?),
        };
        let pack_key = |pack_id: &[u8]| pack_id_key(&project, logstore, pack_id);
        let mut pack_ids = Vec::new();
        let groups = DECODE_SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            // Kept between requests up to the size of a usual batch; a rare larger body's
            // area is given back after it.
            let scratch = ShrinkAfter(&mut scratch);
            let raw = compress::decompress_into(codec, &body, raw_size, &mut *scratch.0)
                .map_err(codec_error)?;
            let received = unix_now();
            let policy = self.config.key_policy;
            if head.header("x-log-mode") == Some("batch_group") {
                // Each group of the list is kept on its own, so these are kept uncompressed.
                let raw = Bytes::copy_from_slice(raw);
                Ok(scan::scan_log_group_list(&raw, policy)
                    .map_err(scan_error)?
                    .into_iter()
                    .map(|(range, summary)| {
                        if let Some((a, b)) = summary.pack_id {
                            pack_ids.push(pack_key(&raw[a..b]));
                        }
                        (range, summary)
                    })
                    .map(|(range, summary)| StoredGroup {
                        raw_size: range.len(),
                        body: raw.slice(range),
                        codec: Compression::None,
                        received,
                        logs: summary.logs,
                    })
                    .collect::<Vec<_>>())
            } else {
                let summary = scan::scan_log_group(raw, policy).map_err(scan_error)?;
                if let Some((a, b)) = summary.pack_id {
                    pack_ids.push(pack_key(&raw[a..b]));
                }
                Ok(vec![StoredGroup {
                    body: body.clone(),
                    codec,
                    raw_size,
                    received,
                    logs: summary.logs,
                }])
            }
        })?;
        let logs: u64 = groups.iter().map(|g| u64::from(g.logs)).sum();
        let group_count = groups.len() as u64;
        let quotas = &self.quotas;
        let quota = |reason: Throttled| {
            ApiError::new(
                StatusCode::FORBIDDEN,
                reason.code(),
                reason.message(&quotas.config()),
            )
        };
        let checked = quotas.is_set();
        if checked {
            quotas.admit_project(&project, raw_size).map_err(quota)?;
        }
        let stored = self
            .store
            .append_admitted(&project, logstore, placement, groups, |shard| {
                if checked {
                    quotas.admit_shard(&project, logstore, shard, raw_size)
                } else {
                    Ok(())
                }
            });
        match stored {
            Ok(_) => {}
            Err(Refused::Missing(m)) => return Err(missing(m, &project, logstore)),
            Err(Refused::Throttled { reason, may_split }) => {
                if quotas.shards_refused(&project, logstore, reason, may_split) {
                    self.store.add_shard(&project, logstore);
                }
                return Err(quota(reason));
            }
        }

        let c = &self.counters;
        let duplicates = self.pack_ids.lock().record(&pack_ids);
        c.duplicate_groups.fetch_add(duplicates, Ordering::Relaxed);
        c.accepted_requests.fetch_add(1, Ordering::Relaxed);
        c.logs.fetch_add(logs, Ordering::Relaxed);
        c.log_groups.fetch_add(group_count, Ordering::Relaxed);
        c.raw_bytes.fetch_add(raw_size as u64, Ordering::Relaxed);
        c.compressed_bytes
            .fetch_add(body.len() as u64, Ordering::Relaxed);
        Ok(Response::new(Bytes::new()))
    }
}
