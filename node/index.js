'use strict'
// loghose for Node.js: the hand-written facade over the napi-rs addon (./native.js).
//
// `send` is synchronous and cheap: a plain record crosses as one string of its keys and values,
// their lengths in an array shared with the addon (other records cross as JSON), and is encoded
// and checked field by field by the engine; nothing blocks the event loop. Reports arrive in
// batches through one weak threadsafe function, so an idle producer never keeps the process alive; while records
// are pending, a ref'd timer keeps the loop alive (bounded by `exitTimeoutMs` without
// progress) so a script that ends without `close()` still delivers. A throwing `delivery`
// listener is caught and re-emitted as `error` (only if someone listens); it never reaches
// the addon or crashes the process.

const { EventEmitter } = require('node:events')
const { isMainThread } = require('node:worker_threads')
const native = loadNative()

/** The addon, from this platform's package (or a source build beside this file); when neither
 * is there, an error naming the package this platform needs. */
function loadNative() {
  try {
    return require('./native.js')
  } catch (err) {
    const abi = process.platform === 'linux' ? (/** @type {any} */ (process.report?.getReport())?.header?.glibcVersionRuntime ? '-gnu' : '-musl') : process.platform === 'win32' ? '-msvc' : ''
    const arm = process.arch === 'arm' ? (process.platform === 'linux' ? '-gnueabihf' : '') : ''
    const wanted = `loghose-${process.platform}-${process.arch}${arm || abi}`
    const error = new Error(
      `loghose: no native addon for ${process.platform}-${process.arch}: the package ${wanted} is not installed ` +
        '(npm skips optional dependencies with --omit=optional or --no-optional, and a lockfile made on another ' +
        `platform may lack it: install ${wanted}@${require('../package.json').version} beside loghose), or this ` +
        'platform has no prebuilt addon (build one from a clone with `npm ci && npm run build`).',
    )
    error.cause = err
    throw error
  }
}
const signals = require('./signals.js')

const { LoghoseError, ConfigError, InvalidRecordError, BufferFullError, ProducerClosedError, SpoolLockedError, DeliveryError } = require('./errors.js')
const { lineWriter } = require('./lines.js')

// The addon raises its errors as instances of these classes, with `code` set (node/src/errors.rs).
native.useErrorClasses({ LoghoseError, ConfigError, InvalidRecordError, BufferFullError, ProducerClosedError, SpoolLockedError, TypeError })

/** An engine option's name in camelCase. */
function camel(name) {
  return name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())
}

/** `err` again with "record N: " before its message. */
function withIndex(err, index) {
  const again = new err.constructor(`record ${index}: ${err.message}`, err.code ? { code: err.code } : undefined)
  again.cause = err
  return again
}

function deliveryError(report) {
  return new DeliveryError(`${report.code}: ${report.message}`, {
    code: report.code,
    requestId: report.requestId,
    httpStatus: report.httpStatus,
    attempts: report.attempts,
    report,
  })
}

const DECODER = new TextDecoder('utf-8', { fatal: true })

const TWO_TO_64 = 2 ** 64

/** Whether JSON carries a number as every front writes it: a safe integer (its digits), or a
 * float the engine formats as Python's repr. Not: the four JSON cannot carry, and integers
 * past 2^53, whose JSON text is rounded. */
function plainNumber(value) {
  if (Number.isSafeInteger(value)) return !Object.is(value, -0)
  return Number.isFinite(value) && !(Number.isInteger(value) && Math.abs(value) < TWO_TO_64)
}

/** A number as every front writes it: integers below 2^64 as their exact digits, floats as
 * Python's repr (the engine formats finite ones). */
function numberValue(value) {
  if (plainNumber(value)) return value
  if (Number.isNaN(value)) return 'nan'
  if (value === Infinity) return 'inf'
  if (value === -Infinity) return '-inf'
  if (Object.is(value, -0)) return '-0.0'
  return BigInt(value).toString()
}

/** Text of a value that is not a string, number, boolean or bigint, as every front writes it:
 * Buffers as their (UTF-8) text, null as `null`, a Date as ISO 8601, an Error as its stack
 * (name, message and frames), objects and arrays as compact JSON (Dates, bigints, Errors, Maps
 * and Sets inside converted the same way; functions and symbols inside dropped, as JSON does),
 * and anything else (a function, a symbol) through the producer's `default` option, or a
 * TypeError naming the field and the type given. */
