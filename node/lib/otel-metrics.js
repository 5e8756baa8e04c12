'use strict'
// The OpenTelemetry SDK's own log-pipeline metrics (`otel.sdk.*`) for loghose/otel's processor
// and exporter, through the application's MeterProvider (`meterProvider`, else the global one
// of @opentelemetry/api; without an SDK provider every instrument is a no-op). The same
// instruments and attributes as the Python front's `loghose._otel_metrics`:
//
// - `otel.sdk.processor.log.processed` (processor only): records handed on to be sent (the
//   producer's accepted records that left its queue for a batch in flight or done), and the
//   records the processor could not hand over, by `error.type`: `queue_full` (buffer full),
//   `already_shutdown` (producer closed), else the error's name.
// - `otel.sdk.processor.log.queue.size` (processor only): records accepted and not yet in a
//   batch being sent. No `queue.capacity`: the queue is bounded in bytes (`bufferMaxBytes`),
//   not records; `producer.metrics()` has it as `loghose_buffer_capacity_bytes`.
// - `otel.sdk.exporter.log.inflight`: records in batches being sent (the processor), or every
//   record accepted and not yet at an outcome (the exporter, whose caller's queue is before it).
// - `otel.sdk.exporter.log.exported`: records delivered, and records failed for good with
//   `error.type` their error code (the producer's counters, the ones `stats()` reads; records
//   kept in the spool for the next producer are not finished and not counted).
// - `otel.sdk.exporter.operation.duration`: one observation per batch, from its first request
//   to its outcome (retries and waits included), with `http.response.status_code` of the last
//   answer and `error.type` when it failed.
//
// Every instrument carries `otel.component.type` (the class's name, the conventions' choice
// for a component without a standard one) and `otel.component.name` (`type/N`); the exporter's
// also `server.address` and `server.port`. Counters and gauges are the producer's counters
// read at collection; the histogram is fed from the reports the producer hands the JavaScript
// thread (one `record` per batch, so it may trail a flush by the moment a report takes).
// Nothing is added to a record's path but one increment on failure. Runs on the JavaScript
// thread.

/** Boundaries for durations in seconds, as the conventions advise for `*.duration`. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]

const instances = new Map()

/** `error.type` of a record the processor could not hand to the producer. */
function errorType(err) {
  const name = err?.name ?? 'Error'
  if (name === 'BufferFullError') return 'queue_full'
  if (name === 'ProducerClosedError') return 'already_shutdown'
  return name
}

function globalMeterProvider() {
  try {
    return require('@opentelemetry/api').metrics.getMeterProvider()
  } catch {
    return null // no @opentelemetry/api: nothing to report to
  }
}

/** The instruments of one meter provider, shared by every processor and exporter reporting to
 *  it (one instrument per name); each callback asks every live member for its observations. */
class Instruments {
  constructor(provider) {
    /** WeakRefs to the members: a provider outliving a sink does not keep it (and its producer). */
    this.members = new Set()
    const meter = provider.getMeter('loghose', require('../../package.json').version)
    this.duration = meter.createHistogram('otel.sdk.exporter.operation.duration', {
      unit: 's',
      description: 'The duration of exporting a batch of telemetry records.',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    })
    const observed = (instrument, what) => instrument.addCallback((result) => {
      for (const ref of this.members) {
        const member = ref.deref()
        if (member === undefined) this.members.delete(ref)
        else member.observe(what, result)
      }
    })
    observed(meter.createObservableCounter('otel.sdk.exporter.log.exported', {
      unit: '{log_record}',
      description: 'The number of log records for which the export has finished, either successful or failed.',
    }), 'exported')
    observed(meter.createObservableUpDownCounter('otel.sdk.exporter.log.inflight', {
      unit: '{log_record}',
      description: 'The number of log records which were passed to the exporter, but that have not been exported yet (neither successful, nor failed).',
    }), 'inflight')
    observed(meter.createObservableCounter('otel.sdk.processor.log.processed', {
      unit: '{log_record}',
      description: 'The number of log records for which the processing has finished, either successful or failed.',
    }), 'processed')
    observed(meter.createObservableUpDownCounter('otel.sdk.processor.log.queue.size', {
      unit: '{log_record}',
      description: 'The number of log records in the queue of a given instance of an SDK log processor.',
    }), 'queueSize')
  }
}

