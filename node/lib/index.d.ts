// Types of the loghose Node.js facade (node/lib/index.js).
import { EventEmitter } from 'node:events'
// Reports and the emulator's answers: generated from the addon's Rust types
// (node/src/views.rs).
import type { DeliveryReport, EmulatorCounters, LogstoreTotals } from './native'
export type { DeliveryReport, EmulatorCounters, LogstoreTotals }

/** A log as the emulator stored it (the engine's JSON, as Python reads it too). */
export interface StoredLog {
  /** Shard it was stored in. */
  shard: number
  /** Unix seconds. */
  time: number
  /** Nanosecond part, when sent. */
  timeNs?: number
  /** Group topic (absent when the group had none). */
  topic?: string
  /** Group source. */
  source?: string
  /** Group tags, in order. */
  tags: Array<[string, string]>
  /** Fields, in order. */
  contents: Array<[string, string]>
}

/** A producer's counters: the engine's (`loghose::producer::Stats`, the names Python reads),
 *  camelCased. tests-js/producer.test.js checks that these are exactly the names `stats()` has. */
export interface Stats {
  /** Records accepted by `send`. */
  accepted: number
  /** Records delivered. */
  delivered: number
  /** Records in batches that failed for good. */
  failed: number
  /** Records left in the spool at close, for the next producer on `spoolDir`. */
  kept: number
  /** Retry attempts made (attempts beyond each batch's first). */
  retried: number
  /** Records refused because the buffer was full (never accepted; the caller was told). */
  dropped: number
  /** Records refused as invalid (never accepted; the caller was told). */
  invalid: number
  /** Raw bytes held now (open, sealed, in flight, retrying). */
  queuedBytes: number
  /** Records accepted and not yet at a final outcome. */
  queuedRecords: number
  /** Batches being sent or waiting to retry now. */
  inFlightBatches: number
  /** Records in those batches. */
  inFlightRecords: number
  /** Batches delivered. */
  batchesDelivered: number
  /** Records failed for good, by error code. */
  failuresByCode: Record<string, number>
  /** Report listeners that threw (the producer lives on). */
  callbackErrors: number
  /** Batches an earlier producer left in the spool, sent again by this one. */
  replayedBatches: number
  /** Records in those batches. */
  replayedRecords: number
  /** Spool entries found torn or corrupted when the spool was opened, and skipped. */
  spoolCorruptEntries: number
  /** Bytes of spool files on disk now. */
  spoolBytes: number
  /**
   * Syncs of spool files or directories the disk failed (each file is then written again
   * elsewhere and never reused).
   */
  spoolSyncFailures: number
  /**
   * Records sent while their spool copy could not be made durable (the disk kept failing
   * its syncs): a power loss before their delivery would have lost them.
   */
  spoolNotDurable: number
  /** The spool's last needed sync failed: records are not durable until one succeeds. */
  spoolDegraded: boolean
  /** Per destination sent to, in name order: its adaptive concurrency and pace. */
  sendLimits: SendLimit[]
}

/** One destination's send concurrency, as `stats().sendLimits` shows it. */
export interface SendLimit {
  /** The destination's project. */
  project: string
  /** The destination's logstore. */
  logstore: string
  /** Batches it may have in flight now (`sendConcurrencyMode` adaptive: learnt; fixed: `sendConcurrency`). */
  limit: number
  /** Batches in flight now (sent, or delivered and not yet settled). */
  sending: number
  /** Raw bytes per second its requests are paced to since the service pushed back; 0 when not paced. */
  pace: number
  /** Answers that pushed back (403, 429, 503, a timeout) so far. */
  pushedBack: number
  /** Times its concurrency was cut. */
  cuts: number
  /** Baseline round trip in milliseconds (0 until one is known). */
  rttMs: number
}

