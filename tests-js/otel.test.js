// OpenTelemetry logs into the emulator: the processor and the exporter with the real
// @opentelemetry/sdk-logs, every case of the shared field table (tests-shared/otel.json, which
// the Python front reads too) checked field by field, a record emitted inside a real span,
// failures counted, and shutdown's delivery.
'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { trace, context, ROOT_CONTEXT } = require('@opentelemetry/api')
const { LoggerProvider, BatchLogRecordProcessor } = require('@opentelemetry/sdk-logs')
const { resourceFromAttributes } = require('@opentelemetry/resources')
const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base')
const lh = require('..')
const { LoghoseLogRecordProcessor, LoghoseLogExporter, layout } = require('../node/lib/otel.js')
const { ROOT } = require('./helpers.js')

jest.setTimeout(60000)

const TABLE = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests-shared', 'otel.json'), 'utf8')).cases
const FIELDS = Object.keys(TABLE[0].stored)
const stored = (emu, logstore) => emu.logs('loghose', logstore).map((l) => ({ ...Object.fromEntries(l.contents), __time__: l.time }))

function emitCase(c, processor) {
  const provider = new LoggerProvider({ resource: resourceFromAttributes(c.resource), processors: [processor] })
  const logger = provider.getLogger(c.scope.name, c.scope.version)
  let ctx = ROOT_CONTEXT
  if (c.trace_id) ctx = trace.setSpanContext(ROOT_CONTEXT, { traceId: c.trace_id, spanId: c.span_id, traceFlags: c.trace_flags })
  const ns = BigInt(c.timestamp_ns)
  const record = {
    timestamp: [Number(ns / 1000000000n), Number(ns % 1000000000n)],
    context: ctx,
    severityNumber: c.severity_number,
    attributes: c.attributes,
  }
  if (c.body !== null) record.body = c.body
  if (c.severity_text !== null) record.severityText = c.severity_text
  logger.emit(record)
  return provider
}

