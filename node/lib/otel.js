'use strict'
// loghose/otel: OpenTelemetry logs (@opentelemetry/sdk-logs) into Log Service.
//
//   const { LoggerProvider } = require('@opentelemetry/sdk-logs')
//   const { LoghoseLogRecordProcessor } = require('loghose/otel')
//   const provider = new LoggerProvider({ resource, processors: [new LoghoseLogRecordProcessor({ endpoint, project, logstore, ... })] })
//
// LoghoseLogRecordProcessor hands each record straight to the producer as it is emitted (the
// producer batches, compresses and retries on its own threads: no second batching queue in
// front of it). LoghoseLogExporter is for a pipeline composed by hand
// (`new BatchLogRecordProcessor({ exporter: new LoghoseLogExporter(options) })`).
//
// Each record becomes one log with the fields of the OpenTelemetry Collector's Log Service
// exporter, which Log Service dashboards for OpenTelemetry data expect, exactly as the Python
// front stores them (both are checked against tests-shared/otel.json): `host` and `service`
// (the resource's `host.name` and `service.name`), `resource` (its other attributes),
// `otlp.name` and `otlp.version` (the instrumentation scope), `timeUnixNano`, `severityNumber`,
// `severityText`, `attribute` (the record's attributes), `content` (the body), `flags`,
// `traceID` and `spanID` (lowercase hex, empty outside a span). `resource` and `attribute` are
// compact JSON objects with sorted keys whose values are text (numbers and booleans as written,
// arrays and maps as JSON); a structured body is JSON too. A record without a body is stored
// with an empty `content` (the Collector's exporter drops it; nothing is dropped here).
//
// Runs on the thread that emits; never throws into the application: a record that cannot be
// sent is counted in `failures` and reported once per error name as a process warning.
// `shutdown()` (LoggerProvider.shutdown) delivers within `closeTimeoutMs` (default 10 000) and
// closes the producer the processor built; `forceFlush()` waits for delivery.
//
// Both report the SDK's own log-pipeline metrics (`otel.sdk.processor.log.processed`,
// `.queue.size`, `otel.sdk.exporter.log.exported`, `.inflight`,
// `otel.sdk.exporter.operation.duration`) through `meterProvider` or the global MeterProvider
// (see otel-metrics.js).

const { Producer } = require('./index.js')
const { SdkMetrics } = require('./otel-metrics.js')

const OWN_OPTIONS = ['producer', 'closeTimeoutMs', 'meterProvider']

/** JSON as the Collector's exporter writes it: compact, keys sorted, non-ASCII kept, and the
 *  characters HTML treats specially escaped (by `goEscape`, once on the whole text). */
function goJson(value) {
  if (value === null || value === undefined) return 'null'
  if (Array.isArray(value)) return `[${value.map(goJson).join(',')}]`
  if (value instanceof Uint8Array) return JSON.stringify(Buffer.from(value).toString('base64'))
  if (typeof value === 'bigint') return value.toString()
  if (typeof value === 'object') {
    const keys = Object.keys(value).sort(byCodePoints)
    return `{${keys.map((k) => `${JSON.stringify(k)}:${goJson(value[k])}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

const GO_SPECIAL = /[<>&\u2028\u2029]/
const GO_SPECIALS = /[<>&\u2028\u2029]/g

function goEscape(text) {
  // Tested first: nearly every record has none of them.
  return GO_SPECIAL.test(text) ? text.replace(GO_SPECIALS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : text
}

/** Keys JavaScript would order first, numerically, in an object (JSON.stringify keeps that). */
const INDEX_LIKE = /^(0|[1-9][0-9]*)$/

/** A number as the exporter writes one: an integer in full, else the shortest digits that
 *  read back the same, never in exponent form. */
function numberText(value) {
  if (Number.isNaN(value)) return 'NaN'
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf'
  if (Number.isSafeInteger(value)) return String(value)
  if (Number.isInteger(value)) return BigInt(value).toString()
  const text = String(value)
  const exponent = text.indexOf('e')
  if (exponent < 0) return text
  // Only small magnitudes reach here (a non-integer at or above 1e21 cannot be).
  const sign = text.startsWith('-') ? '-' : ''
  const digits = text.slice(sign.length, exponent).replace('.', '')
  const shift = -Number(text.slice(exponent + 1))
  return `${sign}0.${'0'.repeat(shift - 1)}${digits}`
}

/** An attribute value or body as text (the OTel data model's string form). */
function text(value) {
  if (typeof value === 'string') return value
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  if (typeof value === 'number') return numberText(value)
  if (typeof value === 'bigint') return value.toString()
  if (value === null || value === undefined) return ''
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64')
  if (typeof value === 'object') return goEscape(goJson(value))
  return String(value)
}

/** Go's (and Python's) order of strings, by code point, where `<` and `sort()` compare UTF-16
 *  units: the two differ where a string has a character past U+FFFF (a surrogate pair) and the
 *  other one in U+E000–U+FFFF. */
function byCodePoints(a, b) {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)
    const y = b.codePointAt(i)
    if (x !== y) return x < y ? -1 : 1
    if (x > 0xffff) i++
  }
  return a.length - b.length
}

/** Characters JSON or `goEscape` would write otherwise than as they are (surrogates too:
 *  a lone one is escaped). */
const NOT_AS_IS = /["\\<>&\u0000-\u001f\u2028\u2029\ud800-\udfff]/
const SURROGATE = /[\ud800-\udfff]/

/** Sorts strings in place by UTF-16 code units, as `Array.prototype.sort` does (attribute
 *  lists are short: an insertion sort in compiled code, without the builtin's calls); the
 *  order by code point for keys without surrogates, the only ones written by hand. */
function sortStrings(keys) {
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]
    let j = i - 1
    while (j >= 0 && keys[j] > key) {
      keys[j + 1] = keys[j]
      j--
    }
    keys[j + 1] = key
  }
  return keys
}