/** What a field value may be. Strings, numbers, booleans and bigints are stored as they are
 *  (numbers as every front writes them); Buffers as their UTF-8 text; `null` as `null`; a Date
 *  as ISO 8601; an Error as its stack; objects, arrays, Maps and Sets as compact JSON; an
 *  `undefined` field is left out; anything else goes through the `default` option. */
export type FieldValue = unknown
/** A record's fields: an object (its own enumerable keys, in order) or `[key, value]` pairs. */
export type Contents = Record<string, FieldValue> | Array<[string, FieldValue]>

/** Credentials as a provider hands them out (the shape `@alicloud/log` providers resolve to). */
export interface Credentials {
  /** The access key id. */
  accessKeyId: string
  /** Its secret. */
  accessKeySecret: string
  /** The STS token of a temporary key; none for a long-lived key. */
  securityToken?: string | null
}

/** Supplies credentials; asked before every attempt to send (see `credentialsProvider`). */
export interface CredentialsProvider {
  /** The credentials to sign the next attempt with (may be cached and refreshed by the provider). */
  getCredentials(): Credentials | Promise<Credentials>
}

/** Every option of a producer; units in the names (`Ms` milliseconds, `Bytes` bytes). Generated
 *  from the engine's table of options, as docs/configuration.md is. */
