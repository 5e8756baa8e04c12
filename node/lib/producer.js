'use strict'
// The facade's Producer: sends (the fast path for plain records, values alone for a key list
// seen before, JSON for the rest), delivery
// reports turned into events and settled promises, the keep-alive while records are pending,
// close (async, and blocking for signals and the exit event) and the warning for failures
// nobody was told of.

const { EventEmitter } = require('node:events')
const util = require('node:util')
const { isMainThread } = require('node:worker_threads')
const native = require('./binding.js')
const signals = require('./signals.js')
const { DeliveryError } = require('./errors.js')
const { recordJson, newFrame, framedFields, shapedValues, newShape, fieldText, checkSendOptions, timeOnly, typeName } = require('./values.js')
const { presetOptions, credentialsAsker, configJson } = require('./options.js')

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

// Says, with process.emitWarning, that records failed for good when nothing else was told
// (no 'delivery' listener, no promise). The engine's policy decides when (at most one warning
// per error code every ten seconds, the records of the quiet time counted into the next one or
// the one close gives, each batch once) and words it; this only emits it.
class UndeliveredWarnings {
  constructor() {
    this.policy = new native.NativeUndeliveredWarnings()
  }

  note(report, records, atOnce = false) {
    const batch = {
      batchId: report.batchId,
      project: report.project,
      logstore: report.logstore,
      code: report.code || 'Failed',
      message: report.message || '',
      kept: Boolean(report.kept),
    }
    const text = this.policy.note(batch, records)
    if (text !== null && text !== undefined) UndeliveredWarnings.warn(text, atOnce)
  }

  /** Says what the quiet time held back; `atOnce`: written to stderr now, for the moments
   * the process ends before a warning event could be emitted (a signal, the exit event). */
  flush(atOnce = false) {
    for (const text of this.policy.flush()) UndeliveredWarnings.warn(text, atOnce)
  }

  static warn(text, atOnce = false) {
    // stderr is synchronous for files, pipes and terminals on POSIX.
    if (atOnce) process.stderr.write(`(node:${process.pid}) [LOGHOSE_UNDELIVERED] Warning: ${text}\n`)
    else process.emitWarning(text, { code: 'LOGHOSE_UNDELIVERED' })
  }
}

/** The engine's counters (its JSON, the form Python reads too) with camelCase names;
 * `failuresByCode` keeps its codes as the service spells them. */
const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase())

/** The engine's stats JSON with camelCase names (also inside lists of objects, such as
 *  sendLimits; the keys of maps such as failuresByCode are values and stay as they are). */
function statsFromJson(json) {
  const stats = {}
  for (const [name, value] of Object.entries(JSON.parse(json))) {
    stats[camel(name)] = Array.isArray(value)
      ? value.map((item) => Object.fromEntries(Object.entries(item).map(([k, v]) => [camel(k), v])))
      : value
  }
  return stats
}