/** A JSON object of the attributes' text, keys sorted (this runs for every record): written
 *  by hand when no key or value needs escaping, else one native JSON.stringify of an object
 *  built in sorted order (or `goJson`, when a key is one JavaScript would reorder). */
function object(attributes, leave = []) {
  const keys = attributes ? sortStrings(Object.keys(attributes)) : []
  let json = '{'
  for (const key of keys) {
    if (leave.includes(key)) continue
    const value = attributes[key]
    const valueText = typeof value === 'string' ? value : text(value)
    if (NOT_AS_IS.test(key) || NOT_AS_IS.test(valueText)) return escapedObject(attributes, keys, leave)
    json += json.length === 1 ? `"${key}":"${valueText}"` : `,"${key}":"${valueText}"`
  }
  return `${json}}`
}

function escapedObject(attributes, keys, leave) {
  if (keys.some((key) => SURROGATE.test(key))) keys.sort(byCodePoints)
  const fields = {}
  let reordered = false
  for (const key of keys) {
    if (leave.includes(key)) continue
    const value = attributes[key]
    fields[key] = typeof value === 'string' ? value : text(value)
    if (INDEX_LIKE.test(key)) reordered = true
  }
  return goEscape(reordered ? goJson(fields) : JSON.stringify(fields))
}

/** The fields of a resource, worked out once per resource object. */
const resourceFields = new WeakMap()

function fieldsOfResource(resource) {
  if (!resource) return { host: '', service: '', resource: '{}' }
  let fields = resourceFields.get(resource)
  if (!fields) {
    const attributes = resource.attributes ?? {}
    fields = {
      host: text(attributes['host.name']),
      service: text(attributes['service.name']),
      resource: object(attributes, ['host.name', 'service.name']),
    }
    resourceFields.set(resource, fields)
  }
  return fields
}

/** `seconds * 1e9 + nanos` as decimal text, without BigInt arithmetic (a fifth of a
 *  microsecond a record); for whole seconds and nanos in [0, 1e9), as `hrTime` holds them. */
function unixNanos(seconds, nanos) {
  if (!Number.isSafeInteger(seconds) || !Number.isInteger(nanos) || seconds < 0 || nanos < 0 || nanos >= 1e9) {
    return (BigInt(Math.trunc(seconds)) * 1000000000n + BigInt(Math.trunc(nanos))).toString()
  }
  return seconds === 0 ? String(nanos) : `${seconds}${String(nanos).padStart(9, '0')}`
}

/** The keys of every log, in the order they are stored. */
const FIELD_KEYS = ['host', 'service', 'resource', 'otlp.name', 'otlp.version', 'timeUnixNano', 'severityNumber', 'severityText', 'attribute', 'content', 'flags', 'traceID', 'spanID']