export interface ProducerOptions {
  // BEGIN options generated from the table of options
  /** Service endpoint, `http://` or `https://` (scheme optional, `http` by default), e.g.
   *  `https://cn-hangzhou.log.aliyuncs.com` or the emulator's `http://127.0.0.1:PORT`. A host name
   *  is addressed as `{project}.{host}`; an IP address is connected to directly with `Host:
   *  {project}.{ip}`. Required.
   */
  endpoint: string
  /** Default project of records. Required, 3 to 63 of [a-z0-9-], beginning and ending with a letter
   *  or digit.
   */
  project: string
  /** Default logstore of records. Required, 3 to 63 of [a-z0-9_-], beginning and ending with a
   *  letter or digit.
   */
  logstore: string
  /** AccessKeyId (with `accessKeySecret`), unless `apiKey` or a credentials provider is used. With
   *  no credentials given at all, the default credential chain finds them:
   *  `ALIBABA_CLOUD_ACCESS_KEY_ID`, `ALIBABA_CLOUD_ACCESS_KEY_SECRET` and
   *  `ALIBABA_CLOUD_SECURITY_TOKEN`, then an OIDC role, the CLI's and the shared profile files, the
   *  ECS instance role, `ALIBABA_CLOUD_CREDENTIALS_URI` (docs/credentials.md). Default empty.
   */
  accessKeyId?: string
  /** AccessKeySecret. Default empty. */
  accessKeySecret?: string
  /** STS security token, with a temporary key. Default none. */
  securityToken?: string
  /** API key sent as `Authorization: Bearer`; exclusive with access keys. Default none. */
  apiKey?: string
  /** Signature version: `v1` (HMAC-SHA1, every SDK's default) or `v4` (SLS4-HMAC-SHA256, needs
   *  `region`). Default `v1`.
   */
  signatureVersion?: 'v1' | 'v4'
  /** Region for signature v4, e.g. `cn-hangzhou`. Default none. */
  region?: string
  /** Default topic (`__topic__`). Default empty. Up to 128 bytes. */
  topic?: string
  /** Default source (`__source__`). When absent: this host's outbound IP address. Default none. Up
   *  to 128 bytes.
   */
  source?: string
  /** Tags added to every group, in order, before `__pack_id__`. Keys are 1 to 128 bytes and not
   *  `__pack_id__`. Default none.
   */
  tags?: Record<string, string> | Array<[string, string]>
  /** A batch seals when its raw (uncompressed) size reaches this many bytes (the service takes log
   *  groups of up to 5 MiB; the rest is room for topic, source and tags). Default 3 MiB. 1 byte to
   *  4 MiB.
   */
  batchMaxBytes?: number
  /** A batch seals when it holds this many logs. Default 4096. 1 to 40 960. */
  batchMaxCount?: number
  /** A batch seals this long after its first log; 0 sends every add at once. Default 2000 ms. 0 ms
   *  to 1 h.
   */
  lingerMs?: number
  /** Raw bytes held in open, sealed, in-flight and retrying batches at most. Default 64 MiB. 1 byte
   *  to 1 TiB, at least `batchMaxBytes`.
   */
  bufferMaxBytes?: number
  /** When the buffer is full, an add waits up to this long for room, then fails with `BufferFull`.
   *  0: fail at once, never block the caller. Default 0 ms. 0 ms to 1 h.
   */
  maxBlockMs?: number
  /** The fewest batches at once an adaptive destination (`sendConcurrencyMode`) is cut to. Default
   *  1. 1 to 1024.
   */
  sendConcurrencyMin?: number
  /** Batches being sent at once, over every destination; with `sendConcurrencyMode` `adaptive`,
   *  also the most one destination may be given. Default 8. 1 to 1024, at least
   *  `sendConcurrencyMin`.
   */
  sendConcurrency?: number
  /** `adaptive`: each destination (project and logstore) is given as many batches at once as its
   *  round trips allow, from 2, doubling while they stay flat, halved when the service pushes back
   *  (403, 429, 503, a timeout) and cut by a tenth when round trips rise; after a push back its
   *  requests are also paced to a rate that grows back slowly (docs/network.md). `fixed`: always
   *  `sendConcurrency`, never paced. Default `adaptive`.
   */
  sendConcurrencyMode?: 'adaptive' | 'fixed'
  /** Body compression. Default `lz4`. */
  compression?: 'lz4' | 'zstd' | 'deflate' | 'none'
  /** TCP connect timeout. Default 10 s. 1 ms to 10 min. */
  connectTimeoutMs?: number
  /** Whole-request timeout. Default 15 s. 1 ms to 1 h. */
  requestTimeoutMs?: number
  /** Attempts per batch, the first included; 1 means no retry. Default 10. 1 to 1 000 000. */
  maxAttempts?: number
  /** First retry delay (full jitter: each delay is random in `[0, min(cap, base·2^n)]`; after a
   *  quota answer (403, 429) at least 500 ms, spread over as much again). Default 200 ms. 1 ms to 1
   *  h.
   */
  backoffBaseMs?: number
  /** Longest retry delay. Default 10 s. 1 ms to 1 h, at least `backoffBaseMs`. */
  backoffMaxMs?: number
  /** A batch not delivered this long after its first log fails. Default 10 min. 1 ms to 30 days. */
  deliveryTimeoutMs?: number
  /** Extra attempts after a 401 (credentials may rotate meanwhile). Default 3. 0 to 1000. */
  unauthorizedAttempts?: number
  /** PEM file of an extra CA to trust for HTTPS (certificate checks stay on). Default none. */
  caFile?: string
  /** Connect to this `host:port` whatever the endpoint resolves to (the request keeps its Host).
   *  Default none.
   */
  remoteAddress?: string
  /** Map shard keys onto `shardBuckets` evenly spread hash keys (md5), as the Go and Java producers
   *  do. Off: shard keys are sent as given (hex). Default `false`.
   */
  adjustShardHash?: boolean
  /** Buckets for `adjustShardHash`. Default 64. A power of two, 1 to 256. */
  shardBuckets?: number
  /** Add the `__pack_id__` tag (`PREFIX-SEQ`), stable across retries. Default `true`. */
  packId?: boolean
  /** Which field keys an add accepts: `service` (what the service accepts: 1 to 128 bytes of UTF-8
   *  without control characters, not a reserved name) or `strict` (also `[A-Za-z_][A-Za-z0-9_]*`).
   *  Default `service`.
   */
  keyPolicy?: 'service' | 'strict'
  /** How long dropping a producer (Rust), or closing it when the environment exits (Node), waits
   *  for delivery. Default 2000 ms. 0 ms to 10 min.
   */
  dropTimeoutMs?: number
  /** A directory where every accepted record is also kept until its batch is delivered, so that a
   *  killed process loses nothing: the next producer opened on the directory sends what was left.
   *  Producers share it: each takes a slot directory of its own under it (`slot-<n>`), so the
   *  worker processes of a pre-fork server can all be given the same `spoolDir`; what a process
   *  that died left in its slot is sent by the next producer that takes the slot, or within about a
   *  second by a live producer on the same directory that finds it unheld. Created private to the
   *  user (0700, files 0600). Absent: memory only. Default none.
   */
  spoolDir?: string
  /** How many producers may hold a slot of `spoolDir` at once; one more is refused with the
   *  spool-locked error naming the directory and a holder's pid (1: one producer per directory).
   *  Default 64. 1 to 1024.
   */
  spoolSlots?: number
  /** Most bytes of spool files on disk, per producer (per slot); beyond it records wait or fail as
   *  for a full buffer. Default 1 GiB. 1 MiB to 1 PiB.
   */
  spoolMaxBytes?: number
  /** How far the spool is synced to disk: `none` (survives the process's death, not a power loss),
   *  `batch` (each batch synced before it is sent; when the disk fails the sync, written again on a
   *  fresh file) or `interval:<ms>` (a power loss loses at most the last interval). Whatever it
   *  says, a close that leaves records in the spool syncs them first, and a clean close syncs the
   *  directory after deleting its files. Default `none`.
   */
  spoolSync?: 'none' | 'batch' | `interval:${number}`
  /** How long the Python and Node fronts spend delivering what is held when the process gets
   *  SIGTERM or SIGINT, before letting the signal take its usual course (the application's own
   *  handler, or the default: the process ends by that signal). 0 turns the handling off. The Rust
   *  engine itself installs no handler: a Rust application calls `close` from its own. Default 5000
   *  ms. 0 ms to 10 min.
   */
  closeOnSignalMs?: number
  /** How much of each log's time is written: `s` (seconds only, what the vendor's C producer
   *  writes; reads the coarse clock), `ms` or `ns`. Fewer sub-second digits compress better when
   *  many records share a millisecond; `ns` keeps the order of records within one. Default `ns`.
   */
  timePrecision?: 's' | 'ms' | 'ns'
  /** Credentials asked before every attempt, so a token rotated between two retries is used; the
   *  answer applies from the next attempt on (the first attempt waits for the first answer).
   *  Default none.
   */
  credentialsProvider?: CredentialsProvider
  /** How long pending records keep the process alive without progress, in milliseconds. Default
   *  5000.
   */
  exitTimeoutMs?: number
  /** Emit a `stats` event this often, in milliseconds; 0: never. Default 0. */
  statsIntervalMs?: number
  /** Converts a value that has no text form of its own (a function, a symbol), as
   *  `JSON.stringify`'s replacer would; its result is converted again. None: a TypeError naming the
   *  field. Default none.
   */
  default?: (value: unknown) => unknown
  // END options generated from the table of options
}