class Producer extends EventEmitter {
  constructor(options = {}) {
    super()
    this._tickets = new Map()
    /** Functions the integrations attach to see every batch's report (their own metrics). */
    this._reportObservers = []
    this._undelivered = new UndeliveredWarnings()
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
    this._serverAddress = this._native.serverAddress
    // Where it sends, for util.inspect and console.log.
    this._destination = { endpoint: options.endpoint ?? '', project: options.project ?? '', logstore: options.logstore ?? '' }
    if (this._closeOnSignalMs > 0) signals.register(this, isMainThread)
    this._sendFields = this._native.fieldsSender()
    this._lengths = this._sendFields.lengths
    // What framing the record being sent found besides its text (values.js): this
    // producer's own, so a getter that sends through another producer mid-framing cannot
    // change it.
    this._frame = newFrame()
    // Key lists of records sent before (first key → the first list registered with it; see
    // `shapedValues`), registered with the engine so a record of one of them crosses as its
    // values alone; until the engine holds as many as it keeps.
    this._shapes = new Map()
    this._learning = true
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

  /** A function that sends records of these keys, given their values in order:
   * `const log = producer.sender(['level', 'msg', 'user'])` then `log('info', 'signed in',
   * 'ana')` sends what `producer.send({ level: 'info', msg: 'signed in', user: 'ana' })` sends,
   * for less work a record: the keys are checked and encoded once, and no object is built or
   * read. A value that is not a string, a boolean or a plain number goes through `send` (as
   * `send` converts it); a call with another number of values is a TypeError. The keys are
   * checked here: a key the service would refuse throws InvalidRecordError. */
  sender(keys) {
    if (!Array.isArray(keys) || keys.length === 0) throw new TypeError(`sender takes an array of keys, not ${typeName(keys)}`)
    keys.forEach((key, i) => {
      if (typeof key !== 'string') throw new TypeError(`key ${i} of the sender is a ${typeName(key)}, not a string`)
    })
    const names = keys.slice()
    const count = names.length
    const sendValues = this._native.fieldsSender(names)
    const lengths = sendValues.lengths
    const producer = this
    function viaSend(values) {
      const record = {}
      for (let i = 0; i < count; i++) record[names[i]] = values[i]
      producer.send(record)
    }
    return function send() {
      if (arguments.length !== count) {
        throw new TypeError(`this sender takes ${count} values (${names.join(', ')}), not ${arguments.length}`)
      }
      let text = ''
      for (let i = 0; i < count; i++) {
        const value = fieldText(arguments[i])
        if (value === null) return viaSend(arguments)
        text += value
        lengths[i] = value.length
      }
      // False only when a surrogate pair straddles two values: `send` writes it then.
      if (!sendValues(text, count)) return viaSend(arguments)
      if (producer._keepAlive === null) producer._startKeepAlive()
    }
  }

  /** For the integrations that lay records out themselves: a function `(values, time)`
   * sending a record of these keys whose values are strings (an array in the keys' order),
   * at `time` (Unix seconds), as a sender's do; it returns false, queuing nothing, when a
   * surrogate pair straddles two values (`send` writes the record then). */
  _stringsSender(keys) {
    const sendValues = this._native.fieldsSender(keys.slice())
    const lengths = sendValues.lengths
    const count = keys.length
    const producer = this
    return function sendStrings(values, time) {
      let text = ''
      for (let i = 0; i < count; i++) {
        const value = values[i]
        text += value
        lengths[i] = value.length
      }
      if (!sendValues(text, count, time)) return false
      if (producer._keepAlive === null) producer._startKeepAlive()
      return true
    }
  }

  /** Queues the log of one JSON line as pino writes it: `time` (ms) is the log's time, `level`
   * its label, every other key a field (nested values as compact JSON), parsed by the engine.
   * A line that is not a JSON object is a TypeError; nothing is queued then. */
  sendJsonLine(line) {
    this._native.sendPinoLine(line)
    if (this._keepAlive === null) this._startKeepAlive()
  }

  _send(contents, opts, ticket) {
    let time
    if (opts !== undefined) {
      checkSendOptions(opts)
      // A time alone still takes the fast path (the OpenTelemetry integration sends so).
      time = timeOnly(opts)
    }
    if ((opts === undefined || time !== null) && contents !== null && typeof contents === 'object' && !this._framing) {
      // Reading the record may run its getters; one that sends through this producer while
      // this record's lengths are being written takes the JSON path instead.
      this._framing = true
      const frame = this._frame
      let shaped
      let text
      try {
        text = shapedValues(contents, this._shapes, this._lengths, frame)
        shaped = text !== null
        if (!shaped) text = framedFields(contents, this._lengths, frame)
      } finally {
        this._framing = false
      }
      // Arguments not passed (rather than undefined) are not read: a send reads only its own.
      let sent = false
      if (ticket !== undefined) {
        sent = text !== null && this._sendFields(text, frame.count, time, shaped ? frame.shape : undefined, ticket)
      } else {
        sent = shaped ? this._sendFields(text, frame.count, time, frame.shape) : text !== null && this._sendFields(text, frame.count, time)
      }
      if (sent) {
        if (!shaped && frame.learn && this._learning) this._learnShape(text, frame.count)
        if (this._keepAlive === null) this._startKeepAlive()
        return
      }
    }
    const json = recordJson(contents, this._default)
    this._native.sendWith(json, opts, ticket)
    if (this._keepAlive === null) this._startKeepAlive()
  }

  /** Registers the keys of the record just framed (`text`, `count` fields, their lengths in
   * `_lengths`), which the engine accepted, so the next records of these keys cross as values. */
  _learnShape(text, count) {
    const keys = new Array(count)
    let at = 0
    for (let i = 0; i < count; i++) {
      const keyLength = this._lengths[2 * i]
      // As a property key, so the key compared with the records' is V8's internalized copy:
      // equal internalized strings compare by address.
      keys[i] = Object.keys({ [text.slice(at, at + keyLength)]: 0 })[0]
      at += keyLength + this._lengths[2 * i + 1]
    }
    const id = this._sendFields.register(keys)
    if (id === null) {
      this._learning = false
      return
    }
    const first = this._shapes.get(keys[0])
    if (first === undefined) this._shapes.set(keys[0], newShape(keys, id, null))
    else newShape(keys, id, first.group)
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
    for (const observe of this._reportObservers) {
      try {
        observe(reports)
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
      this._undelivered.note(report, untold, atOnce)
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

  /** How `console.log` and `util.inspect` show it: where it sends and whether it is open. */
  [util.inspect.custom](depth, options, inspect) {
    const { endpoint, project, logstore } = this._destination
    const state = this._closed ? 'closed' : 'open'
    if (depth < 0) return options.stylize(`[Producer ${project}/${logstore}]`, 'special')
    const pending = this._closed ? '' : `, pending: ${inspect(this._native.pending(), options)}`
    return `Producer { ${project}/${logstore} at ${endpoint}, ${state}${pending} }`
  }

  /** The endpoint's host and port (the scheme's when it names none), for monitoring. */
  get serverAddress() {
    return this._serverAddress
  }

  /** Refuses new records, waits up to timeoutMs, abandons the rest; resolves with
   * `{ undelivered, kept, keptNotDurable, failed, notDurable }`: records neither delivered nor
   * kept (failed for good, or given up without a spool), records left in the spool for the
   * next producer on `spoolDir`, of those the ones not known durable (the disk failed their
   * syncs), failed reports, records sent while their spool copy was not durable. Nothing was
   * lost when `undelivered + keptNotDurable` is 0. */
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
    this._undelivered.flush(atOnce)
    if (result.statsJson) this._finalStats = statsFromJson(result.statsJson)
    const notDurable = result.statsJson ? this._finalStats.spoolNotDurable : 0
    return {
      undelivered: result.undelivered,
      kept: result.kept,
      keptNotDurable: result.keptNotDurable,
      failed: result.failed,
      notDurable,
    }
  }

  /** Counters (camelCase): accepted, delivered, failed, retried, dropped, invalid, queuedBytes,
   * queuedRecords, inFlightBatches, failuresByCode... */
  stats() {
    const json = this._native.statsJson()
    return json ? statsFromJson(json) : this._finalStats ?? null
  }

  /** A snapshot of the producer's metrics: one object per metric of the engine's table
   * (name, type, unit, help, labels, samples); each sample has its labels as an object and its
   * value (a histogram's also `histogram`: bounds, cumulative, count, sum). Once closed, the
   * metrics as the close left them. `loghose/prometheus` registers them with prom-client. */
  metrics() {
    const json = this._native.metricsJson()
    if (!json) return []
    const families = JSON.parse(json)
    for (const family of families) {
      for (const sample of family.samples) {
        const labels = {}
        family.labels.forEach((name, i) => { labels[name] = sample.labels[i] })
        sample.labels = labels
      }
    }
    return families
  }

  /** The metrics in the Prometheus text format (0.0.4), rendered by the engine: what a
   * `/metrics` endpoint can answer without a registry (the fastest scrape). `constLabels` (an
   * object) adds labels to every sample, to tell producers apart; a name Prometheus refuses or
   * the metrics already carry (`project`, `logstore`, `le`...) throws a TypeError. Once closed,
   * the metrics as the close left them. */
  metricsText(constLabels = {}) {
    const flat = Object.entries(constLabels).flatMap(([name, value]) => [name, String(value)])
    return this._native.metricsText(flat) ?? ''
  }

  async [Symbol.asyncDispose]() {
    await this.close()
  }
}

module.exports = { Producer }