const byProvider = new WeakMap()

class SdkMetrics {
  /** `sink` (its `producer`), the component's type name, whether it is a processor. */
  constructor(sink, componentType, processor, meterProvider) {
    const number = instances.get(componentType) ?? 0
    instances.set(componentType, number + 1)
    this.component = { 'otel.component.type': componentType, 'otel.component.name': `${componentType}/${number}` }
    const { address, port } = sink.producer.serverAddress
    this.server = { ...this.component, 'server.address': address, 'server.port': port }
    this._processor = processor
    this._producer = new WeakRef(sink.producer)
    /** Records the processor could not hand over, by `error.type`. */
    this.refused = new Map()
    /** Each counter as the last collection reported it (a counter never goes back, though the
     *  counters it is read from are read one at a time). */
    this._last = new Map()
    const provider = meterProvider ?? globalMeterProvider()
    if (!provider) return
    let instruments = byProvider.get(provider)
    if (instruments === undefined) {
      instruments = new Instruments(provider)
      byProvider.set(provider, instruments)
    }
    instruments.members.add(new WeakRef(this))
    this._duration = instruments.duration
    const self = new WeakRef(this)
    sink.producer._reportObservers.push((reports) => self.deref()?._reports(reports))
  }

  /** Observes one instrument (`exported`, `inflight`, `processed`, `queueSize`) at a collection. */
  observe(what, result) {
    if (!this._processor && (what === 'processed' || what === 'queueSize')) return
    const stats = this._producer.deref()?.stats()
    if (stats) this[`_${what}`](stats, result)
  }

  _count(key, current) {
    const value = Math.max(this._last.get(key) ?? 0, current)
    this._last.set(key, value)
    return value
  }

  /** Counts a record `send` refused. */
  refuse(err) {
    const kind = errorType(err)
    this.refused.set(kind, (this.refused.get(kind) ?? 0) + 1)
  }

  _reports(reports) {
    for (const report of reports) {
      if (report.kept || report.attempts === 0) continue
      const attributes = report.delivered ? this.server : { ...this.server, 'error.type': report.code || 'rejected' }
      const status = report.delivered ? 200 : report.httpStatus
      this._duration.record(report.sendMs / 1000, status == null ? attributes : { ...attributes, 'http.response.status_code': status })
    }
  }

  _exported(stats, result) {
    result.observe(this._count('exported', stats.delivered), this.server)
    const failed = [...this._last.keys()].filter((k) => k.startsWith('failed:')).map((k) => k.slice(7))
    const codes = new Set([...Object.keys(stats.failuresByCode ?? {}), ...failed])
    for (const code of [...codes].sort()) {
      result.observe(this._count(`failed:${code}`, stats.failuresByCode?.[code] ?? 0), { ...this.server, 'error.type': code })
    }
  }

  _inflight(stats, result) {
    result.observe(this._processor ? stats.inFlightRecords : stats.queuedRecords, this.server)
  }

  _queueSize(stats, result) {
    result.observe(Math.max(0, stats.queuedRecords - stats.inFlightRecords), this.component)
  }

  _processed(stats, result) {
    const waiting = Math.max(0, stats.queuedRecords - stats.inFlightRecords)
    result.observe(this._count('processed', stats.accepted - waiting), this.component)
    for (const [kind, records] of [...this.refused].sort()) {
      result.observe(records, { ...this.component, 'error.type': kind })
    }
  }
}

module.exports = { SdkMetrics, DURATION_BUCKETS, errorType }