/** Per-record options of `send` and `sendAsync`: what differs from the producer's own. */
export interface SendOptions {
  /** The record's topic (`__topic__`) instead of the producer's `topic`. */
  topic?: string
  /** The record's source (`__source__`) instead of the producer's `source`. */
  source?: string
  /** Unix seconds (fractions become the nanosecond part). */
  time?: number
  /** A hash key: the record goes to the shard whose range holds it (records of one key stay in order). */
  shardKey?: string
  /** Another project than the producer's. */
  project?: string
  /** Another logstore than the producer's. */
  logstore?: string
}

/** What `close()` resolves with. */
export interface CloseResult {
  /** Records neither delivered nor kept: failed for good, or given up without a spool (0: nothing lost). */
  undelivered: number
  /** Records not delivered before the timeout and left in the spool for the next producer on `spoolDir`
   *  (the close syncs them to disk, whatever `spoolSync` says). */
  kept: number
  /** Of the `kept` records, those not known to be durable: the disk failed a sync of the files that hold
   *  them, so a power loss could lose them. Nothing was lost when `undelivered + keptNotDurable` is 0. */
  keptNotDurable: number
  /** The reports of the batches that failed. */
  failed: DeliveryReport[]
  /** Records sent while no copy of them in the spool was durable (the disk failed its syncs;
   *  `stats().spoolNotDurable`): a power loss before their delivery would have lost them. */
  notDurable: number
}

