// Process-level behaviour: exit with pending records, and worker_threads.
'use strict'

const { spawnSync } = require('node:child_process')
const path = require('node:path')
const { Worker } = require('node:worker_threads')
const lh = require('..')

jest.setTimeout(120000)

const { ROOT: ENTRY } = require('./helpers.js')

test('a script that ends with pending records delivers them and exits 0', () => {
  const emu = new lh.Emulator()
  const script = `
    const lh = require(${JSON.stringify(ENTRY)})
    const p = new lh.Producer({ ...${JSON.stringify(emu.producerOptions('exit', 'logs'))}, lingerMs: 60000 })
    for (let i = 0; i < 5000; i++) p.send({ i: String(i) })
    // no flush, no close
  `
  const started = Date.now()
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 })
  expect(result.status).toBe(0)
  expect(Date.now() - started).toBeLessThan(30000)
  expect(emu.totals('exit', 'logs').logs).toBe(5000)
  emu.close()
})

test('a CommonJS script awaiting each sendAsync in turn is never cut off by the exit timer', () => {
  // Each send waits out the linger; the next starts as the previous resolves, so pending
  // stays at 1 across the timer's checks for longer than exitTimeoutMs.
  const emu = new lh.Emulator()
  const script = `
    const lh = require(${JSON.stringify(ENTRY)})
    const p = new lh.Producer({ ...${JSON.stringify(emu.producerOptions('awaited', 'logs'))}, lingerMs: 700, exitTimeoutMs: 1000 })
    ;(async () => {
      for (let i = 0; i < 5; i++) await p.sendAsync({ i: String(i) })
      console.log('after the loop')
    })()
  `
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 })
  expect(result.status).toBe(0)
  expect(result.stdout).toBe('after the loop\n')
  expect(emu.totals('awaited', 'logs').logs).toBe(5)
  emu.close()
})

test('fire-and-forget records to an unreachable endpoint end the script after exitTimeoutMs, said on stderr', () => {
  const script = `
    const lh = require(${JSON.stringify(ENTRY)})
    const p = new lh.Producer({ endpoint: 'http://127.0.0.1:9', project: 'proj', logstore: 'unreachable',
      accessKeyId: 'a', accessKeySecret: 'b', exitTimeoutMs: 500, closeOnSignalMs: 500 })
    for (let i = 0; i < 1000; i++) p.send({ i: String(i) })
  `
  const started = Date.now()
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 })
  expect(result.status).toBe(0)
  expect(Date.now() - started).toBeLessThan(10000)
  expect(result.stderr).toMatch(/LOGHOSE_UNDELIVERED.*1000 record\(s\) for proj\/unreachable failed for good/)
})

test('a worker thread says what it could not deliver when it ends, as the main thread does', () => {
  const script = `
    const { Worker, isMainThread } = require('node:worker_threads')
    if (isMainThread) {
      new Worker(__filename)
    } else {
      const lh = require(${JSON.stringify(ENTRY)})
      const p = new lh.Producer({ endpoint: 'http://127.0.0.1:9', project: 'proj', logstore: 'worker',
        accessKeyId: 'a', accessKeySecret: 'b', exitTimeoutMs: 500, closeOnSignalMs: 500 })
      for (let i = 0; i < 1000; i++) p.send({ i: String(i) })
    }
  `
  const file = path.join(require('node:os').tmpdir(), `loghose-worker-${process.pid}.cjs`)
  require('node:fs').writeFileSync(file, script)
  try {
    const result = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60000 })
    expect(result.status).toBe(0)
    expect(result.stderr).toMatch(/LOGHOSE_UNDELIVERED.*1000 record\(s\) for proj\/worker failed for good/)
  } finally {
    require('node:fs').rmSync(file, { force: true })
  }
})

test('an idle producer does not keep the process alive', () => {
  const emu = new lh.Emulator()
  const script = `
    const lh = require(${JSON.stringify(ENTRY)})
    const p = new lh.Producer(${JSON.stringify(emu.producerOptions())})
    p.on('delivery', () => {})
  `
  const started = Date.now()
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30000 })
  expect(result.status).toBe(0)
  expect(Date.now() - started).toBeLessThan(5000)
  emu.close()
})

test('worker_threads create, use and terminate producers 20 times', async () => {
  const emu = new lh.Emulator()
  const code = `
    const { parentPort, workerData } = require('node:worker_threads')
    const lh = require(workerData.entry)
    const p = new lh.Producer({ ...workerData.options, lingerMs: 10 })
    for (let i = 0; i < 100; i++) p.send({ worker: String(workerData.n), i: String(i) })
    p.flush(20000).then((left) => parentPort.postMessage(left))
  `
  for (let n = 0; n < 20; n++) {
    const worker = new Worker(code, { eval: true, workerData: { entry: ENTRY, options: emu.producerOptions(), n } })
    const left = await new Promise((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
    })
    expect(left).toBe(0)
    await worker.terminate()
  }
  expect(emu.totals('loghose', 'logs').logs).toBe(2000)
  emu.close()
})

test('terminating a worker in the middle of sending neither crashes nor hangs', async () => {
  const emu = new lh.Emulator()
  emu.inject('latency', { ms: 200, windowMs: 5000 })
  const code = `
    const { parentPort, workerData } = require('node:worker_threads')
    const lh = require(workerData.entry)
    const p = new lh.Producer({ ...workerData.options, lingerMs: 5, dropTimeoutMs: 300 })
    p.on('delivery', () => {})
    let i = 0
    const tick = () => { for (let j = 0; j < 200; j++) p.send({ i: String(i++) }); setImmediate(tick) }
    tick()
    parentPort.postMessage('sending')
  `
  for (let n = 0; n < 5; n++) {
    const worker = new Worker(code, { eval: true, workerData: { entry: ENTRY, options: emu.producerOptions('term', 'logs') } })
    await new Promise((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
    })
    await new Promise((r) => setTimeout(r, 50))
    const started = Date.now()
    await worker.terminate()
    expect(Date.now() - started).toBeLessThan(5000)
  }
  emu.clearFaults()
  emu.close()
})

test('stats events are emitted while listened to, and stats survive close', async () => {
  const emu = new lh.Emulator()
  const p = new lh.Producer({ ...emu.producerOptions(), lingerMs: 10, statsIntervalMs: 20 })
  const seen = []
  p.on('stats', (s) => seen.push(s))
  p.send({ a: '1' })
  await p.flush(10000)
  const deadline = Date.now() + 10000
  while (!(seen.length > 0 && seen[seen.length - 1].delivered === 1) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20))
  }
  expect(seen.length).toBeGreaterThan(0)
  expect(seen[seen.length - 1].delivered).toBe(1)
  await p.close()
  expect(p.stats().delivered).toBe(1)
  emu.close()
})
