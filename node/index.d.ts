// Types of the loghose Node.js facade (node/index.js).
import { EventEmitter } from 'node:events'

/** What a field value may be. Strings, numbers, booleans and bigints are stored as they are
 *  (numbers as every front writes them); Buffers as their UTF-8 text; `null` as `null`; a Date
 *  as ISO 8601; an Error as its stack; objects, arrays, Maps and Sets as compact JSON; an
 *  `undefined` field is left out; anything else goes through the `default` option. */
export type FieldValue = unknown
export type Contents = Record<string, FieldValue> | Array<[string, FieldValue]>

/** Credentials as a provider hands them out (the shape `@alicloud/log` providers resolve to). */
export interface Credentials {
  accessKeyId: string
  accessKeySecret: string
  securityToken?: string | null
}

/** Supplies credentials; asked before every attempt to send (see `credentialsProvider`). */
export interface CredentialsProvider {
  getCredentials(): Credentials | Promise<Credentials>
}

/** Every option of a producer; units in the names (`Ms` milliseconds, `Bytes` bytes). */
export interface ProducerOptions {
  /** `https://{region}.log.aliyuncs.com` or `http://host:port` (e.g. the emulator's). Required. */
  endpoint: string
  /** Default project of records. Required. */
  project: string
  /** Default logstore of records. Required. */
  logstore: string
  /** AccessKeyId. With no credentials given at all, `ALIBABA_CLOUD_ACCESS_KEY_ID`,
   *  `ALIBABA_CLOUD_ACCESS_KEY_SECRET` and `ALIBABA_CLOUD_SECURITY_TOKEN` are read. */
  accessKeyId?: string
  /** AccessKeySecret. */
  accessKeySecret?: string
  /** STS security token, with a temporary key. */
  securityToken?: string
  /** API key sent as `Authorization: Bearer`; exclusive with access keys. */
  apiKey?: string
  /** Credentials asked before every attempt, so a token rotated between two retries is used;
   *  the answer applies from the next attempt on (the first attempt waits for the first answer). */
  credentialsProvider?: CredentialsProvider
  /** Signature version. Default 'v1'; 'v4' needs `region`. */
  signatureVersion?: 'v1' | 'v4'
  /** Region for signature v4, e.g. 'cn-hangzhou'. */
  region?: string
  /** Default topic (`__topic__`). Default ''. */
  topic?: string
  /** Default source (`__source__`). Default: this host's outbound IP address. */
  source?: string
  /** Tags added to every group. */
  tags?: Record<string, string> | Array<[string, string]>
  /** A batch seals at this many raw bytes. Default 4 MiB; 1 byte to 4 MiB. */
  batchMaxBytes?: number
  /** A batch seals at this many logs. Default 4096; 1 to 40 960. */
  batchMaxCount?: number
  /** A batch seals this long after its first log (ms). Default 2000. */
  lingerMs?: number
  /** Raw bytes held in all batches at most. Default 64 MiB. */
  bufferMaxBytes?: number
  /** How long a send waits for room in a full buffer (ms). Default 0: fail at once. */
  maxBlockMs?: number
  /** Batches being sent at once. Default 8; 1 to 1024. */
  sendConcurrency?: number
  /** Body compression. Default 'lz4'. */
  compression?: 'lz4' | 'zstd' | 'deflate' | 'none'
  /** TCP connect timeout (ms). Default 10 000. */
  connectTimeoutMs?: number
  /** Whole-request timeout (ms). Default 15 000. */
  requestTimeoutMs?: number
  /** Attempts per batch, the first included. Default 10; 1 means no retry. */
  maxAttempts?: number
  /** First retry delay (ms), doubled per attempt with jitter. Default 200. */
  backoffBaseMs?: number
  /** Longest retry delay (ms). Default 10 000. */
  backoffMaxMs?: number
  /** A batch not delivered this long after its first log fails (ms). Default 600 000. */
  deliveryTimeoutMs?: number
  /** Extra attempts after a 401 (credentials may rotate meanwhile). Default 3. */
  unauthorizedAttempts?: number
  /** PEM file of an extra CA to trust for HTTPS. Default none. */
  caFile?: string
  /** Connect to this `host:port` whatever the endpoint resolves to. Default none. */
  remoteAddress?: string
  /** Map shard keys into `shardBuckets` buckets, as the vendor producers do. Default false. */
  adjustShardHash?: boolean
  /** Buckets for `adjustShardHash`, a power of two from 1 to 256. Default 64. */
  shardBuckets?: number
  /** Add the `__pack_id__` tag (stable across retries). Default true. */
  packId?: boolean
  /** Which field keys are accepted: 'service' (what the service takes, default) or 'strict'. */
  keyPolicy?: 'service' | 'strict'
  /** How long closing at environment exit waits for delivery (ms). Default 2000. */
  dropTimeoutMs?: number
  /** A directory where accepted records are kept until delivered: a killed process loses
   *  nothing, the next producer on the directory sends what was left. Producers (the workers
   *  of a cluster, say) share it: each takes a slot directory of its own under it. Default: none. */
  spoolDir?: string
  /** How many producers may hold a slot of `spoolDir` at once (default 64, 1 to 1024); one
   *  more is refused with a `SpoolLockedError`. */
  spoolSlots?: number
  /** Bytes of spool files at most, per producer (default 1 GiB); beyond it sends fail or wait like a full buffer. */
  spoolMaxBytes?: number
  /** 'none' (default: survives the process), 'batch' (synced as each batch seals) or 'interval:<ms>'. */
  spoolSync?: string
  /** On SIGTERM or SIGINT, deliver what is held for at most this long (ms), then let the
   *  signal take its usual course: the process still ends by it, or the application's own
   *  listeners decide. 0 turns this off. Default 5000. */
  closeOnSignalMs?: number
  /** How much of each log's time is written: 's' (seconds), 'ms' or 'ns' (default). Fewer
   *  sub-second digits compress better: consecutive records share them. */
  timePrecision?: 's' | 'ms' | 'ns'
  /** How long pending records keep the process alive without progress (ms). Default 5000. */
  exitTimeoutMs?: number
  /** Emit a 'stats' event this often (ms); 0 or absent: never. */
  statsIntervalMs?: number
  /** Converts a value that has no text form of its own (a function, a symbol), as
   *  `JSON.stringify`'s replacer would; its result is converted again. Default: none (a
   *  TypeError naming the field). */
  default?: (value: unknown) => unknown
}