/** Every error loghose throws or rejects with. */
export declare class LoghoseError extends Error {
  /** What kind of error: `ConfigError`, `InvalidRecord`, `BufferFull`, the service's error code... */
  code?: string
}
/** An option is unknown or invalid; the message names it, with its type and unit. */
export declare class ConfigError extends LoghoseError {
  /** `ConfigError`. */
  code?: string
}
/** A record the service would refuse (a key, a value, a size); the message names what is wrong. Nothing was queued. */
export declare class InvalidRecordError extends LoghoseError {
  /** `InvalidRecord`. */
  code?: string
}
/** The buffer (or the spool) had no room, at once or within `maxBlockMs`. Nothing was queued; the record is counted as dropped. */
export declare class BufferFullError extends LoghoseError {
  /** `BufferFull`. */
  code?: string
}
/** The producer is closed (or was inherited by a worker thread or process that does not own it). */
export declare class ProducerClosedError extends LoghoseError {
  /** `ProducerClosed`. */
  code?: string
}
/** Every slot of `spoolDir` is held by another producer (see `spoolSlots`); the message names
 *  the directory and a holder's pid. */
export declare class SpoolLockedError extends LoghoseError {
  /** `SpoolLocked`. */
  code?: string
}
/** A record's batch failed for good (`sendAsync` rejects with it); `code` is the service's error
 *  code or the producer's own (`RequestTimeout`, `ProducerClosed`, `KeptInSpool`...). */
export declare class DeliveryError extends LoghoseError {
  /** The last answer's `x-log-requestid`. */
  requestId: string | null
  /** The last answer's HTTP status. */
  httpStatus: number | null
  /** Requests made for the batch. */
  attempts: number
  /** The batch's report. */
  report: DeliveryReport
  /** The error code. */
  code?: string
}

/** Batches, compresses, signs and ships records to Log Service; see {@link ProducerOptions} for
 *  every option. Emits `delivery` (batches of reports), `error` (a report listener threw) and
 *  `stats` (with `statsIntervalMs`). */
