'use strict'
// The package under a JavaScript runtime other than the one jest runs on (Bun, Deno, each Node
// release): plain `node:assert`, no test runner, so the same file runs everywhere. Run by
// scripts/runtimes/test.sh as `RUNTIME tests-js/runtimes/check.cjs` (Deno: `deno run -A`).
//
// What it checks, each against the embedded emulator and read back:
// - the producer: `send` of records of one key list and of many, `sendAsync` of records of a
//   list and of none, `sendMany`, a record's own time;
// - delivery reports under load: a `delivery` listener (the addon's thread-safe callback, the
//   known crash point of Node-API ports) counts every report of 60 000 records sent in bursts
//   while reports arrive;
// - the pino transport in pino's worker thread and `pinoDestination` on the main thread;
// - the OpenTelemetry processor;
// - exit under load: a child of the same runtime sends 30 000 records and returns from its
//   script without `close()`, or calls `process.exit()`, or is sent SIGTERM: every record is
//   delivered before the process ends (and ends by the signal). On Windows, where a kill is
//   TerminateProcess, the child keeps a spool and the next producer on it delivers every record.
// Prints `N passed, 0 failed` and exits 0, or names the check that failed and exits 1.

const assert = require('node:assert/strict')
const path = require('node:path')
const { once } = require('node:events')
const { spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..', '..')
const loghose = require(ROOT)

const fields = (log) => Object.fromEntries(log.contents)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function waitFor(condition, ms, what) {
  const deadline = Date.now() + ms
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

const checks = []
const check = (name, body) => checks.push({ name, body })

check('send, sendAsync and sendMany store every record with its fields and time', async (emu) => {
  const producer = new loghose.Producer({ ...emu.producerOptions('demo', 'send'), lingerMs: 20 })
  for (let i = 0; i < 5000; i++) producer.send({ level: 'INFO', msg: 'hello', i })
  for (let i = 0; i < 500; i++) producer.send({ [`k${i % 7}`]: 'v', i: String(i), extra: i % 3 === 0 })
  const tracked = []
  for (let i = 0; i < 100; i++) tracked.push(producer.sendAsync({ msg: 'tracked', i: String(i) }))
  for (let i = 0; i < 100; i++) tracked.push(producer.sendAsync({ level: 'INFO', msg: 'hello', i }))
  tracked.push(producer.sendAsync({ msg: 'timed' }, { time: 1_700_000_000.25 }))
  const reports = await Promise.all(tracked)
  assert.equal(reports.filter((r) => r.delivered).length, tracked.length)
  assert.equal(producer.sendMany([{ a: '1' }, { b: '2' }]), 2)
  await producer.close()
  const logs = emu.logs('demo', 'send')
  assert.equal(logs.length, 5000 + 500 + 201 + 2)
  const now = Date.now() / 1000
  const timed = logs.filter((l) => fields(l).msg === 'timed')
  assert.equal(timed.length, 1)
  assert.equal(timed[0].time, 1_700_000_000)
  const untimed = logs.filter((l) => fields(l).msg !== 'timed')
  assert.equal(untimed.filter((l) => Math.abs(l.time - now) > 60).length, 0, 'every other record is timed now')
  const plain = logs.map(fields).filter((f) => f.msg === 'hello')
  assert.equal(plain.length, 5100)
  assert.deepEqual(plain.find((f) => f.i === '0'), { level: 'INFO', msg: 'hello', i: '0' })
  assert.equal(new Set(plain.map((f) => f.i)).size, 5000)
})

check('delivery reports under load: every report reaches the listener once', async (emu) => {
  const producer = new loghose.Producer({ ...emu.producerOptions('demo', 'load'), lingerMs: 5, batchMaxCount: 512 })
  let reported = 0
  producer.on('delivery', (reports) => {
    for (const report of reports) if (report.delivered) reported += report.records
  })
  const total = 60_000
  for (let burst = 0; burst < 60; burst++) {
    for (let i = 0; i < total / 60; i++) producer.send({ level: 'INFO', msg: 'load', i })
    await sleep(1) // reports cross while the next burst is sent
  }
  await producer.flush()
  await waitFor(() => reported >= total, 20_000, `${total} reports (have ${reported})`)
  await producer.close()
  assert.equal(emu.logs('demo', 'load').length, total)
})

check('the pino transport (worker thread) and pinoDestination (main thread)', async (emu) => {
  const pino = require('pino')
  const options = emu.producerOptions('demo', 'pino')
  if (process.versions.deno) {
    // pino's worker transports do not run under Deno (pino's own `pino/file` neither: its
    // thread-stream's flush times out); README says to use pinoDestination there.
    console.log('     (Deno: pino.transport not checked; pinoDestination only)')
    const destination = loghose.pinoDestination(options)
    const logger = pino(destination)
    for (let i = 0; i < 1000; i++) logger.info({ order: { id: i } }, 'order paid')
    await destination.end()
  } else {
    const transport = pino.transport({ target: path.join(ROOT, 'node', 'lib', 'pino.js'), options })
    const logger = pino(transport)
    for (let i = 0; i < 1000; i++) logger.info({ order: { id: i } }, 'order paid')
    transport.end()
    await once(transport, 'close')
  }
  const destination = loghose.pinoDestination(options)
  pino(destination).warn('from the main thread')
  await destination.end()
  const logs = emu.logs('demo', 'pino').map(fields)
  assert.equal(logs.filter((f) => f.msg === 'order paid').length, 1000)
  assert.equal(logs.find((f) => f.msg === 'order paid' && f.order === '{"id":0}') !== undefined, true)
  assert.equal(logs.filter((f) => f.msg === 'from the main thread' && f.level === 'warn').length, 1)
})

check('the OpenTelemetry processor', async (emu) => {
  const { LoggerProvider } = require('@opentelemetry/sdk-logs')
  const { resourceFromAttributes } = require('@opentelemetry/resources')
  const { LoghoseLogRecordProcessor } = require(path.join(ROOT, 'node', 'lib', 'otel.js'))
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'checkout' }),
    processors: [new LoghoseLogRecordProcessor(emu.producerOptions('demo', 'otel'))],
  })
  const logger = provider.getLogger('shop')
  for (let i = 0; i < 500; i++) logger.emit({ body: `order ${i} paid`, severityText: 'WARN', severityNumber: 13, attributes: { i } })
  await provider.shutdown()
  const logs = emu.logs('demo', 'otel').map(fields)
  assert.equal(logs.length, 500)
  assert.equal(logs[0].service, 'checkout')
  assert.equal(logs[0].content, 'order 0 paid')
  assert.equal(logs[0].severityText, 'WARN')
})