test('attribute JSON, written by hand or not, is what a plain reference writes: keys by code point, Go\'s escapes', () => {
  // The reference: each key and value through JSON.stringify, keys ordered by code point,
  // then the characters Go escapes in HTML-safe JSON.
  const byCodePoint = (a, b) => {
    const x = Array.from(a, (c) => c.codePointAt(0))
    const y = Array.from(b, (c) => c.codePointAt(0))
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i]
    return x.length - y.length
  }
  const goEscapes = (text) => text.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
  const reference = (attributes) => {
    const keys = Object.keys(attributes).sort(byCodePoint)
    return goEscapes(`{${keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(String(attributes[k]))}`).join(',')}}`)
  }
  let seed = 7
  const random = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return Math.floor((seed / 2147483648) * n)
  }
  const pieces = ['a', 'b', 'z', '1', '0', '12', '.', ' ', 'é', 'ﬁ', '😀', '"', '\\', '<', '&', '\n', '\u2028', '\u0001']
  const word = () => Array.from({ length: 1 + random(3) }, () => pieces[random(pieces.length)]).join('')
  let handWritten = 0
  for (let n = 0; n < 2000; n++) {
    const attributes = {}
    for (let k = random(5); k > 0; k--) {
      // Strings mostly; integers and booleans, whose text is the same here and in the reference.
      const kind = random(6)
      attributes[word()] = kind === 0 ? n : kind === 1 ? n % 2 === 0 : word()
    }
    const { attribute } = layout({ attributes }).fields
    expect([attributes, attribute]).toEqual([attributes, reference(attributes)])
    if (!/[\\<>&\ud800-\udfff]/.test(attribute) && !/"[0-9]+"/.test(attribute)) handWritten += 1
  }
  // Both ways of writing it were exercised.
  expect(handWritten).toBeGreaterThan(200)
  expect(handWritten).toBeLessThan(1800)
})

describe('OpenTelemetry', () => {
  let emu
  beforeEach(() => {
    emu = new lh.Emulator()
  })
  afterEach(() => emu.close())

  for (const shape of ['processor', 'exporter']) {
    test(`every case of the shared table is stored field by field (${shape})`, async () => {
      for (const [n, c] of TABLE.entries()) {
        const logstore = `otel-${shape}-${n}`
        const options = { ...emu.producerOptions('loghose', logstore), lingerMs: 10 }
        const sink = shape === 'processor' ? new LoghoseLogRecordProcessor(options) : new BatchLogRecordProcessor({ exporter: new LoghoseLogExporter(options) })
        const provider = emitCase(c, sink)
        await provider.shutdown() // delivers and closes the producer the integration built
        const logs = stored(emu, logstore)
        expect(logs).toHaveLength(1)
        const [log] = logs
        expect(Object.fromEntries(FIELDS.map((k) => [k, log[k]]))).toEqual(c.stored)
        expect(Object.keys(log).sort()).toEqual([...FIELDS, '__time__'].sort())
        expect(log.__time__).toBe(c.time)
      }
    })
  }

  test('a record emitted in a real span carries its ids; a passed producer is left open', async () => {
    const producer = new lh.Producer({ ...emu.producerOptions('loghose', 'span'), lingerMs: 10 })
    const processor = new LoghoseLogRecordProcessor({ producer })
    const provider = new LoggerProvider({ resource: resourceFromAttributes({ 'service.name': 'checkout', zone: 'b' }), processors: [processor] })
    const tracer = new BasicTracerProvider().getTracer('shop')
    const span = tracer.startSpan('pay')
    const before = Math.floor(Date.now() / 1000)
    provider.getLogger('shop', '1.0').emit({ body: 'order paid', severityText: 'INFO', severityNumber: 9, context: trace.setSpan(context.active(), span), attributes: { order: 'A-17', cents: 1250 } })
    span.end()
    await provider.shutdown()
    expect(producer.closed).toBe(false)
    expect(await producer.flush(10000)).toBe(0)
    const [log] = stored(emu, 'span')
    const ids = span.spanContext()
    expect([log.traceID, log.spanID, log.flags]).toEqual([ids.traceId, ids.spanId, ids.traceFlags.toString(16)])
    expect([log.service, log.host, log.resource, log['otlp.name'], log['otlp.version']]).toEqual(['checkout', '', '{"zone":"b"}', 'shop', '1.0'])
    expect(JSON.parse(log.attribute)).toEqual({ order: 'A-17', cents: '1250' })
    expect(log.__time__).toBeGreaterThanOrEqual(before)
    await producer.close()
  })

  test('halves of a surrogate pair in two fields are stored as two replacement characters, the other records as sent', async () => {
    const producer = new lh.Producer({ ...emu.producerOptions('loghose', 'halves'), lingerMs: 10 })
    const processor = new LoghoseLogRecordProcessor({ producer })
    const provider = new LoggerProvider({ processors: [processor] })
    const emit = (scope, version, body) => provider.getLogger(scope, version).emit({ body, severityNumber: 9, attributes: { n: 2 ** 60, big: -(2 ** 53) - 2 } })
    emit('plain', '1', 'first')
    // The scope's name ends with a pair's first half, its version starts with the second.
    emit('shop\uD83D', '\uDE00.2', 'second')
    emit('plain', '1', 'third 😀')
    await provider.shutdown()
    await producer.close()
    const logs = stored(emu, 'halves')
    expect(logs.map((l) => [l['otlp.name'], l['otlp.version'], l.content])).toEqual([
      ['plain', '1', 'first'],
      ['shop\uFFFD', '\uFFFD.2', 'second'],
      ['plain', '1', 'third 😀'],
    ])
    expect(logs.map((l) => l.attribute)).toEqual(Array(3).fill('{"big":"-9007199254740994","n":"1152921504606846976"}'))
    expect(processor.failures).toBe(0)
  })

  test('records the producer refuses are counted, reported once, and the export answers FAILED', async () => {
    const producer = new lh.Producer({ ...emu.producerOptions('loghose', 'refused') })
    await producer.close()
    const exporter = new LoghoseLogExporter({ producer })
    const warnings = []
    const emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation((text, options) => warnings.push({ text: String(text), ...options }))
    const records = [1, 2, 3].map((n) => ({ hrTime: [1764763200, n], body: String(n), attributes: {}, resource: resourceFromAttributes({}), instrumentationScope: { name: 's' } }))
    let result
    exporter.export(records, (r) => {
      result = r
    })
    emitWarning.mockRestore()
    expect(result.code).toBe(1)
    expect(exporter.failures).toBe(3)
    expect(warnings.filter((w) => w.code === 'LOGHOSE_OTEL_REFUSED')).toHaveLength(1)
    expect(warnings[0].text).toMatch(/could not be sent/)
  })

  test('the processor reports the SDK log-pipeline metrics under faults; the exporter its records in flight', async () => {
    const { MeterProvider, InMemoryMetricExporter, AggregationTemporality, PeriodicExportingMetricReader } = require('@opentelemetry/sdk-metrics')
    const exported = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({ exporter: exported, exportIntervalMillis: 3600000 })
    const meterProvider = new MeterProvider({ readers: [reader] })
    const points = async () => {
      const { resourceMetrics } = await reader.collect()
      const found = []
      for (const scope of resourceMetrics.scopeMetrics) {
        expect(scope.scope.name).toBe('loghose')
        for (const metric of scope.metrics) for (const point of metric.dataPoints) found.push({ name: metric.descriptor.name, attributes: point.attributes, value: point.value })
      }
      return found
    }
    // The histogram is fed by the reports, which may trail a flush by a moment.
    const settledDurations = async (type, batches) => {
      for (const deadline = Date.now() + 10000; ;) {
        const durations = (await points()).filter((p) => p.name === 'otel.sdk.exporter.operation.duration' && p.attributes['otel.component.type'] === type)
        if (durations.reduce((n, p) => n + p.value.count, 0) >= batches || Date.now() > deadline) return durations
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
    const named = (found, name, attributes) => Object.fromEntries(found
      .filter((p) => p.name === name && Object.entries(attributes).every(([k, v]) => p.attributes[k] === v))
      .map((p) => [p.attributes['error.type'] ?? 'ok', p.value]))

    emu.inject('error', { status: 503, code: 'ServerBusy', count: 2 })
    emu.inject('error', { status: 400, code: 'ParameterInvalid', count: 1 })
    const processor = new LoghoseLogRecordProcessor({ ...emu.producerOptions('loghose', 'metered'), lingerMs: 10, batchMaxCount: 10, backoffBaseMs: 10, meterProvider })
    const provider = new LoggerProvider({ processors: [processor] })
    const logger = provider.getLogger('metered')
    for (let i = 0; i < 40; i++) logger.emit({ body: `record ${i}`, severityNumber: 9 })
    await processor.forceFlush()
    const stats = processor.producer.stats()
    let found = await points()
    const component = { 'otel.component.type': 'LoghoseLogRecordProcessor' }
    const { address, port } = processor.producer.serverAddress
    expect([address, port]).toEqual(['127.0.0.1', Number(emu.endpoint.split(':').pop())])
    const server = { ...component, 'server.address': address, 'server.port': port }
    expect(named(found, 'otel.sdk.exporter.log.exported', server)).toEqual({ ok: stats.delivered, ParameterInvalid: stats.failed })
    expect([stats.delivered, stats.failed, emu.totals('loghose', 'metered').logs]).toEqual([30, 10, 30])
    const durations = await settledDurations('LoghoseLogRecordProcessor', 4)
    // One observation per batch; the two 503s were retried, so every batch ends in 200 or 400.
    expect(Object.fromEntries(durations.map((p) => [`${p.attributes['http.response.status_code']} ${p.attributes['error.type'] ?? ''}`, p.value.count])))
      .toEqual({ '200 ': 3, '400 ParameterInvalid': 1 })
    expect(durations.every((p) => p.value.sum > 0 && p.value.sum < 30)).toBe(true)
    expect(named(found, 'otel.sdk.processor.log.processed', component)).toEqual({ ok: 40 })
    expect(named(found, 'otel.sdk.processor.log.queue.size', component)).toEqual({ ok: 0 })
    expect(named(found, 'otel.sdk.exporter.log.inflight', server)).toEqual({ ok: 0 })
    expect(found.every((p) => p.attributes['otel.component.name'].startsWith('LoghoseLogRecordProcessor/'))).toBe(true)
    await provider.shutdown()

    // A producer passed in and closed: records are refused as already_shutdown.
    const producer = new lh.Producer(emu.producerOptions('loghose', 'metered'))
    await producer.close()
    const passed = new LoghoseLogRecordProcessor({ producer, meterProvider })
    const emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation(() => {})
    passed.onEmit({ hrTime: [1764763200, 0], body: 'late', attributes: {}, resource: resourceFromAttributes({}), instrumentationScope: { name: 's' } })
    emitWarning.mockRestore()
    found = await points()
    expect(named(found, 'otel.sdk.processor.log.processed', { 'otel.component.name': passed._metrics.component['otel.component.name'] }))
      .toEqual({ ok: 0, already_shutdown: 1 })

    // The exporter: a hanging first request keeps its records in flight until the retry.
    emu.inject('hang', { ms: 2000, count: 1 })
    const exporter = new LoghoseLogExporter({ ...emu.producerOptions('loghose', 'exported'), lingerMs: 10, requestTimeoutMs: 500, backoffBaseMs: 10, meterProvider })
    const records = [1, 2, 3, 4, 5].map((n) => ({ hrTime: [1764763200, n], body: String(n), attributes: {}, resource: resourceFromAttributes({}), instrumentationScope: { name: 's' } }))
    exporter.export(records, () => {})
    const mine = { 'otel.component.type': 'LoghoseLogExporter' }
    found = await points()
    expect(named(found, 'otel.sdk.exporter.log.inflight', mine)).toEqual({ ok: 5 })
    expect(found.some((p) => p.name.startsWith('otel.sdk.processor') && p.attributes['otel.component.type'] === 'LoghoseLogExporter')).toBe(false)
    await exporter.forceFlush()
    found = await points()
    expect(named(found, 'otel.sdk.exporter.log.inflight', mine)).toEqual({ ok: 0 })
    expect(named(found, 'otel.sdk.exporter.log.exported', mine)).toEqual({ ok: 5 })
    const [duration] = await settledDurations('LoghoseLogExporter', 1)
    expect(duration.value.count).toBe(1)
    expect(duration.value.sum).toBeGreaterThanOrEqual(0.5) // the timed-out attempt is in the operation
    expect(exporter.producer.stats().retried).toBe(1)
    await exporter.shutdown()
    await meterProvider.shutdown()
  })
})
