'use strict'
// The lab's benchmark commands from Node (`node lab/node/bench-cli.js COMMAND`; not part of the
// package): `bench` runs a scenario (lab/node/bench.js)
// against the emulator in a child process and prints its tables; `middleware` is scenario S3 (an
// HTTP service that logs every request, loaded from a second process); `logging` times a record
// through pino, winston and OpenTelemetry into loghose. `load` and `bench-emulator` are their
// child processes' sides, started through this file. Each ends its process with status 2 on
// a usage error.

const { spawn } = require('node:child_process')
const { createHistogram, monitorEventLoopDelay } = require('node:perf_hooks')
const path = require('node:path')
const lh = require('../../node/lib/index.js')
const native = require('../../node/lib/binding.js')
const benchScenarios = require('./bench.js')
const { median } = benchScenarios

/** The command line the children are started with. */
const CLI = __filename

const DEFAULTS = {
  middleware: { seconds: 10, connections: 50, phases: 'none,loghose,console' },
  logging: { rounds: 5, records: 20000 },
}

const FLAGS = {
  middleware: { seconds: 'number', connections: 'number', phases: 'list' },
  logging: { rounds: 'number', records: 'number' },
}

/** The command's flags, camelCased; an unknown flag or a bad value is a usage error. */
function args(command, argv) {
  answerHelp(command, argv)
  const kinds = FLAGS[command]
  const { parseArgs } = require('node:util')
  let values
  try {
    values = parseArgs({ args: argv, strict: true, allowPositionals: false, options: Object.fromEntries(Object.keys(kinds).map((k) => [k, { type: 'string' }])) }).values
  } catch (err) {
    usageError(err.message)
  }
  const out = { ...DEFAULTS[command] }
  for (const [flag, text] of Object.entries(values)) {
    const key = flag.replace(/-([a-z])/g, (_, c) => c.toUpperCase())
    const kind = kinds[flag]
    if (kind === 'number') {
      const n = Number(text)
      if (!Number.isFinite(n) || n < 0) usageError(`--${flag} must be a number, not ${JSON.stringify(text)}`)
      out[key] = n
    } else {
      out[key] = text
    }
  }
  return out
}

/** Each benchmark command's help, printed by `loghose COMMAND --help`. */
const HELP = {
  bench:
    'usage: node lab/node/bench-cli.js bench [options]\n' +
    'Runs a benchmark scenario from Node against the emulator (in a child process, at nice 10) and prints its tables.\n' +
    '  --scenario s1|s1r|s2|s4|s5|s6  the scenario (default s1)\n' +
    '  --rates 1000,200000         throttled rates, logs/s (S1)\n' +
    '  --seconds N                 seconds per throttled rate\n' +
    '  --unthrottled-seconds N     seconds of the unthrottled run\n' +
    '  --preset server|pi          the producer preset\n' +
    '  --param NAME=JSON           any other scenario parameter (repeatable); --params JSON sets several\n' +
    '  --compare N                 also compare an object, an array of pairs and sendMany, N records each\n' +
    '  --json                      the rows as JSON instead of tables\n' +
    '  --events                    with the event loop delay\n' +
    '  --no-progress               no progress line',
  middleware:
    'usage: node lab/node/bench-cli.js middleware [--seconds N] [--connections N] [--phases none,loghose,console,pino,pino-file]\n' +
    'Scenario S3: an HTTP service that logs every request, loaded from a second process, per phase.',
  logging: 'usage: node lab/node/bench-cli.js logging [--rounds N] [--records N]\nThe cost of a record through pino, winston and OpenTelemetry into loghose.',
}

/** Prints `command`'s help and ends the process when `argv` asks for it. */
function answerHelp(command, argv) {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(HELP[command])
    process.exit(0)
  }
}

function usageError(message) {
  console.error(`loghose lab: ${message}\n(node lab/node/bench-cli.js bench|middleware|logging --help for their options)`)
  process.exit(2)
}

const COMPARE_ROUNDS = 5

/** µs per record for an object, an array of pairs, and sendMany (records built in the loop): one
 * producer, a warm-up round, then COMPARE_ROUNDS rounds with the styles alternating; the median
 * round of each style, and how many records of all rounds were received and lost. */
