// Types of the loghose Node.js facade (node/index.js).
import { EventEmitter } from 'node:events'

export type FieldValue = string | Buffer | Uint8Array | number | boolean | bigint
export type Contents = Record<string, FieldValue> | Array<[string, FieldValue]>

export interface ProducerOptions {
  endpoint: string
  project: string
  logstore: string
  accessKeyId?: string
  accessKeySecret?: string
  securityToken?: string
  apiKey?: string
  signatureVersion?: 'v1' | 'v4'
  region?: string
  topic?: string
  source?: string
  tags?: Record<string, string> | Array<[string, string]>
  batchMaxBytes?: number
  batchMaxCount?: number
  lingerMs?: number
  bufferMaxBytes?: number
  maxBlockMs?: number
  sendConcurrency?: number
  compression?: 'lz4' | 'zstd' | 'deflate' | 'none'
  connectTimeoutMs?: number
  requestTimeoutMs?: number
  maxAttempts?: number
  backoffBaseMs?: number
  backoffMaxMs?: number
  deliveryTimeoutMs?: number
  unauthorizedAttempts?: number
  caFile?: string
  remoteAddress?: string
  adjustShardHash?: boolean
  shardBuckets?: number
  packId?: boolean
  keyPolicy?: 'service' | 'strict'
  dropTimeoutMs?: number
  /** A directory where accepted records are kept until delivered: a killed process loses
   *  nothing, the next producer on the directory sends what was left. Default: none. */
  spoolDir?: string
  /** Bytes of spool files at most (default 1 GiB); beyond it sends fail or wait like a full buffer. */
  spoolMaxBytes?: number
  /** 'none' (default: survives the process), 'batch' (synced as each batch seals) or 'interval:<ms>'. */
  spoolSync?: string
  /** On SIGTERM or SIGINT, deliver what is held for at most this long (ms), then let the
   *  signal take its usual course: the process still ends by it, or the application's own
   *  listeners decide. 0 turns this off. Default 5000. */
  closeOnSignalMs?: number
  /** How long pending records keep the process alive without progress (default 5000). */
  exitTimeoutMs?: number
  /** Emit a 'stats' event this often (ms); 0 or absent: never. */
  statsIntervalMs?: number
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

export interface Stats {
  accepted: number
  delivered: number
  failed: number
  retried: number
  dropped: number
  invalid: number
  queued_bytes: number
  queued_records: number
  in_flight_batches: number
  batches_delivered: number
  failures_by_code: Record<string, number>
  callback_errors: number
  replayed_batches: number
  replayed_records: number
  spool_corrupt_entries: number
  spool_bytes: number
}

export declare class LoghoseError extends Error {
  code?: string
}
export declare class ConfigError extends LoghoseError {}
export declare class InvalidRecordError extends LoghoseError {}
export declare class BufferFullError extends LoghoseError {}
export declare class ProducerClosedError extends LoghoseError {}
export declare class DeliveryError extends LoghoseError {
  requestId: string | null
  httpStatus: number | null
  attempts: number
  report: DeliveryReport
}

export declare class Producer extends EventEmitter {
  constructor(options: ProducerOptions)
  static fromPreset(preset: 'server' | 'pi', options: ProducerOptions): Producer
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
  close(options?: { timeoutMs?: number }): Promise<{ undelivered: number; failed: DeliveryReport[] }>
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
}

export interface StoredLog {
  shard: number
  time: number
  time_ns: number | null
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
  totals(project: string, logstore: string): { logs: number; groups: number; retained_groups: number } | null
  counters(): Record<string, unknown>
  /** Adds a fault; `store_then_error` / `store_then_reset` store the batch and then fail the
   *  answer (a retry makes a duplicate, counted in `counters().duplicate_groups`). */
  inject(kind: 'error' | 'latency' | 'reset' | 'hang' | 'store_then_error' | 'store_then_reset', fault?: Record<string, unknown>): void
  clearFaults(): void
  reset(): void
  createLogstore(project: string, logstore: string, shards?: number): void
  close(): void
  [Symbol.dispose](): void
}

export declare function engineVersion(): string