check('exit under load: a script that ends without close() delivers every record', async (emu) => {
  const script = `
    const loghose = require(${JSON.stringify(ROOT)})
    const p = new loghose.Producer(${JSON.stringify(emu.producerOptions('demo', 'exit'))})
    let reports = 0
    p.on('delivery', () => { reports++ })
    for (let i = 0; i < 30000; i++) p.send({ level: 'INFO', msg: 'before exit', i })
  `
  const runtime = process.execPath
  const args = process.versions.deno ? ['eval', script] : ['-e', script]
  const child = spawnSync(runtime, args, { encoding: 'utf8', timeout: 60_000 })
  assert.equal(child.status, 0, `the child ended with ${child.status} ${child.signal ?? ''}: ${child.stderr}`)
  assert.equal(emu.logs('demo', 'exit').length, 30000)
})

/** Runs `script` in a child of this runtime; with `signal`, sends it once the child prints
 * "ready". Resolves with the child's exit code, signal and stderr. */
function runChild(script, signal) {
  const { spawn } = require('node:child_process')
  const args = process.versions.deno ? ['eval', script] : ['-e', script]
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += chunk })
  child.stdout.on('data', (chunk) => {
    if (signal && String(chunk).includes('ready')) child.kill(signal)
  })
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stderr })
    })
  })
}

const LOADED = (emu, logstore) => `
  const loghose = require(${JSON.stringify(ROOT)})
  const p = new loghose.Producer(${JSON.stringify(emu.producerOptions('demo', logstore))})
  let reports = 0
  p.on('delivery', (list) => { reports += list.length })
  for (let i = 0; i < 30000; i++) p.send({ level: 'INFO', msg: 'under load', i })
`

check('process.exit() under load: the exit event delivers every record, no crash', async (emu) => {
  // Reports are crossing from the engine's threads while the process exits.
  const done = await runChild(`${LOADED(emu, 'exit-call')}
    setTimeout(() => process.exit(0), 5)`)
  assert.equal(done.code, 0, `the child ended with ${done.code} ${done.signal ?? ''}: ${done.stderr}`)
  assert.equal(emu.logs('demo', 'exit-call').length, 30000)
})

if (process.platform !== 'win32') {
  check('SIGTERM under load: every record delivered, then the process ends by the signal', async (emu) => {
    const done = await runChild(`${LOADED(emu, 'sigterm')}
      console.log('ready')
      setInterval(() => {}, 1000)`, 'SIGTERM')
    assert.equal(done.signal, 'SIGTERM', `the child ended with ${done.code} ${done.signal ?? ''}: ${done.stderr}`)
    assert.equal(emu.logs('demo', 'sigterm').length, 30000)
  })
} else {
  // Windows has no SIGTERM: `kill()` is TerminateProcess, which no code of the process outlives.
  // What a killed process accepted survives in its spool; the next producer on it delivers it.
  check('TerminateProcess under load with a spool: the next producer delivers every record', async (emu) => {
    const fs = require('node:fs')
    const os = require('node:os')
    const spoolDir = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-killed-'))
    const options = { ...emu.producerOptions('demo', 'killed'), spoolDir }
    const done = await runChild(`
      const loghose = require(${JSON.stringify(ROOT)})
      const p = new loghose.Producer(${JSON.stringify(options)})
      for (let i = 0; i < 30000; i++) p.send({ level: 'INFO', msg: 'under load', i })
      console.log('ready')
      setInterval(() => {}, 1000)`, 'SIGTERM')
    assert.notEqual(done.code, 0, `the child was not killed: ${done.stderr}`)
    const next = new loghose.Producer(options)
    const closed = await next.close({ timeoutMs: 30000 })
    assert.equal(closed.undelivered, 0)
    const delivered = new Set(emu.logs('demo', 'killed').map((log) => fields(log).i))
    assert.equal(delivered.size, 30000)
    fs.rmSync(spoolDir, { recursive: true, force: true })
  })
}

async function main() {
  const runtime = process.versions.bun ? `Bun ${process.versions.bun}` : process.versions.deno ? `Deno ${process.versions.deno}` : `Node ${process.version}`
  let passed = 0
  let failed = 0
  for (const { name, body } of checks) {
    const emu = new loghose.Emulator()
    const started = Date.now()
    try {
      await body(emu)
      passed++
      console.log(`ok   ${name} (${Date.now() - started} ms)`)
    } catch (err) {
      failed++
      console.log(`FAIL ${name}\n${err && err.stack ? err.stack : err}`)
    } finally {
      emu.close()
    }
  }
  console.log(`${runtime}: ${passed} passed, ${failed} failed`)
  process.exit(failed === 0 ? 0 : 1)
}

main()