async function compare(emu, count) {
  const measure = benchScenarios.meter(emu, 'compare')
  const producer = lh.Producer.fromPreset('server', { ...emu.options, project: 'bench', logstore: 'compare', maxBlockMs: 60000 })
  const styles = {
    object: () => {
      for (let i = 0; i < count; i++) producer.send({ level: 'INFO', logger: 'app.http', msg: 'request served', status: '200', path: '/api/items', index: String(i) })
    },
    pairs: () => {
      for (let i = 0; i < count; i++) producer.send([['level', 'INFO'], ['logger', 'app.http'], ['msg', 'request served'], ['status', '200'], ['path', '/api/items'], ['index', String(i)]])
    },
    sendMany: () => {
      for (let start = 0; start < count; start += 1000) {
        const batch = []
        for (let i = start; i < Math.min(start + 1000, count); i++) batch.push({ level: 'INFO', logger: 'app.http', msg: 'request served', status: '200', path: '/api/items', index: String(i) })
        producer.sendMany(batch)
      }
    },
  }
  const rounds = Object.fromEntries(Object.keys(styles).map((style) => [style, []]))
  for (let round = 0; round <= COMPARE_ROUNDS; round++) {
    for (const [style, loop] of Object.entries(styles)) {
      const t = process.hrtime.bigint()
      loop()
      if (round > 0) rounds[style].push(Number(process.hrtime.bigint() - t) / 1000 / count)
      // Lets delivery reports and timers run between rounds, as an application's loop would.
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
  await producer.flush(120000)
  await producer.close()
  const sent = (COMPARE_ROUNDS + 1) * Object.keys(styles).length * count
  const { received, lost } = measure.counted(sent)
  return { us: Object.fromEntries(Object.entries(rounds).map(([style, us]) => [style, median(us)])), received, lost }
}

/** Rows as markdown tables (the engine's table writer: one table per shape of row). */
function markdown(rows) {
  return native.benchMarkdown(JSON.stringify(rows.map((row) => Object.entries(row))))
}

async function bench(argv) {
  answerHelp('bench', argv)
  const { parseArgs } = require('node:util')
  let values
  try {
    values = parseArgs({
      args: argv, strict: true, allowPositionals: false,
      options: {
        scenario: { type: 'string', default: 's1' }, rates: { type: 'string' }, seconds: { type: 'string' }, 'unthrottled-seconds': { type: 'string' },
        preset: { type: 'string' }, compare: { type: 'string' }, param: { type: 'string', multiple: true }, params: { type: 'string' },
        events: { type: 'boolean' }, json: { type: 'boolean' }, progress: { type: 'boolean' }, 'no-progress': { type: 'boolean' },
      },
    }).values
  } catch (err) {
    usageError(err.message)
  }
  const number = (flag) => {
    const n = Number(values[flag])
    if (!Number.isFinite(n) || n < 0) usageError(`--${flag} must be a number, not ${JSON.stringify(values[flag])}`)
    return n
  }
  const params = values.params ? JSON.parse(values.params) : {}
  if (values.rates !== undefined) params.rates = values.rates.split(',').filter(Boolean).map(Number)
  if (values.seconds !== undefined) params.seconds = number('seconds')
  if (values['unthrottled-seconds'] !== undefined) params.unthrottledSeconds = number('unthrottled-seconds')
  if (values.preset !== undefined) {
    if (values.preset !== 'server' && values.preset !== 'pi') usageError(`--preset must be server or pi, not ${JSON.stringify(values.preset)}`)
    params.preset = values.preset
  }
  for (const item of values.param || []) {
    const at = item.indexOf('=')
    const [name, text] = at < 0 ? [item, ''] : [item.slice(0, at), item.slice(at + 1)]
    try {
      params[name] = JSON.parse(text)
    } catch {
      params[name] = text
    }
  }
  const compareCount = values.compare === undefined ? 0 : number('compare')
  let full
  try {
    full = benchScenarios.checked(values.scenario, params)
  } catch (err) {
    usageError(err.message)
  }
  if (values.events) {
    // The child side of bench.run: every event a JSON line, as it happens.
    // Exit status 0: every check held; 1: a check failed; 3: the scenario itself broke.
    let lost = false
    try {
      await benchScenarios.runHere(values.scenario, full, (event) => {
        if (event.row && benchScenarios.failed(event.row)) lost = true
        process.stdout.write(JSON.stringify(event) + '\n')
      })
    } catch (err) {
      console.error(err)
      process.exit(3)
    }
    process.exitCode = lost ? 1 : 0
    return
  }
  const rows = await benchScenarios.run(values.scenario, full, { progress: values['no-progress'] ? false : values.progress })
  let failed = rows.some(benchScenarios.failed)
  let compared = null
  if (compareCount > 0) {
    const emu = await benchScenarios.startEmulator()
    try {
      compared = await compare(emu, compareCount)
    } finally {
      emu.close()
    }
    failed = failed || compared.lost !== 0
  }
  if (values.json) {
    console.log(JSON.stringify(rows, null, 1))
  } else {
    console.log(`Scenario ${values.scenario} from Node, emulator in a child process: ${JSON.stringify(Object.fromEntries(Object.entries(full).filter(([, v]) => !Array.isArray(v) || v.length < 8)))}\n`)
    console.log(markdown(rows))
    if (compared) {
      console.log(`| send style (6 fields, built in the loop; median of ${COMPARE_ROUNDS} rounds) | µs per record |\n|---|---:|`)
      for (const [style, us] of Object.entries(compared.us)) console.log(`| ${style} | ${us.toFixed(3)} |`)
      console.log(`\n${compared.received} records received, ${compared.lost} lost`)
    }
  }
  if (failed) {
    console.error(`${values.scenario} FAILED: logs were lost, duplicated or left pending`)
    process.exitCode = 1
  }
}

/** Scenario S3 in Node: an HTTP service that logs one access record per request through
 * loghose, loaded over keep-alive connections by a child process. Reports requests/s and the
 * service's event loop delay without logging, with loghose, and with console logging to a
 * file, one phase after the other. */
async function middleware(argv) {
  const opts = args('middleware', argv)
  const emu = await benchScenarios.startEmulator()
  const http = require('node:http')
  const fs = require('node:fs')
  const os = require('node:os')
  const path = require('node:path')
  const logFile = path.join(os.tmpdir(), `loghose-s3-${process.pid}.log`)
  const fileConsole = new console.Console(fs.createWriteStream(logFile))
  const producer = lh.Producer.fromPreset('server', {
    ...emu.options,
    project: 'bench-s3', logstore: 'access', topic: 'http',
  })
  const phases = opts.phases.split(',')
  // pino phases (pino is the application's dependency, not loghose's): loghose's transport in
  // pino's worker, and pino's own asynchronous file destination.
  let pinoLoghose = null
  let pinoTransport = null
  let pinoFile = null
  if (phases.some((p) => p === 'pino' || p === 'pino-file')) {
    const pino = require('pino')
    if (phases.includes('pino')) {
      pinoTransport = pino.transport({
        target: path.join(__dirname, '..', '..', 'node', 'lib', 'pino.js'),
        options: { ...lh.Producer.presetOptions('server'), ...emu.options, project: 'bench-s3', logstore: 'access-pino', topic: 'http' },
      })
      pinoLoghose = pino(pinoTransport)
    }
    if (phases.includes('pino-file')) pinoFile = pino(pino.destination({ dest: `${logFile}.pino`, sync: false }))
  }
  let pinoServed = 0
  const callbacks = benchScenarios.timeReportCallbacks(producer)
  let calls = createHistogram() // the durations of the phase's logging calls, ns
  let mode = 'none'
  let served = 0
  const server = http.createServer((req, res) => {
    const started = process.hrtime.bigint()
    res.end('ok')
    const record = {
      method: req.method, path: req.url, status: 200, bytes: 2,
      micros: Number(process.hrtime.bigint() - started) / 1000 | 0, agent: req.headers['user-agent'] || '',
    }
    // The longest logging call, either way: a call that a collection or the machine's
    // scheduler interrupts shows here as much as the logger's own work.
    const t = process.hrtime.bigint()
    if (mode === 'loghose') producer.send(record)
    else if (mode === 'console') fileConsole.log(JSON.stringify(record))
    else if (mode === 'pino') {
      pinoLoghose.info(record)
      pinoServed += 1
    } else if (mode === 'pino-file') pinoFile.info(record)
    if (mode !== 'none') calls.record(Math.max(1, Number(process.hrtime.bigint() - t)))
    served += 1
  })
  server.keepAliveTimeout = 60000
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${server.address().port}/api/items?id=1`
  const rows = []
  try {
    // A short unreported warm-up with logging, so the first phase does not pay for JIT
    // compilation and connection setup.
    for (const phase of ['warm-up', ...phases]) {
      mode = phase === 'warm-up' ? 'loghose' : phase
      served = 0
      calls = createHistogram()
      callbacks.maxNs = 0
      const delay = monitorEventLoopDelay({ resolution: 1 })
      delay.enable()
      const seconds = phase === 'warm-up' ? Math.min(2, opts.seconds) : opts.seconds
      const load = spawn(process.execPath, [CLI, 'load', url, String(seconds), String(opts.connections)], { stdio: ['ignore', 'pipe', 'inherit'] })
      const loadDone = new Promise((r) => load.on('exit', r))
      const t0 = Date.now()
      await loadDone
      delay.disable()
      if (phase !== 'warm-up') rows.push({ phase, rps: served / ((Date.now() - t0) / 1000), maxMs: delay.max / 1e6, p99Ms: delay.percentile(99) / 1e6, callP99Us: calls.percentile(99) / 1000, callMaxUs: calls.max / 1000, callbackMs: callbacks.maxNs / 1e6 })
    }
    const left = await producer.flush(60000)
    await producer.close({ timeoutMs: 10000 })
    const got = (await (await fetch(`${emu.endpoint}/_emulator/totals?project=bench-s3&logstore=access`)).json()).logs
    let pinoLine = ''
    if (pinoTransport !== null) {
      pinoTransport.end()
      await new Promise((r) => pinoTransport.once('close', r))
      const totals = await (await fetch(`${emu.endpoint}/_emulator/totals?project=bench-s3&logstore=access-pino`)).json()
      pinoLine = `; through pino's worker: ${totals ? totals.logs : 0} of ${pinoServed}`
    }
    // The phases' own median, when a kind ran more than once (phases alternated).
    const medianOf = (phase) => median(rows.filter((r) => r.phase === phase).map((r) => r.rps))
    const base = rows.some((r) => r.phase === 'none') ? medianOf('none') : rows[0].rps
    console.log(`S3 middleware from Node: ${opts.connections} keep-alive connections for ${opts.seconds} s per phase, load from a child process\n`)
    console.log('| logging | requests/s | ratio to none | loop delay max ms | loop delay p99 ms | logging call p99 µs | longest logging call µs | longest report callback ms |')
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|')
    for (const r of rows) {
      const call = r.phase === 'none' ? '— | —' : `${r.callP99Us.toFixed(1)} | ${r.callMaxUs.toFixed(1)}`
      const own = `${call} | ${r.phase === 'loghose' ? r.callbackMs.toFixed(3) : '—'}`
      console.log(`| ${r.phase} | ${r.rps.toFixed(0)} | ${(r.rps / base).toFixed(2)} | ${r.maxMs.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${own} |`)
    }
    const kinds = [...new Set(rows.map((r) => r.phase))]
    if (kinds.length < rows.length) {
      console.log(`\n| logging (median of its phases) | requests/s | ratio to none |\n|---|---:|---:|`)
      for (const kind of kinds) console.log(`| ${kind} | ${medianOf(kind).toFixed(0)} | ${(medianOf(kind) / base).toFixed(2)} |`)
    }
    console.log(`\nloghose records received by the emulator: ${got}; pending after flush: ${left}${pinoLine}`)
  } finally {
    server.close()
    server.closeAllConnections?.()
    emu.close()
    fs.rmSync(logFile, { force: true })
    fs.rmSync(`${logFile}.pino`, { force: true })
  }
}

