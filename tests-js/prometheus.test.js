'use strict'
// The producer's metrics through a real prom-client registry, served over HTTP and read back
// with a Prometheus text-format parser, under faults: counts agree with stats() and with what
// the emulator stored; retries and failures show by status and error code; a closed producer
// scrapes as the close left it; the registration comes off again.

const http = require('node:http')
const client = require('prom-client')
const parse = require('parse-prometheus-text-format')
const { Producer, Emulator, InvalidRecordError } = require('..')
const loghosePrometheus = require('../node/lib/prometheus')
const { quickOptions } = require('./helpers')

jest.setTimeout(60000)

let emu
beforeEach(() => { emu = new Emulator() })
afterEach(() => emu.close())

/** Serves `registry` on a free port; resolves with a scrape function and a stop function. */
async function serve(registry) {
  const server = http.createServer(async (req, res) => {
    res.setHeader('Content-Type', registry.contentType)
    res.end(await registry.metrics())
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  // The parser folds a histogram's labelled series into one: its `_bucket`, `_sum` and
  // `_count` series are read as series of their own (the TYPE line says untyped for it), each
  // label set's lines coming as a run of their own, merged here.
  const scrape = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    const families = new Map(parse(text).map((f) => [f.name, f]))
    for (const f of parse(text.replace(/^(# TYPE \S+) histogram$/gm, '$1 untyped'))) {
      if (f.type !== 'UNTYPED') continue
      const seen = families.get(f.name)
      if (!seen) families.set(f.name, f)
      else if (seen.type === 'UNTYPED') seen.metrics.push(...f.metrics)
    }
    return families
  }
  const stop = () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve) })
  return { scrape, stop }
}

/** The sum of a family's values whose labels include `labels`. */
function total(family, labels = {}) {
  if (!family) return 0
  return family.metrics
    .filter((m) => Object.entries(labels).every(([k, v]) => (m.labels || {})[k] === v))
    .reduce((sum, m) => sum + Number(m.value ?? m.count), 0)
}

test('a scraped registry agrees with stats() and the emulator under faults', async () => {
  const registry = new client.Registry()
  const { scrape, stop } = await serve(registry)
  emu.inject('error', { status: 503, code: 'ServerBusy', count: 2 })
  emu.inject('error', { status: 400, code: 'ParameterInvalid', count: 1 })
  const producer = new Producer(quickOptions(emu, { batchMaxCount: 10 }))
  const registration = loghosePrometheus.register(producer, { registry })
  producer.on('delivery', () => {}) // the failures are expected: told, not warned about
  for (let i = 0; i < 50; i++) {
    producer.send({ id: String(i) }, i % 5 === 0 ? { logstore: 'other' } : undefined)
  }
  expect(() => producer.send({ '': 'no key' })).toThrow(InvalidRecordError)
  await producer.flush(30000)
  const stats = producer.stats()
  const families = await scrape()

  const delivered = families.get('loghose_records_delivered_total')
  expect(total(delivered)).toBe(stats.delivered)
  const stored = (ls) => (emu.totals('loghose', ls) || { logs: 0 }).logs
  expect(stats.delivered).toBe(stored('logs') + stored('other'))
  expect(total(delivered, { logstore: 'other' })).toBe(stored('other'))
  const failed = families.get('loghose_records_failed_total')
  expect(total(failed, { error_code: 'ParameterInvalid' })).toBe(10)
  expect(stats.failed).toBe(10)
  expect(stats.delivered + stats.failed).toBe(50)
  expect(total(families.get('loghose_request_retries_total'))).toBe(stats.retried)
  expect(stats.retried).toBe(2)
  expect(families.get('loghose_request_duration_seconds').type).toBe('HISTOGRAM')
  const counts = families.get('loghose_request_duration_seconds_count')
  expect(total(counts, { status: '503' })).toBe(2)
  expect(total(counts, { status: '400' })).toBe(1)
  expect(total(families.get('loghose_request_duration_seconds_bucket'), { le: '+Inf' })).toBe(total(counts))
  expect(total(counts)).toBeGreaterThanOrEqual(7)
  expect(total(families.get('loghose_records_refused_total'), { reason: 'invalid' })).toBe(1)
  expect(total(families.get('loghose_records_accepted_total'))).toBe(50)
  expect(total(families.get('loghose_delivery_latency_seconds_count'))).toBe(stats.batchesDelivered)

  // Closed: a last scrape sees how it ended.
  await producer.close()
  const after = await scrape()
  expect(total(after.get('loghose_records_delivered_total'))).toBe(stats.delivered)
  expect(total(after.get('loghose_records_pending'))).toBe(0)

  registration.unregister()
  expect([...(await scrape()).keys()].filter((n) => n.startsWith('loghose_'))).toEqual([])
  await stop()
})

test('every metric of the table is registered once, with its help and type, in OpenMetrics too', async () => {
  const registry = new client.Registry(client.Registry.OPENMETRICS_CONTENT_TYPE)
  const producer = new Producer(quickOptions(emu))
  const registration = loghosePrometheus.register(producer, { registry, constLabels: { producer: 'audit' } })
  const table = loghosePrometheus.metricTable()
  expect(registration.names).toEqual(table.map((m) => m.registeredName))
  producer.send({ id: '1' })
  await producer.flush(10000)
  const text = await registry.metrics()
  expect(text).toMatch(/^loghose_records_delivered_total\{producer="audit",project="loghose",logstore="logs"\} 1$/m)
  expect(text).toMatch(/^# TYPE loghose_records_delivered counter$/m)
  expect(text).toMatch(/^loghose_delivery_latency_seconds_bucket\{producer="audit",project="loghose",logstore="logs",le="\+Inf"\} 1$/m)
  for (const m of table) expect(text).toContain(`# HELP ${m.type === 'counter' ? m.name : m.registeredName} `)
  // The same names again clash: the registry refuses them.
  expect(() => loghosePrometheus.register(producer, { registry })).toThrow(/already been registered/)
  registration.unregister()
  await producer.close()
})

/** Every sample line of a text exposition, keyed by name and sorted labels (`le` as a number). */
function series(text) {
  const out = new Map()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match) throw new Error(`not a sample line: ${line}`)
    const labels = [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)]
      .map(([, k, v]) => [k, k === 'le' ? String(Number(v === '+Inf' ? Infinity : v)) : v])
      .sort(([a], [b]) => (a < b ? -1 : 1))
    out.set(`${match[1]}${JSON.stringify(labels)}`, Number(match[3]))
  }
  return out
}