export interface SendOptions {
  topic?: string
  source?: string
  /** Unix seconds (fractions become the nanosecond part). */
  time?: number
  shardKey?: string
  project?: string
  logstore?: string
}

export interface DeliveryReport {
  batchId: number
  project: string
  logstore: string
  delivered: boolean
  /** Not delivered before the producer closed, and kept in the spool: the next producer on
   *  `spoolDir` sends it (`code` is `'KeptInSpool'`). Not a failure. */
  kept: boolean
  code: string | null
  message: string | null
  httpStatus: number | null
  attempts: number
  requestId: string | null
  records: number
  rawBytes: number
  compressedBytes: number
  latencyMs: number
  packId: string
  tickets: number[]
  /** Sent again from a spool an earlier producer left. */
  replayed: boolean
}

/** What `close()` resolves with. */
export interface CloseResult {
  /** Records neither delivered nor kept: failed for good, or given up without a spool (0: nothing lost). */
  undelivered: number
  /** Records not delivered before the timeout and left in the spool for the next producer on `spoolDir`. */
  kept: number
  /** The reports of the batches that failed. */
  failed: DeliveryReport[]
}

export interface Stats {
  accepted: number
  delivered: number
  failed: number
  /** Records left in the spool at close, for the next producer on `spoolDir`. */
  kept: number
  retried: number
  dropped: number
  invalid: number
  queuedBytes: number
  queuedRecords: number
  inFlightBatches: number
  batchesDelivered: number
  /** Records failed for good, by error code. */
  failuresByCode: Record<string, number>
  callbackErrors: number
  replayedBatches: number
  replayedRecords: number
  spoolCorruptEntries: number
  spoolBytes: number
}

export declare class LoghoseError extends Error {
  code?: string
}
export declare class ConfigError extends LoghoseError {}
export declare class InvalidRecordError extends LoghoseError {}
export declare class BufferFullError extends LoghoseError {}
export declare class ProducerClosedError extends LoghoseError {}
/** Every slot of `spoolDir` is held by another producer (see `spoolSlots`); the message names
 *  the directory and a holder's pid. */