function convertValue(key, value, fallback, depth = 0) {
  switch (typeof value) {
    case 'number':
      return numberValue(value)
    case 'string':
    case 'boolean':
      return value
    case 'bigint':
      return String(value)
    case 'undefined':
      return undefined
    case 'function':
    case 'symbol':
      return viaDefault(key, value, fallback, depth)
    default:
      break
  }
  if (value === null) return 'null'
  if (value instanceof Uint8Array) {
    try {
      return DECODER.decode(value)
    } catch {
      throw new InvalidRecordError(`value of field "${key}" is not valid UTF-8`, { code: 'InvalidRecordError' })
    }
  }
  if (value instanceof Date) return dateText(value)
  if (value instanceof Error) return errorText(value)
  try {
    return JSON.stringify(value, (k, v) => inJson(v, fallback))
  } catch (err) {
    throw new TypeError(`value of field "${key}" cannot be written as JSON: ${err.message}`)
  }
}

function dateText(date) {
  return Number.isNaN(date.getTime()) ? 'Invalid Date' : date.toISOString()
}

function errorText(err) {
  return typeof err.stack === 'string' && err.stack ? err.stack : `${err.name}: ${err.message}`
}

function inJson(value, fallback) {
  switch (typeof value) {
    case 'bigint':
      return String(value)
    case 'function':
    case 'symbol':
      return fallback ? fallback(value) : undefined
    case 'object':
      if (value instanceof Error) return errorText(value)
      if (value instanceof Map) return Object.fromEntries(value)
      if (value instanceof Set) return [...value]
      return value
    default:
      return value
  }
}

function viaDefault(key, value, fallback, depth) {
  if (!fallback) {
    throw new TypeError(`value of field "${key}" is a ${typeName(value)}, which has no text form; pass the producer a default function to convert it`)
  }
  if (depth > 4) throw new TypeError(`value of field "${key}": default keeps returning values without a text form`)
  let converted
  try {
    converted = fallback(value)
  } catch (err) {
    throw new TypeError(`value of field "${key}": default threw ${err && err.name}: ${err && err.message}`)
  }
  return convertValue(key, converted, fallback, depth + 1)
}

function typeName(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'object' && value.constructor && value.constructor.name) return value.constructor.name
  return typeof value
}

function plain(value) {
  const t = typeof value
  return t === 'string' || (t === 'number' && plainNumber(value)) || t === 'boolean'
}

/** The record as JSON for the addon, which encodes it in order and checks every field. Lone
 * surrogates become U+FFFD, as on the fast path (V8 writes them so as UTF-8; as JSON escapes
 * they would not decode). */
function recordJson(contents, fallback) {
  const json = rawRecordJson(contents, fallback)
  // Only a lone surrogate (or a literal backslash before "ud") puts this in the JSON.
  return json.includes('\\ud') ? rawRecordJson(wellFormed(contents), fallback) : json
}

// String.prototype.toWellFormed is Node 20's; on Node 18 (Debian 12's and Raspberry Pi OS's
// own), a regular expression does the same.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
const toWellFormed = String.prototype.toWellFormed ? (s) => s.toWellFormed() : (s) => s.replace(LONE_SURROGATE, '\uFFFD')

function wellFormed(contents) {
  const fix = (v) => (typeof v === 'string' ? toWellFormed(v) : v)
  const fields = Array.isArray(contents) ? contents : Object.entries(contents)
  const fixed = fields.map((pair) => (Array.isArray(pair) && pair.length === 2 ? [fix(pair[0]), fix(pair[1])] : pair))
  return Array.isArray(contents) ? fixed : Object.fromEntries(fixed)
}

/** The common case (plain strings, numbers, booleans) is one JSON.stringify; Buffers and
 * bigints are converted first. */
function rawRecordJson(contents, fallback) {
  if (Array.isArray(contents)) {
    let simple = true
    for (const pair of contents) {
      if (!Array.isArray(pair) || pair.length !== 2) throw new TypeError('each field must be a [key, value] pair')
      if (typeof pair[0] !== 'string') throw new TypeError(`field key ${String(pair[0])} must be a string`)
      if (!plain(pair[1])) simple = false
    }
    if (simple) return JSON.stringify(contents)
    const converted = []
    for (const [k, v] of contents) {
      const text = convertValue(k, v, fallback)
      if (text !== undefined) converted.push([k, text])
    }
    return JSON.stringify(converted)
  }
  if (contents === null || typeof contents !== 'object') {
    throw new TypeError(`contents must be an object or an array of [key, value] pairs, not ${contents === null ? 'null' : typeof contents}`)
  }
  for (const key in contents) {
    if (!plain(contents[key])) {
      const copy = {}
      for (const k of Object.keys(contents)) copy[k] = convertValue(k, contents[k], fallback)
      return JSON.stringify(copy)
    }
  }
  return JSON.stringify(contents)
}