/** What one `logger.info({ 5 fields }, 'msg')` costs the main thread, by logger and
 * destination, in rounds alternating the kinds: pino with loghose's transport (pino's worker),
 * pino with `pinoDestination` (main thread), pino to a file (`pino.destination`, async),
 * winston with loghose's transport, winston to a file, and OpenTelemetry's logs SDK. After each
 * phase (not timed) the destination is ended and what arrived is counted; the CPU of the whole
 * process (every thread) from the first call until the destination has ended is the cost of a
 * record until it left the process. Needs pino and winston (the application's dependencies,
 * not loghose's). */
async function loggingCost(argv) {
  const opts = args('logging', argv)
  const pino = require('pino')
  const winston = require('winston')
  const LoghoseTransport = require('../../node/lib/winston.js')
  const fs = require('node:fs')
  const os = require('node:os')
  const emu = await benchScenarios.startEmulator()
  const place = (logstore) => ({ ...lh.Producer.presetOptions('server'), ...emu.options, project: 'bench-logging', logstore })
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-logging-'))
  const fields = { user: 'u-12345', path: '/api/v1/items', status: 200, elapsedMs: 12.5, traceId: '4bf92f3577b34da6a3ce929d0e0e4736' }
  const kinds = {
    'pino + loghose transport': async (name) => {
      const transport = pino.transport({ target: path.join(__dirname, '..', '..', 'node', 'lib', 'pino.js'), options: place(name) })
      await new Promise((r) => {
        transport.once('ready', r)
        setTimeout(r, 5000).unref()
      })
      return { log: pino({}, transport), end: () => new Promise((r) => { transport.once('close', r); transport.end() }), remote: true }
    },
    'pino + loghose.pinoDestination': async (name) => {
      const destination = lh.pinoDestination(place(name))
      return { log: pino({}, destination), end: () => destination.end(), remote: true }
    },
    'pino + file (async)': async (name) => {
      const file = path.join(directory, `${name}.log`)
      const destination = pino.destination({ dest: file, sync: false })
      return { log: pino({}, destination), end: () => new Promise((r) => { destination.once('close', r); destination.end() }), file }
    },
    'winston + loghose transport': async (name) => {
      const transport = new LoghoseTransport(place(name))
      const logger = winston.createLogger({ format: winston.format.json(), transports: [transport] })
      return { log: logger, end: () => new Promise((r) => { transport.once('closed', r); logger.close() }), remote: true }
    },
    'winston + file': async (name) => {
      const file = path.join(directory, `${name}.log`)
      const stream = fs.createWriteStream(file)
      const logger = winston.createLogger({ format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] })
      // Everything logged has reached the stream once the logger has finished; then the file is closed.
      return { log: logger, end: () => new Promise((r) => { logger.once('finish', () => { stream.once('close', r); stream.end() }); logger.end() }), file }
    },
  }
  // OpenTelemetry's logs SDK (when installed): its batch processor with an exporter that does
  // nothing (the floor OTel itself sets), with OTel's OTLP/HTTP exporter (JSON) posting to a
  // collector stand-in in a process of its own (what a service running OTel's own pipeline
  // spends to get a record out), and loghose's processor in their place.
  let otel = null
  try {
    otel = { sdk: require('@opentelemetry/sdk-logs'), loghose: require('../../node/lib/otel.js') }
  } catch {
    console.error('loghose: @opentelemetry/sdk-logs is not installed: the OpenTelemetry phases are skipped')
  }
  let otlp = null
  if (otel) {
    try {
      otlp = { Exporter: require('@opentelemetry/exporter-logs-otlp-http').OTLPLogExporter, sink: null }
    } catch {
      console.error('loghose: @opentelemetry/exporter-logs-otlp-http is not installed: its phase is skipped')
    }
  }
  if (otlp) otlp.sink = await startOtlpSink()
  const otelTarget = (processor, extra) => {
    const provider = new otel.sdk.LoggerProvider({ processors: [processor] })
    const logger = provider.getLogger('bench')
    const log = { info: (body, attributes) => logger.emit({ severityNumber: 9, severityText: 'INFO', body, attributes }) }
    return { log, end: () => provider.shutdown(), ...extra }
  }
  const noOpBatch = (queue) => {
    const exported = { n: 0 }
    const exporter = {
      export: (logs, done) => {
        exported.n += logs.length
        done({ code: 0 })
      },
      shutdown: async () => {},
      forceFlush: async () => {},
    }
    const processor = new otel.sdk.BatchLogRecordProcessor({ exporter, ...(queue ? { maxQueueSize: queue } : {}) })
    return otelTarget(processor, { counted: () => exported.n })
  }
  if (otel) {
    // Its default queue (2 048) drops what a burst overflows: shown, and the same floor with
    // a queue that holds every record, which the ratio is taken against.
    kinds['otel + no-op batch processor'] = async () => noOpBatch(0)
    kinds['otel + no-op batch processor, queue of every record'] = async () => noOpBatch(opts.records + 1)
    kinds['otel + loghose processor'] = async (name) => otelTarget(new otel.loghose.LoghoseLogRecordProcessor(place(name)), { remote: true })
  }
  if (otlp) {
    kinds['otel + batch processor + OTLP/HTTP exporter'] = async (name) => {
      const exporter = new otlp.Exporter({ url: `${otlp.sink.url}/${name}/v1/logs` })
      const processor = new otel.sdk.BatchLogRecordProcessor({ exporter, maxQueueSize: opts.records + 1 })
      return otelTarget(processor, { counted: () => otlp.sink.count(name) })
    }
  }
  const rows = Object.fromEntries(Object.keys(kinds).map((k) => [k, { us: [], cpuUs: [], lost: 0 }]))
  try {
    for (let round = 0; round < opts.rounds; round += 1) {
      const order = round % 2 === 0 ? Object.keys(kinds) : Object.keys(kinds).reverse()
      for (const kind of order) {
        const name = `${kind.replace(/[^a-z]+/g, '-')}-${round}`.replace(/^-|-$/g, '')
        const target = await kinds[kind](name)
        const isPino = kind.startsWith('pino')
        const cpu0 = process.cpuUsage()
        const t0 = process.hrtime.bigint()
        for (let i = 0; i < opts.records; i += 1) {
          if (isPino) target.log.info(fields, 'request handled')
          else target.log.info('request handled', fields)
        }
        const ns = Number(process.hrtime.bigint() - t0)
        const ended = await Promise.race([target.end().then(() => true), new Promise((r) => setTimeout(() => r(false), 60000).unref())])
        if (!ended) console.error(`loghose: ${kind} did not finish within 60 s`)
        const cpu = process.cpuUsage(cpu0)
        const arrived = target.counted
          ? await target.counted()
          : target.remote
            ? benchScenarios.meter(emu, name, 'bench-logging').counted(0).received
            : fs.readFileSync(target.file, 'utf8').split('\n').filter(Boolean).length
        rows[kind].us.push(ns / opts.records / 1000)
        rows[kind].cpuUs.push((cpu.user + cpu.system) / opts.records)
        rows[kind].lost += opts.records - arrived
      }
    }
  } finally {
    emu.close()
    otlp?.sink.close()
    fs.rmSync(directory, { recursive: true, force: true })
  }
  console.log(`logger.info with 5 fields: ${opts.records} calls per phase, ${opts.rounds} rounds alternated (median, range); ` +
    'µs per call on the main thread, and CPU µs per record of the whole process until the destination ended\n')
  console.log('| logger + destination | µs per call | CPU µs per record | lost |\n|---|---:|---:|---:|')
  const range = (values) => `${median(values).toFixed(2)} (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`
  for (const [kind, row] of Object.entries(rows)) {
    console.log(`| ${kind} | ${range(row.us)} | ${range(row.cpuUs)} | ${row.lost} |`)
  }
  const ratio = median(rows['pino + loghose transport'].us) / median(rows['pino + file (async)'].us)
  console.log(`\npino + loghose transport / pino + file: ${ratio.toFixed(2)}`)
  if (otel) {
    const otelRatio = median(rows['otel + loghose processor'].us) / median(rows['otel + no-op batch processor, queue of every record'].us)
    console.log(`otel + loghose processor / otel + no-op batch processor keeping every record: ${otelRatio.toFixed(2)}`)
  }
  if (otlp) {
    const cpuRatio = median(rows['otel + loghose processor'].cpuUs) / median(rows['otel + batch processor + OTLP/HTTP exporter'].cpuUs)
    console.log(`otel + loghose processor / otel + batch processor + OTLP/HTTP exporter, CPU per record: ${cpuRatio.toFixed(2)}`)
  }
  // What loghose loses fails the run; what OTel's default queue drops is only shown.
  if (Object.entries(rows).some(([kind, r]) => r.lost !== 0 && kind !== 'otel + no-op batch processor')) process.exitCode = 1
}