export declare class SpoolLockedError extends LoghoseError {}
export declare class DeliveryError extends LoghoseError {
  requestId: string | null
  httpStatus: number | null
  attempts: number
  report: DeliveryReport
}

export declare class Producer extends EventEmitter {
  constructor(options: ProducerOptions)
  static fromPreset(preset: 'server' | 'pi', options: ProducerOptions): Producer
  /** The options a preset sets, to merge into options given elsewhere. */
  static presetOptions(preset: 'server' | 'pi'): Partial<ProducerOptions>
  send(contents: Contents, opts?: SendOptions): void
  sendAsync(contents: Contents, opts?: SendOptions): Promise<DeliveryReport>
  /**
   * Queues every record, or none of them; returns how many were queued. All or nothing: every
   * record is checked before any is queued, so a caller who retries a failed call sends
   * nothing twice. A record that cannot be sent throws (`TypeError` or `InvalidRecordError`,
   * its message starting `record N:`); a buffer without room for all of them throws
   * `BufferFullError`. Either way nothing is queued, and the refused records are counted.
   */
  sendMany(records: Iterable<Contents>): number
  /** Sends everything queued and waits up to `timeoutMs` (default 60000); resolves with the
   *  records not delivered: still pending, plus those that failed for good since the previous
   *  flush. 0 means everything sent was delivered. */
  flush(timeoutMs?: number): Promise<number>
  /** Whether `close` was called. */
  readonly closed: boolean
  close(options?: { timeoutMs?: number }): Promise<CloseResult>
  stats(): Stats
  on(event: 'delivery', listener: (reports: DeliveryReport[]) => void): this
  on(event: 'error', listener: (error: unknown) => void): this
  on(event: 'stats', listener: (stats: Stats) => void): this
  [Symbol.asyncDispose](): Promise<void>
}

export interface EmulatorOptions {
  port?: number
  shardCount?: number
  autoCreate?: boolean
  retentionBytes?: number
  clockOffsetSecs?: number
  keyPolicy?: 'service' | 'strict'
  /** Most logstores held at once (auto-create stops there). Default 1 000. */
  maxLogstores?: number
  /** Temporary keys accepted with their tokens. */
  stsKeys?: Array<{ id: string; secret: string; token: string }>
}

export interface StoredLog {
  shard: number
  time: number
  timeNs: number | null
  topic: string | null
  source: string | null
  tags: Array<[string, string]>
  contents: Array<[string, string]>
}

export declare class Emulator {
  constructor(config?: EmulatorOptions)
  readonly endpoint: string
  readonly accessKeyId: string
  readonly accessKeySecret: string
  producerOptions(project?: string, logstore?: string): ProducerOptions
  logs(project: string, logstore: string): StoredLog[]
  totals(project: string, logstore: string): { logs: number; groups: number; retainedGroups: number } | null
  counters(): Record<string, unknown>
  /** Adds a fault; `store_then_error` / `store_then_reset` store the batch and then fail the
   *  answer (a retry makes a duplicate, counted in `counters().duplicate_groups`). */
  inject(kind: 'error' | 'latency' | 'reset' | 'hang' | 'store_then_error' | 'store_then_reset', fault?: Record<string, unknown>): void
  clearFaults(): void
  /** Replaces the temporary (STS) keys: requests signed with a key no longer listed get 401. */
  replaceStsKeys(keys: Array<{ id: string; secret: string; token: string }>): void
  reset(): void
  createLogstore(project: string, logstore: string, shards?: number): void
  close(): void
  [Symbol.dispose](): void
}

/** A pino destination on the main thread: `pino(options, pinoDestination(producerOptions))`.
 *  Each line becomes one log (time, level label, every key a field). */
export declare function pinoDestination(options: ProducerOptions | Producer): {
  readonly producer: Producer
  write(chunk: string): boolean
  /** Resolves with the records not delivered (0: all delivered). */
  flush(callback?: (err?: unknown) => void): Promise<number>
  /** Delivers what is pending and closes the producer. */
  end(callback?: (err?: unknown) => void): Promise<CloseResult>
}

export declare function engineVersion(): string