/** A field value as the fast path sends it: strings as they are, booleans, safe integers and
 * floats of ordinary size as text (read the same on both paths); null for anything else. */
function fieldText(value) {
  switch (typeof value) {
    case 'string':
      return value
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number': {
      if (Number.isSafeInteger(value)) return Object.is(value, -0) ? null : String(value)
      // Between 1e-4 and 1e16 JavaScript and Python both write a float's shortest digits in
      // plain decimal notation, so String() is already the shared text; other numbers go as
      // JSON, where the engine writes them as every front does.
      const size = Math.abs(value)
      return size >= 1e-4 && size < 1e16 ? String(value) : null
    }
    default:
      return null
  }
}

/** A plain object or an array of [string, value] pairs in the fast path's framing: keys and
 * values concatenated, each one's length (UTF-16 units) in `lengths` (no separators: each
 * extra piece of a concatenation costs when V8 flattens it). Null for anything else, or for
 * more fields than `lengths` holds (these go as JSON). The number of fields is left in
 * `framedCount`. */
let framedCount = 0
function framedFields(contents, lengths) {
  let text = ''
  let n = 0
  const limit = lengths.length
  if (Array.isArray(contents)) {
    for (const pair of contents) {
      if (!Array.isArray(pair) || pair.length !== 2) return null
      const key = pair[0]
      const value = fieldText(pair[1])
      if (typeof key !== 'string' || value === null || n === limit) return null
      text = text + key + value
      lengths[n] = key.length
      lengths[n + 1] = value.length
      n += 2
    }
  } else {
    const proto = Object.getPrototypeOf(contents)
    if (proto !== Object.prototype && proto !== null) return null
    for (const key in contents) {
      const value = fieldText(contents[key])
      if (value === null || n === limit) return null
      text = text + key + value
      lengths[n] = key.length
      lengths[n + 1] = value.length
      n += 2
    }
  }
  framedCount = n >> 1
  return n === 0 ? null : text
}

const STRING_OPTIONS = ['topic', 'source', 'shardKey', 'project', 'logstore']

/** Per-send options of the wrong type are a TypeError naming the option and the type given. */
function checkSendOptions(opts) {
  if (opts === null || typeof opts !== 'object') throw new TypeError(`send options must be an object, not ${typeName(opts)}`)
  for (const name of STRING_OPTIONS) {
    const value = opts[name]
    if (value !== undefined && value !== null && typeof value !== 'string') {
      throw new TypeError(`option ${name} must be a string, not ${typeName(value)}`)
    }
  }
  const time = opts.time
  if (time !== undefined && time !== null && typeof time !== 'number') {
    throw new TypeError(`option time must be a number of unix seconds, not ${typeName(time)}`)
  }
}

/** The options a preset sets, camelCase; the engine holds the values. */
function presetOptions(preset) {
  const snake = JSON.parse(native.presetOptionsJson(String(preset)))
  const options = {}
  for (const [key, value] of Object.entries(snake)) options[camel(key)] = value
  return options
}

/** The function the addon calls (from an I/O thread, through the event loop) to ask the
 * provider for fresh credentials; the answer goes back with setCredentials/credentialsFailed. */
function credentialsAsker(provider, nativeProducer) {
  if (provider === null || typeof provider !== 'object' || typeof provider.getCredentials !== 'function') {
    throw new TypeError(`option credentialsProvider must have a getCredentials() method, not be ${typeName(provider)}`)
  }
  return () => {
    Promise.resolve()
      .then(() => provider.getCredentials())
      .then(
        (c) => {
          if (!c || typeof c.accessKeyId !== 'string' || typeof c.accessKeySecret !== 'string') {
            throw new TypeError('getCredentials() resolved without accessKeyId and accessKeySecret strings')
          }
          nativeProducer().setCredentials(c.accessKeyId, c.accessKeySecret, c.securityToken ?? null)
        },
      )
      .catch((err) => nativeProducer().credentialsFailed(`${(err && err.name) || 'Error'}: ${(err && err.message) || err}`))
  }
}

const FACADE_OPTIONS = new Set(['exitTimeoutMs', 'statsIntervalMs', 'default', 'credentialsProvider'])