/** A stand-in for an OpenTelemetry collector in a child process (its work is not the
 * producer's): it answers OTLP/HTTP JSON posts to `/{phase}/v1/logs` and counts their log
 * records by phase; `count(phase)` asks it. */
async function startOtlpSink() {
  const readline = require('node:readline')
  const server = `
    const counts = new Map()
    const server = require('node:http').createServer((req, res) => {
      const chunks = []
      req.on('data', (c) => chunks.push(c))
      req.on('end', () => {
        const phase = req.url.split('/')[1]
        if (req.method === 'POST') {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
          let n = 0
          for (const r of body.resourceLogs ?? []) for (const s of r.scopeLogs ?? []) n += (s.logRecords ?? []).length
          counts.set(phase, (counts.get(phase) ?? 0) + n)
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
        } else res.end(String(counts.get(phase) ?? 0))
      })
    })
    server.listen(0, '127.0.0.1', () => console.log(server.address().port))
    process.stdin.on('end', () => process.exit(0)).resume()`
  const child = spawn(process.execPath, ['-e', server], { stdio: ['pipe', 'pipe', 'inherit'] })
  const port = await new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', resolve)
    child.once('exit', () => reject(new Error('the OTLP sink ended before it listened')))
  })
  const url = `http://127.0.0.1:${port}`
  return {
    url,
    count: async (phase) => Number(await (await fetch(`${url}/${phase}/count`)).text()),
    close: () => child.stdin.end(),
  }
}