test('metricsText() renders what the prom-client registration exposes, before and after close', async () => {
  emu.inject('error', { status: 503, code: 'ServerBusy', count: 1 })
  const producer = new Producer(quickOptions(emu))
  const registry = new client.Registry()
  loghosePrometheus.register(producer, { registry, constLabels: { producer: 'audit' } })
  for (let i = 0; i < 30; i++) producer.send({ id: String(i) }, i % 3 === 0 ? { logstore: 'other' } : undefined)
  await producer.flush(30000)
  const engine = series(producer.metricsText({ producer: 'audit' }))
  expect(engine).toEqual(series(await registry.metrics()))
  const delivered = engine.get('loghose_records_delivered_total[["logstore","other"],["producer","audit"],["project","loghose"]]')
  expect(delivered).toBe(10)
  const retries = [...engine].filter(([k]) => k.startsWith('loghose_request_retries_total[')).reduce((s, [, v]) => s + v, 0)
  expect(retries).toBe(producer.stats().retried)
  expect(retries).toBe(1)
  for (const name of ['logstore', 'le', '9x', '__x', 'a-b']) {
    expect(() => producer.metricsText({ [name]: 'v' })).toThrow(TypeError)
    expect(() => producer.metricsText({ [name]: 'v' })).toThrow(JSON.stringify(name))
  }
  await producer.close()
  // Closed: the close's snapshot, in both routes alike.
  const closed = series(producer.metricsText({ producer: 'audit' }))
  expect(closed).toEqual(series(await registry.metrics()))
  expect(closed.get('loghose_records_pending[["producer","audit"]]')).toBe(0)
  expect(closed.get('loghose_records_accepted_total[["producer","audit"]]')).toBe(30)
})