/** camelCase options → the engine's snake_case configuration, as JSON. */
function configJson(options) {
  const config = {}
  for (const [key, value] of Object.entries(options)) {
    if (FACADE_OPTIONS.has(key) || value === undefined) continue
    const snake = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
    if (snake === 'tags' && value && !Array.isArray(value)) {
      config.tags = Object.entries(value).map(([k, v]) => [String(k), String(v)])
    } else {
      config[snake] = value
    }
  }
  return JSON.stringify(config)
}

// Says, with process.emitWarning, that records failed for good when nothing else was told
// (no 'delivery' listener, no promise). The engine's policy decides when (at most one warning
// per error code every ten seconds, the records of the quiet time counted into the next one or
// the one close gives, each batch once) and words it; this only emits it.
class UnhandledFailures {
  constructor() {
    this.policy = new native.NativeUndeliveredWarnings()
  }

  note(report, records, atOnce = false) {
    const text = this.policy.note(report.batchId, report.project, report.logstore, report.code || 'Failed', report.message || '', Boolean(report.kept), records)
    if (text !== null && text !== undefined) UnhandledFailures.warn(text, atOnce)
  }

  /** Says what the quiet time held back; `atOnce`: written to stderr now, for the moments
   * the process ends before a warning event could be emitted (a signal, the exit event). */
  flush(atOnce = false) {
    for (const text of this.policy.flush()) UnhandledFailures.warn(text, atOnce)
  }

  static warn(text, atOnce = false) {
    // stderr is synchronous for files, pipes and terminals on POSIX.
    if (atOnce) process.stderr.write(`(node:${process.pid}) [LOGHOSE_UNDELIVERED] Warning: ${text}\n`)
    else process.emitWarning(text, { code: 'LOGHOSE_UNDELIVERED' })
  }
}

class Producer extends EventEmitter {
  constructor(options = {}) {
    super()
    this._tickets = new Map()
    this._unhandled = new UnhandledFailures()
    this._nextTicket = 0
    this._keepAlive = null
    this._exitTimeoutMs = options.exitTimeoutMs ?? 5000
    if (options.default !== undefined && typeof options.default !== 'function') {
      throw new TypeError(`option default must be a function, not ${typeName(options.default)}`)
    }
    this._default = options.default ?? null
    const ask = options.credentialsProvider === undefined ? undefined : credentialsAsker(options.credentialsProvider, () => this._native)
    this._native = new native.NativeProducer(configJson(options), (reports) => this._onReports(reports), ask)
    this._closed = false
    this._closeOnSignalMs = this._native.closeOnSignalMs
    if (this._closeOnSignalMs > 0) signals.register(this, isMainThread)
    this._sendFields = this._native.fieldsSender()
    this._lengths = this._sendFields.lengths
    this._framing = false
    this._statsTimer = null
    this._finalStats = null
    if (options.statsIntervalMs > 0) {
      // Emits 'stats' periodically; unref'd, so it never keeps the process alive.
      this._statsTimer = setInterval(() => {
        if (this.listenerCount('stats') > 0) this.emit('stats', this.stats())
      }, options.statsIntervalMs)
      this._statsTimer.unref()
    }
  }

  static fromPreset(preset, options = {}) {
    return new Producer({ ...presetOptions(preset), ...options })
  }

  /** The options a preset sets (camelCase), to merge into options given elsewhere (a pino
   * transport's, say). */
  static presetOptions(preset) {
    return presetOptions(preset)
  }

  send(contents, opts) {
    this._send(contents, opts, undefined)
  }

  sendAsync(contents, opts) {
    return new Promise((resolve, reject) => {
      const ticket = ++this._nextTicket
      this._tickets.set(ticket, { resolve, reject })
      try {
        this._send(contents, opts, ticket)
      } catch (err) {
        this._tickets.delete(ticket)
        reject(err)
      }
    })
  }

  /** Queues every record or none of them; returns how many were queued. All or nothing: every
   * record is checked before any is queued, so retrying a failed call sends nothing twice. */
  sendMany(records) {
    const parts = []
    let index = 0
    for (const record of records) {
      try {
        parts.push(recordJson(record, this._default))
      } catch (err) {
        throw withIndex(err, index)
      }
      index += 1
    }
    if (parts.length === 0) return 0
    const count = this._native.sendManyJson(`[${parts.join(',')}]`)
    if (this._keepAlive === null) this._startKeepAlive()
    return count
  }