/** Writes one emitted record's field values (text, in `FIELD_KEYS` order) into `values`;
 *  returns the log's time (Unix seconds). */
function fieldValues(record, values) {
  const [seconds, nanos] = record.hrTime ?? [0, 0]
  const span = record.spanContext
  const resource = fieldsOfResource(record.resource)
  values[0] = resource.host
  values[1] = resource.service
  values[2] = resource.resource
  values[3] = record.instrumentationScope?.name ?? ''
  values[4] = record.instrumentationScope?.version ?? ''
  values[5] = unixNanos(seconds, nanos)
  values[6] = String(record.severityNumber ?? 0)
  values[7] = record.severityText ?? ''
  values[8] = object(record.attributes)
  values[9] = text(record.body)
  values[10] = (span?.traceFlags ?? 0).toString(16)
  values[11] = span?.traceId ?? ''
  values[12] = span?.spanId ?? ''
  return seconds + nanos / 1e9
}

/** The values as a record of `FIELD_KEYS`. */
function fieldsOf(values) {
  const fields = {}
  FIELD_KEYS.forEach((key, i) => {
    fields[key] = values[i]
  })
  return fields
}

/** The log's fields for one emitted record, and its time (Unix seconds). */
function layout(record) {
  const values = new Array(FIELD_KEYS.length)
  const time = fieldValues(record, values)
  return { fields: fieldsOf(values), time }
}

class OtelSink {
  constructor(options = {}) {
    // What is not the integration's is the producer's (checked by the engine, naming what is wrong).
    const producerOptions = /** @type {import('./index').ProducerOptions} */ ({})
    for (const [key, value] of Object.entries(options)) {
      if (!OWN_OPTIONS.includes(key)) producerOptions[key] = value
    }
    this.ownsProducer = !options.producer
    /** The producer records go to. */
    this.producer = options.producer ?? new Producer(producerOptions)
    this.closeTimeoutMs = options.closeTimeoutMs ?? 10000
    /** Records that could not be sent. */
    this.failures = 0
    this._reported = new Set()
    /** The last record's values, and the producer's sender of `FIELD_KEYS` (made at the first). */
    this._values = new Array(FIELD_KEYS.length)
    this._sendValues = null
    this._metrics = new SdkMetrics(this, new.target.name, this instanceof LoghoseLogRecordProcessor, options.meterProvider)
  }

  _send(record) {
    try {
      const values = this._values
      const time = fieldValues(record, values)
      this._sendValues ??= this.producer._stringsSender(FIELD_KEYS)
      // False only when a surrogate pair straddles two values: `send` writes it then.
      if (!this._sendValues(values, time)) this.producer.send(fieldsOf(values), { time })
      return true
    } catch (err) {
      this.failures += 1
      this._metrics.refuse(err)
      const name = err?.name ?? 'Error'
      if (!this._reported.has(name)) {
        this._reported.add(name)
        process.emitWarning(
          `loghose: an OpenTelemetry log record could not be sent to Log Service: ${err?.message ?? err} (counted in failures; reported once per error name)`,
          { code: 'LOGHOSE_OTEL_REFUSED' },
        )
      }
      return false
    }
  }

  async forceFlush() {
    if (!this.producer.closed) await this.producer.flush(this.closeTimeoutMs)
  }

  async shutdown() {
    if (this.ownsProducer && !this.producer.closed) await this.producer.close({ timeoutMs: this.closeTimeoutMs })
  }
}

/** Sends each OTel log record to Log Service as it is emitted. */
class LoghoseLogRecordProcessor extends OtelSink {
  onEmit(logRecord) {
    this._send(logRecord)
  }
}

/** An OTel log exporter to Log Service, for BatchLogRecordProcessor or SimpleLogRecordProcessor:
 *  `export` queues the batch in the producer and answers at once (SUCCESS when every record
 *  was queued, else FAILED, the others counted in `failures`). */
class LoghoseLogExporter extends OtelSink {
  export(logs, resultCallback) {
    let queued = true
    for (const record of logs) queued = this._send(record) && queued
    // ExportResultCode of @opentelemetry/core: SUCCESS 0, FAILED 1.
    resultCallback(queued ? { code: 0 } : { code: 1, error: new Error(`loghose: ${this.failures} record(s) could not be sent so far`) })
  }
}

module.exports = { LoghoseLogRecordProcessor, LoghoseLogExporter, layout }