/** The load generator of `middleware`: `connections` keep-alive connections, each sending
 * its next request as soon as the answer arrives, for `seconds`. */
function load(url, seconds, connections) {
  const http = require('node:http')
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number(connections) })
  const stopAt = Date.now() + Number(seconds) * 1000
  let open = Number(connections)
  const next = () => {
    if (Date.now() >= stopAt) {
      open -= 1
      if (open === 0) agent.destroy()
      return
    }
    http.get(url, { agent }, (res) => {
      res.resume()
      res.on('end', next)
    }).on('error', next)
  }
  for (let i = 0; i < open; i++) next()
}

function serveEmulator() {
  // The engine's benchmark emulator: at nice 10 (it stands in for the remote service, which
  // takes none of the producer's CPU), served until stdin closes.
  native.benchServeEmulator(64 << 20)
}

module.exports = { bench, middleware, loggingCost, load, serveEmulator }

const USAGE =
  'usage: node lab/node/bench-cli.js bench [--scenario s1|s1r|s2|s4|s5|s6] [--rates 1000,200000] [--seconds N]\n' +
  '                     [--unthrottled-seconds N] [--preset server|pi] [--param NAME=JSON]... [--json] [--compare N]\n' +
  '       node lab/node/bench-cli.js middleware [--seconds N] [--connections N] [--phases none,loghose,console,pino,pino-file]\n' +
  '       node lab/node/bench-cli.js logging [--rounds N] [--records N]\n' +
  '(COMMAND --help for the options of each command)'

if (require.main === module) {
  const [command, ...rest] = process.argv.slice(2)
  if (command === 'bench') bench(rest)
  else if (command === 'middleware') middleware(rest)
  else if (command === 'logging') loggingCost(rest)
  else if (command === 'load') load(...rest)
  else if (command === 'bench-emulator') serveEmulator()
  else {
    console.error(USAGE)
    process.exitCode = 2
  }
}