  /** Queues the log of one JSON line as pino writes it: `time` (ms) is the log's time, `level`
   * its label, every other key a field (nested values as compact JSON), parsed by the engine.
   * A line that is not a JSON object is a TypeError; nothing is queued then. */
  sendJsonLine(line) {
    this._native.sendPinoLine(line)
    if (this._keepAlive === null) this._startKeepAlive()
  }

  _send(contents, opts, ticket) {
    if (opts !== undefined) checkSendOptions(opts)
    if (opts === undefined && ticket === undefined && contents !== null && typeof contents === 'object' && !this._framing) {
      // Reading the record may run its getters; one that sends through this producer while
      // this record's lengths are being written takes the JSON path instead.
      this._framing = true
      let text
      try {
        text = framedFields(contents, this._lengths)
      } finally {
        this._framing = false
      }
      if (text !== null && this._sendFields(text, framedCount)) {
        if (this._keepAlive === null) this._startKeepAlive()
        return
      }
    }
    const json = recordJson(contents, this._default)
    const o = opts || {}
    this._native.sendWith(json, o.topic, o.source, o.time, o.shardKey, o.project, o.logstore, ticket)
    if (this._keepAlive === null) this._startKeepAlive()
  }

  _startKeepAlive() {
    // Keeps the loop alive while records are pending, so they are delivered before a natural
    // exit: while a sendAsync() promise is unsettled (someone awaits it; it settles within
    // deliveryTimeoutMs), and otherwise until exitTimeoutMs have passed with no sign of life
    // (no record accepted, none settled). A program that awaits each send in turn is never
    // cut off; one whose endpoint is unreachable ends after exitTimeoutMs, and its exit event
    // says what was not delivered.
    let lastPending = -1
    let lastAccepted = -1
    let lastLife = Date.now()
    this._keepAlive = setInterval(() => {
      const pending = this._native.pending()
      if (pending === 0 && this._tickets.size === 0) return this._stopKeepAlive()
      const accepted = this._native.accepted()
      const now = Date.now()
      if (pending !== lastPending || accepted !== lastAccepted) {
        lastPending = pending
        lastAccepted = accepted
        lastLife = now
      }
      if (this._tickets.size === 0 && now - lastLife > this._exitTimeoutMs) this._stopKeepAlive()
    }, 25)
  }

  _stopKeepAlive() {
    if (this._keepAlive !== null) {
      clearInterval(this._keepAlive)
      this._keepAlive = null
    }
  }

  _onReports(reports) {
    if (this.listenerCount('delivery') === 0) this._noteUntold(reports)
    for (const report of reports) {
      for (const ticket of report.tickets) {
        const waiter = this._tickets.get(ticket)
        if (waiter === undefined) continue
        this._tickets.delete(ticket)
        if (report.delivered) waiter.resolve(report)
        else waiter.reject(deliveryError(report))
      }
    }
    if (this.listenerCount('delivery') > 0) {
      try {
        this.emit('delivery', reports)
      } catch (err) {
        if (this.listenerCount('error') > 0) this.emit('error', err)
      }
    }
  }

  // Records that failed with nobody told (no listener, no promise) are never only a counter.
  _noteUntold(reports, atOnce = false) {
    for (const report of reports) {
      const untold = report.records - report.tickets.length
      if (report.delivered || untold <= 0) continue
      this._unhandled.note(report, untold, atOnce)
    }
  }