export declare class Producer extends EventEmitter {
  /** A producer; throws {@link ConfigError} naming an unknown or invalid option. */
  constructor(options: ProducerOptions)
  /** A producer with the `server` or `pi` batching preset, then `options`. */
  static fromPreset(preset: 'server' | 'pi', options: ProducerOptions): Producer
  /** The options a preset sets, to merge into options given elsewhere. */
  static presetOptions(preset: 'server' | 'pi'): Partial<ProducerOptions>
  /**
   * Queues one record (fire and forget; `sendAsync` for its outcome). A plain object whose keys,
   * in order, were sent before (the producer remembers 64 key lists) crosses as its values alone.
   */
  send(contents: Contents, opts?: SendOptions): void
  /** Queues one record; resolves with its batch's report once delivered, or rejects with a
   *  {@link DeliveryError} when the batch failed for good. */
  sendAsync(contents: Contents, opts?: SendOptions): Promise<DeliveryReport>
  /**
   * Queues every record, or none of them; returns how many were queued. All or nothing: every
   * record is checked before any is queued, so a caller who retries a failed call sends
   * nothing twice. A record that cannot be sent throws (`TypeError` or `InvalidRecordError`,
   * its message starting `record N:`); a buffer without room for all of them throws
   * `BufferFullError`. Either way nothing is queued, and the refused records are counted.
   */
  sendMany(records: Iterable<Contents>): number
  /**
   * A function that sends records of these keys, given their values in order:
   * `const log = producer.sender(['level', 'msg'])` then `log('info', 'signed in')` sends what
   * `producer.send({ level: 'info', msg: 'signed in' })` sends, for less work a record (keys
   * checked and encoded once, no object built or read). A key the service would refuse throws
   * InvalidRecordError here; a call with another number of values throws TypeError.
   */
  sender(keys: readonly string[]): (...values: FieldValue[]) => void
  /** Queues the log of one JSON line as pino writes it: `time` (ms) is the log's time, `level`
   *  its label, every other key a field (nested values as compact JSON), parsed by the engine.
   *  A line that is not a JSON object is a TypeError; nothing is queued then. */
  sendJsonLine(line: string): void
  /** Sends everything queued and waits up to `timeoutMs` (default 60000); resolves with the
   *  records not delivered: still pending, plus those that failed for good since the previous
   *  flush. 0 means everything sent was delivered. */
  flush(timeoutMs?: number): Promise<number>
  /** Whether `close` was called. */
  readonly closed: boolean
  /** The endpoint's host and port (the scheme's when it names none), for monitoring. */
  readonly serverAddress: {
    /** The host. */
    address: string
    /** The port. */
    port: number
  }
  /** Refuses new records, waits up to `timeoutMs` (default 10000) for delivery, gives up on the
   *  rest; resolves with what became of them (nothing was lost when `undelivered +
   *  keptNotDurable` is 0). */
  close(options?: { timeoutMs?: number }): Promise<CloseResult>
  /** The counters now. */
  stats(): Stats
  /** A snapshot of the producer's metrics, one entry per metric of the engine's table (after
   *  close: as the close left them). `loghose/prometheus` registers them with prom-client. */
  metrics(): MetricFamily[]
  /** The metrics in the Prometheus text format, rendered by the engine (the fastest scrape);
   *  `constLabels` is added to every sample. Throws a TypeError for a label name Prometheus
   *  refuses or the metrics already carry. */
  metricsText(constLabels?: Record<string, string>): string
  /** Batches of delivery reports, as batches settle. */
  on(event: 'delivery', listener: (reports: DeliveryReport[]) => void): this
  /** A `delivery` listener threw (the producer lives on; counted in `stats().callbackErrors`). */
  on(event: 'error', listener: (error: unknown) => void): this
  /** The counters, every `statsIntervalMs`. */
  on(event: 'stats', listener: (stats: Stats) => void): this
  /** `await using producer = new Producer(...)`: closes it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void>
}

/** One metric of a {@link Producer.metrics} snapshot. */
export interface MetricFamily {
  /** The family name (`loghose_records_delivered`, `loghose_request_duration_seconds`). */
  name: string
  /** The name without its unit. */
  stem: string
  /** The metric's type. */
  type: 'counter' | 'gauge' | 'histogram'
  /** `bytes`, `seconds` or empty. */
  unit: string
  /** What it counts. */
  help: string
  /** The names of its labels (`project`, `logstore`, `code`...). */
  labels: string[]
  /** Its values, one per combination of labels. */
  samples: MetricSample[]
}

/** One labelled value of a metric. */
export interface MetricSample {
  /** The sample's labels by name. */
  labels: Record<string, string>
  /** The count or gauge value (a histogram's count). */
  value: number
  /** A histogram's buckets: cumulative counts at each bound (seconds), all, and their sum. */
  histogram?: {
    /** The buckets' upper bounds, seconds. */
    bounds: number[]
    /** Observations at or below each bound. */
    cumulative: number[]
    /** Observations in all. */
    count: number
    /** Their sum, seconds. */
    sum: number
  }
}

/** How an {@link Emulator} is set up (every option has a default). */
export interface EmulatorOptions {
  /** The port on 127.0.0.1; 0 (the default) picks a free one. */
  port?: number
  /** Shards of a logstore made on first write. Default 2. */
  shardCount?: number
  /** Projects and logstores are made on first write. Default true. */
  autoCreate?: boolean
  /** Bytes of stored groups kept per logstore (the oldest go first). */
  retentionBytes?: number
  /** Seconds added to the emulator's clock (to test the service's date-skew check). Default 0. */
  clockOffsetSecs?: number
  /** Largest difference between a request's date and the emulator's clock it accepts, seconds
   *  (older or newer requests get `RequestTimeExpired`). Default 900, the service's. */
  maxClockSkewSecs?: number
  /** Field-key checks: the service's (`service`) or stricter ones (`strict`). Default `service`. */
  keyPolicy?: 'service' | 'strict'
  /** Most logstores held at once (auto-create stops there). Default 1 000. */
  maxLogstores?: number
  /** Temporary keys accepted with their tokens. */
  stsKeys?: Array<{
    /** The temporary key id. */
    id: string
    /** Its secret. */
    secret: string
    /** Its STS token. */
    token: string
  }>
  /** Seconds a key from the emulated STS or ECS metadata service lives. Default 3 600. */
  credentialsLifetimeSecs?: number
}

/** The embedded SLS emulator, in this process: a local Log Service on 127.0.0.1 that checks
 *  and stores what it is sent, for tests and offline development. */
export declare class Emulator {
  /** Starts an emulator. */
  constructor(config?: EmulatorOptions)
  /** Its URL (`http://127.0.0.1:PORT`). */
  readonly endpoint: string
  /** The access key id it accepts. */
  readonly accessKeyId: string
  /** The secret of {@link Emulator.accessKeyId}. */
  readonly accessKeySecret: string
  /** Options that point a Producer at this emulator (project `loghose`, logstore `logs` by default). */
  producerOptions(project?: string, logstore?: string): ProducerOptions
  /** The logs stored in a logstore, oldest first. */
  logs(project: string, logstore: string): StoredLog[]
  /** How many logs and groups a logstore holds (null when it does not exist). */
  totals(project: string, logstore: string): LogstoreTotals | null
  /** Requests, logs, bytes, rejects by error code, duplicates. */
  counters(): EmulatorCounters
  /** Adds a fault; `store_then_error` / `store_then_reset` store the batch and then fail the
   *  answer (a retry makes a duplicate, counted in `counters().duplicateGroups`). */
  inject(kind: 'error' | 'latency' | 'reset' | 'hang' | 'store_then_error' | 'store_then_reset', fault?: Record<string, unknown>): void
  /** Removes every injected fault. */
  clearFaults(): void
  /** Replaces the temporary (STS) keys: requests signed with a key no longer listed get 401. */
  replaceStsKeys(keys: Array<{ id: string; secret: string; token: string }>): void
  /** Forgets every stored log and counter, and clears the faults. */
  reset(): void
  /** Creates a logstore with `shards` shards (they are also made on first write). */
  createLogstore(project: string, logstore: string, shards?: number): void
  /** Stops the emulator. */
  close(): void
  /** `using emu = new Emulator()`: closes it at the end of the scope. */
  [Symbol.dispose](): void
}

/** A pino destination on the main thread: `pino(options, pinoDestination(producerOptions))`.
 *  Each line becomes one log (time, level label, every key a field). */
export declare function pinoDestination(options: ProducerOptions | Producer): {
  /** The producer it sends with. */
  readonly producer: Producer
  /** Sends one line pino wrote (pino calls it). */
  write(chunk: string): boolean
  /** Resolves with the records not delivered (0: all delivered). */
  flush(callback?: (err?: unknown) => void): Promise<number>
  /** Delivers what is pending and closes the producer. */
  end(callback?: (err?: unknown) => void): Promise<CloseResult>
}

/** The engine's version (the crate's, the wheel's and this package's: one version). */
export declare function engineVersion(): string
