// SIGTERM and SIGINT, with real processes and no spool: a child sends at about 50 000 logs/s
// and publishes how many sends succeeded; the test signals it. Every acknowledged record must
// arrive, and the child must end as it would have without loghose: by the signal, or as its
// own listener decides.
'use strict'

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const lh = require('..')

jest.setTimeout(60000)

const { ROOT: ENTRY, sleep } = require('./helpers.js')

const CHILD = `
  const fs = require('node:fs')
  const lh = require(process.argv[1])
  const [options, ack, mode] = [JSON.parse(process.argv[2]), process.argv[3], process.argv[4]]
  if (mode === 'app-listener') {
    process.on('SIGTERM', () => {
      process.stderr.write('app listener ran\\n')
      process.exit(3)
    })
  }
  const p = new lh.Producer({ ...options, lingerMs: 2000, ...(mode === 'off' ? { closeOnSignalMs: 0 } : {}) })
  const fd = fs.openSync(ack, 'r+')
  const mark = Buffer.alloc(8)
  const started = Date.now()
  let i = 0
  function burst () {
    for (let n = 0; n < 500; n++) p.send({ i: String(i++) })
    mark.writeBigUInt64LE(BigInt(i))
    fs.writeSync(fd, mark, 0, 8, 0)
    // About 50 000 a second.
    setTimeout(burst, Math.max(0, started + i / 50 - Date.now()))
  }
  process.stdout.write('ready\\n')
  burst()
`

async function runChild(emu, logstore, mode, signal) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-signal-'))
  const ack = path.join(dir, 'ack')
  fs.writeFileSync(ack, Buffer.alloc(8))
  const options = emu.producerOptions('proj', logstore)
  const child = spawn(process.execPath, ['-e', CHILD, ENTRY, JSON.stringify(options), ack, mode], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  await new Promise((resolve) => child.stdout.once('data', resolve))
  await sleep(1000)
  const exited = new Promise((resolve) => child.once('exit', (code, sig) => resolve({ code, signal: sig })))
  child.kill(signal)
  const end = await exited
  const acknowledged = Number(fs.readFileSync(ack).readBigUInt64LE(0))
  const seen = new Set(emu.logs('proj', logstore).map((log) => Object.fromEntries(log.contents).i))
  let lost = 0
  for (let i = 0; i < acknowledged; i++) if (!seen.has(String(i))) lost++
  fs.rmSync(dir, { recursive: true, force: true })
  console.log(`${mode} ${signal}: exit ${end.code ?? end.signal}, ${acknowledged} acknowledged, ${lost} lost`)
  return { ...end, stderr, acknowledged, lost }
}

describe('signals', () => {
  let emu
  beforeAll(() => {
    emu = new lh.Emulator()
  })
  afterAll(() => emu.close())

  test.each(['SIGTERM', 'SIGINT'])('%s delivers everything and the process still ends by it', async (signal) => {
    const end = await runChild(emu, `default-${signal.toLowerCase()}`, 'default', signal)
    expect(end.acknowledged).toBeGreaterThan(10000)
    expect(end.lost).toBe(0)
    expect(end.signal).toBe(signal)
  })

  test("the application's listener still decides, and its process.exit still delivers", async () => {
    const end = await runChild(emu, 'app-listener', 'app-listener', 'SIGTERM')
    expect(end.stderr).toContain('app listener ran')
    expect(end.code).toBe(3)
    expect(end.acknowledged).toBeGreaterThan(10000)
    expect(end.lost).toBe(0)
  })

  test('turned off, the signal ends the process at once and the open batch is lost', async () => {
    const end = await runChild(emu, 'off', 'off', 'SIGTERM')
    expect(end.signal).toBe('SIGTERM')
    expect(end.acknowledged).toBeGreaterThan(10000)
    expect(end.lost).toBeGreaterThan(0)
  })

  test('the listeners never keep a process alive that would have exited', async () => {
    const script = `
      const lh = require(process.argv[1])
      const p = new lh.Producer(JSON.parse(process.argv[2]))
      p.send({ msg: 'one' })
      process.stdout.write(String(process.listenerCount('SIGTERM')))
    `
    const started = Date.now()
    const child = spawn(process.execPath, ['-e', script, ENTRY, JSON.stringify(emu.producerOptions('proj', 'natural'))], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    const code = await new Promise((resolve) => child.once('exit', resolve))
    expect(code).toBe(0)
    expect(out).toBe('1')
    // The record waits for its linger (2 s by default) and is delivered; then the process ends.
    expect(Date.now() - started).toBeLessThan(8000)
    expect(emu.logs('proj', 'natural').length).toBe(1)
  })
})