  /** Sends everything queued and waits up to timeoutMs; resolves with the records not
   * delivered: still pending, plus those that failed for good since the previous flush
   * (0: everything sent was delivered). */
  flush(timeoutMs = 60000) {
    try {
      return this._native.flush(timeoutMs)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /** Whether close() was called. */
  get closed() {
    return this._closed
  }

  /** Refuses new records, waits up to timeoutMs, abandons the rest; resolves with
   * `{ undelivered, kept, failed }`: records neither delivered nor kept (0: nothing lost),
   * records left in the spool for the next producer on `spoolDir`, failed reports. */
  async close({ timeoutMs = 10000 } = {}) {
    this._beginClose()
    return this._endClose(await this._native.close(timeoutMs))
  }

  // Sends the open batches now, without waiting (the signal handling's first step).
  _seal() {
    this._native.flushAccepted(0).catch(() => {})
  }

  // close(), blocking the event loop: for a signal that ends the process, and the exit event.
  _closeSync(timeoutMs) {
    this._beginClose()
    return this._endClose(this._native.closeSync(timeoutMs), true)
  }

  _beginClose() {
    this._closed = true
    this._stopKeepAlive()
    if (this._statsTimer !== null) {
      clearInterval(this._statsTimer)
      this._statsTimer = null
    }
  }

  _endClose(result, atOnce = false) {
    // Reports still on their way when the producer closed are not passed on; its failed list is.
    if (this.listenerCount('delivery') === 0) this._noteUntold(result.failed, atOnce)
    this._unhandled.flush(atOnce)
    if (result.stats) this._finalStats = result.stats
    return { undelivered: result.undelivered, kept: result.kept, failed: result.failed }
  }

  /** Counters (camelCase): accepted, delivered, failed, retried, dropped, invalid, queuedBytes,
   * queuedRecords, inFlightBatches, failuresByCode... */
  stats() {
    return this._native.stats() ?? this._finalStats ?? null
  }

  async [Symbol.asyncDispose]() {
    await this.close()
  }
}

class Emulator {
  constructor(config = {}) {
    const snake = {}
    for (const [k, v] of Object.entries(config)) snake[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v
    this._native = new native.NativeEmulator(JSON.stringify(snake))
    // A server: while open it keeps the process alive, as a listening http.Server does (it
    // serves from threads of its own, which the event loop does not see).
    this._alive = setInterval(() => {}, 2 ** 30)
  }

  get endpoint() {
    return this._native.endpoint
  }

  get accessKeyId() {
    return this._native.accessKeyId
  }

  get accessKeySecret() {
    return this._native.accessKeySecret
  }

  producerOptions(project = 'loghose', logstore = 'logs') {
    return { endpoint: this.endpoint, project, logstore, accessKeyId: this.accessKeyId, accessKeySecret: this.accessKeySecret }
  }

  /** Stored logs: shard, time, timeNs, topic, source, tags and contents (arrays of pairs). */
  logs(project, logstore) {
    return this._native.logs(project, logstore)
  }

  totals(project, logstore) {
    return this._native.totals(project, logstore)
  }

  counters() {
    return this._native.counters()
  }

  inject(kind, fault = {}) {
    const snake = {}
    for (const [k, v] of Object.entries(fault)) snake[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v
    this._native.injectJson(JSON.stringify({ kind, ...snake }))
  }

  clearFaults() {
    this._native.clearFaults()
  }

  /** Replaces the temporary (STS) keys (`[{ id, secret, token }]`): requests signed with a key
   * no longer listed are refused with 401, as the service refuses an expired token. */
  replaceStsKeys(keys) {
    this._native.replaceStsKeysJson(JSON.stringify(keys))
  }

  reset() {
    this._native.reset()
  }

  /** Creates a logstore of 1 to 100 shards (ConfigError outside that, as the service refuses). */
  createLogstore(project, logstore, shards) {
    this._native.createLogstore(project, logstore, shards)
  }

  /** Stops serving; the process may then end. */
  close() {
    clearInterval(this._alive)
    this._native.close()
  }

  [Symbol.dispose]() {
    this.close()
  }
}

/** A pino destination on the main thread (no worker): `pino(opts, loghose.pinoDestination(options))`.
 * Each line becomes one log as with the `loghose/pino` transport; `flush()` / `end()` deliver
 * what is pending, and pending records keep the process alive until delivered, as for any
 * producer. `producer` is the Producer behind it. */
function pinoDestination(options = {}) {
  const producer = options instanceof Producer ? options : new Producer(options)
  const destination = {
    producer,
    // What pino looks for to take a lone argument as the destination: `pino(pinoDestination(o))`.
    writable: true,
    /** Lines that could not be sent (each class of error also reported once as a process warning). */
    failures: 0,
    write(chunk) {
      // pino writes one line per call; a chunk of several (a multistream's) is split here.
      let start = 0
      for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
        if (end > start) write(chunk.slice(start, end))
        start = end + 1
      }
      if (start < chunk.length) write(chunk.slice(start))
      return true
    },
    flush(callback) {
      const done = producer.flush()
      if (typeof callback === 'function') done.then(() => callback(), callback)
      return done
    },
    end(callback) {
      const done = producer.close()
      if (typeof callback === 'function') done.then(() => callback(), callback)
      return done
    },
  }
  const write = lineWriter(producer, destination)
  return destination
}

module.exports = {
  pinoDestination,
  Producer,
  Emulator,
  LoghoseError,
  ConfigError,
  InvalidRecordError,
  BufferFullError,
  ProducerClosedError,
  SpoolLockedError,
  DeliveryError,
  engineVersion: native.engineVersion,
}
