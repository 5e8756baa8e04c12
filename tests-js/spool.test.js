// The spool from Node, with real processes: a child sending through a producer with a
// spoolDir is SIGKILLed at random instants on the same directory; every record it
// acknowledged must arrive once a producer is opened on the directory again.
'use strict'

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const lh = require('..')

jest.setTimeout(120000)

const { ROOT: ENTRY, sleep } = require('./helpers.js')

const CHILD = `
  const fs = require('node:fs')
  const lh = require(process.argv[1])
  const [options, spool, ack, run] = [JSON.parse(process.argv[2]), process.argv[3], process.argv[4], process.argv[5]]
  const p = new lh.Producer({ ...options, spoolDir: spool, lingerMs: 50, batchMaxCount: 500 })
  const fd = fs.openSync(ack, 'r+')
  const mark = Buffer.alloc(8)
  let i = 0
  function burst () {
    for (let n = 0; n < 500; n++) {
      try {
        p.send({ run, i: String(i) })
      } catch (e) {
        if (e instanceof lh.BufferFullError) break
        throw e
      }
      i++
      mark.writeBigUInt64LE(BigInt(i))
      fs.writeSync(fd, mark, 0, 8, 0)
    }
    setTimeout(burst, 5)
  }
  burst()
`

test('SIGKILL five times loses nothing acknowledged', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-spool-'))
  const spool = path.join(dir, 'spool')
  const ack = path.join(dir, 'ack')
  const emu = new lh.Emulator()
  const options = emu.producerOptions('proj', 'spooled')
  const marks = []
  for (let run = 0; run < 5; run++) {
    fs.writeFileSync(ack, Buffer.alloc(8))
    const child = spawn(process.execPath, ['-e', CHILD, ENTRY, JSON.stringify(options), spool, ack, String(run)], { stdio: 'ignore' })
    await sleep(500 + Math.random() * 1000)
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal)))
    child.kill('SIGKILL')
    expect(await exited).toBe('SIGKILL')
    marks.push(Number(fs.readFileSync(ack).readBigUInt64LE(0)))
  }
  const p = new lh.Producer({ ...options, spoolDir: spool })
  const closed = await p.close({ timeoutMs: 60000 })
  expect(closed.undelivered).toBe(0)
  const seen = new Map()
  for (const log of emu.logs('proj', 'spooled')) {
    const f = Object.fromEntries(log.contents)
    const key = `${f.run}/${f.i}`
    seen.set(key, (seen.get(key) || 0) + 1)
  }
  let lost = 0
  marks.forEach((mark, run) => {
    for (let i = 0; i < mark; i++) if (!seen.has(`${run}/${i}`)) lost++
  })
  expect(marks.reduce((a, b) => a + b, 0)).toBeGreaterThan(0)
  expect(lost).toBe(0)
  expect(emu.counters().duplicateGroups).toBeLessThanOrEqual(5 * 8)
  expect(fs.readdirSync(spool, { recursive: true }).filter((f) => f.endsWith('.spl') || f.endsWith('.spb'))).toEqual([])
  emu.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

test('producers share a spool directory in slots; one past spoolSlots is refused with the holder named', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-spool-'))
  const emu = new lh.Emulator()
  const p = new lh.Producer({ ...emu.producerOptions(), spoolDir: dir })
  const second = new lh.Producer({ ...emu.producerOptions(), spoolDir: dir })
  const refused = (() => {
    try {
      new lh.Producer({ ...emu.producerOptions(), spoolDir: dir, spoolSlots: 2 })
    } catch (err) {
      return err
    }
  })()
  expect(refused).toBeInstanceOf(lh.SpoolLockedError)
  expect(refused).not.toBeInstanceOf(lh.ConfigError)
  expect(refused.code).toBe('SpoolLockedError')
  expect(refused.message).toMatch(new RegExp('all 2 of its slots .*process ' + process.pid + '.*`spoolSlots`'))
  expect(() => new lh.Producer({ ...emu.producerOptions(), spoolDir: dir, spoolSync: 'often' })).toThrow(lh.ConfigError)
  expect(fs.readdirSync(dir).sort()).toEqual(['slot-0', 'slot-1'])
  await second.close()
  await p.close()
  emu.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

test('records a close leaves in the spool are kept, not failed, and the next producer sends them once', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-spool-'))
  const emu = new lh.Emulator()
  const warnings = []
  const emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation((text) => warnings.push(String(text)))
  try {
    emu.inject('hang', { ms: 20000, windowMs: 3000 })
    const options = { ...emu.producerOptions('proj', 'kept'), spoolDir: dir, lingerMs: 50, requestTimeoutMs: 20000 }
    const p = new lh.Producer(options)
    const refused = p.sendAsync({ i: 'tracked' }).catch((err) => err)
    for (let i = 0; i < 99; i++) p.send({ i: String(i) })
    await new Promise((resolve) => setTimeout(resolve, 300))
    const closed = await p.close({ timeoutMs: 1000 })
    expect([closed.undelivered, closed.kept, closed.keptNotDurable, closed.failed.length, closed.notDurable]).toEqual([0, 100, 0, 0, 0])
    const stats = p.stats()
    expect([stats.failed, stats.kept, stats.failuresByCode]).toEqual([0, 100, {}])
    // A healthy disk: no sync failed, nothing sent without a durable copy.
    expect([stats.spoolSyncFailures, stats.spoolNotDurable, stats.spoolDegraded]).toEqual([0, 0, false])
    const err = await refused
    expect(err).toBeInstanceOf(lh.DeliveryError)
    expect(err.code).toBe('KeptInSpool')
    expect(err.report.kept).toBe(true)
    // The reports of the kept batches arrive as the close ends; the warning follows them.
    for (let waited = 0; waited < 5000 && warnings.length === 0; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50))
    const text = warnings.join('\n')
    expect(text).toMatch(/99 record\(s\) for proj\/kept were not delivered before the producer closed .*kept in spoolDir/)
    expect(text).not.toMatch(/failed for good/)
    // The close let the slot go: the next producer takes it (one slot only) and sends them.
    emu.clearFaults()
    const next = new lh.Producer({ ...options, spoolSlots: 1 })
    expect(await next.flush(30000)).toBe(0)
    await next.close()
    const seen = new Map()
    for (const log of emu.logs('proj', 'kept')) {
      const i = Object.fromEntries(log.contents).i
      seen.set(i, (seen.get(i) || 0) + 1)
    }
    expect(seen.size).toBe(100)
    expect([...seen.values()].every((n) => n === 1)).toBe(true)
  } finally {
    emitWarning.mockRestore()
    emu.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
