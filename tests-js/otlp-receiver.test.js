// `loghose otlp` (the command's OpenTelemetry logs receiver, run by the package's `loghose`
// bin) with the real OTLP exporters, each in turn: @opentelemetry/exporter-logs-otlp-http
// (OTLP/JSON over HTTP), -proto (protobuf over HTTP) and -grpc (OTLP/gRPC). Every case of the
// shared field table (tests-shared/otel.json, which the in-process processors are checked
// against) emitted through the exporter must be stored field by field as the table says, time
// included; then the flush route and a SIGTERM that ends with status 0.
'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { spawn, spawnSync } = require('node:child_process')
const { once } = require('node:events')
const lh = require('..')
const { ROOT, CLI } = require('./helpers.js')

jest.setTimeout(60000)

const TABLE = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests-shared', 'otel.json'), 'utf8')).cases
const FIELDS = Object.keys(TABLE[0].stored)

/** Starts the receiver on free loopback ports; resolves with the child, its OTLP/HTTP URL and
 * its OTLP/gRPC endpoint (the first two lines it writes). */
async function startReceiver(emu, logstore) {
  const env = {
    ...process.env,
    LOGHOSE_ENDPOINT: emu.endpoint,
    LOGHOSE_PROJECT: 'loghose',
    LOGHOSE_LOGSTORE: logstore,
    ALIBABA_CLOUD_ACCESS_KEY_ID: emu.accessKeyId,
    ALIBABA_CLOUD_ACCESS_KEY_SECRET: emu.accessKeySecret,
  }
  const child = spawn(process.execPath, [CLI, 'otlp', '--http-addr', '127.0.0.1:0', '--grpc-addr', '127.0.0.1:0', '--option', 'linger_ms=20'], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  while (out.split('\n').length < 3) {
    const [chunk] = await once(child.stdout, 'data')
    out += chunk
  }
  const [url, grpcUrl] = out.split('\n').map((line) => line.trim())
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
  expect(grpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
  return { child, url, grpcUrl }
}

// The exporter loads its HTTP agent with a dynamic import, which jest's module sandbox refuses:
// it runs in a plain Node child, emitting each case with a provider of the case's resource.
const EXPORTING = `
const { ROOT_CONTEXT, trace } = require('@opentelemetry/api')
const { LoggerProvider, BatchLogRecordProcessor } = require('@opentelemetry/sdk-logs')
const { resourceFromAttributes } = require('@opentelemetry/resources')
const [url, table, kind] = process.argv.slice(1)
const { OTLPLogExporter } = require('@opentelemetry/exporter-logs-otlp-' + kind)
// The HTTP exporters take the full URL of the route; the gRPC one, the endpoint.
const exporterUrl = kind === 'grpc' ? url : url + '/v1/logs'
require('@opentelemetry/api').diag.setLogger(new (require('@opentelemetry/api').DiagConsoleLogger)(), 30)
async function main() {
  for (const c of JSON.parse(require('node:fs').readFileSync(table, 'utf8')).cases) {
    const provider = new LoggerProvider({
      resource: resourceFromAttributes(c.resource),
      processors: [new BatchLogRecordProcessor({ exporter: new OTLPLogExporter({ url: exporterUrl }) })],
    })
    const logger = provider.getLogger(c.scope.name, c.scope.version)
    let ctx = ROOT_CONTEXT
    if (c.trace_id) ctx = trace.setSpanContext(ROOT_CONTEXT, { traceId: c.trace_id, spanId: c.span_id, traceFlags: c.trace_flags })
    const ns = BigInt(c.timestamp_ns)
    const record = { timestamp: [Number(ns / 1000000000n), Number(ns % 1000000000n)], context: ctx,
      severityNumber: c.severity_number, attributes: c.attributes }
    if (c.body !== null) record.body = c.body
    if (c.severity_text !== null) record.severityText = c.severity_text
    logger.emit(record)
    await provider.shutdown()
  }
}
main().then(() => console.log('sent'), (e) => { console.error(e); process.exit(1) })
`

test.each(['http', 'proto', 'grpc'])('every case of the shared table, sent by the official %s exporter, is stored as the table says', async (kind) => {
  const emu = new lh.Emulator()
  const { child, url, grpcUrl } = await startReceiver(emu, 'received')
  try {
    const target = kind === 'grpc' ? grpcUrl : url
    const exporter = spawnSync(process.execPath, ['-e', EXPORTING, target, path.join(ROOT, 'tests-shared', 'otel.json'), kind], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 30000,
    })
    expect({ status: exporter.status, stderr: exporter.stderr, stdout: exporter.stdout.trim() }).toEqual({ status: 0, stderr: '', stdout: 'sent' })
    const flushed = await fetch(`${url}/flush?timeout_ms=20000`, { method: 'POST' })
    expect(flushed.status).toBe(200)
    const counts = await flushed.json()
    expect(counts).toEqual({ ...counts, pending: 0, accepted: TABLE.length, delivered: TABLE.length })
    const logs = emu.logs('loghose', 'received').map((l) => ({ ...Object.fromEntries(l.contents), __time__: l.time }))
    expect(logs).toHaveLength(TABLE.length)
    const key = (fields) => JSON.stringify(FIELDS.map((k) => fields[k]))
    const got = new Map(logs.map((log) => [key(log), log]))
    for (const c of TABLE) {
      const log = got.get(key(c.stored))
      expect({ name: c.name, fields: log && Object.fromEntries(FIELDS.map((k) => [k, log[k]])) }).toEqual({ name: c.name, fields: c.stored })
      expect(log.__time__).toBe(c.time)
    }
    child.kill('SIGTERM')
    const [code] = await once(child, 'exit')
    expect(code).toBe(0)
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL')
    emu.close()
  }
})
