// The Node.js examples (examples/node/) run as a user runs them, against the embedded emulator
// (no LOGHOSE_ENDPOINT), and say what they did; the batch job's exit status says whether its
// records were delivered, kept in its spool for the next run, or lost.
'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { ROOT } = require('./helpers.js')

jest.setTimeout(180000)

const EXAMPLES = path.join(ROOT, 'examples', 'node')

function run(name, args = [], extra = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(LOGHOSE_|ALIBABA_CLOUD_)/.test(k)))
  return spawnSync(process.execPath, [path.join(EXAMPLES, name), ...args], { encoding: 'utf8', timeout: 150000, env: { ...env, ...extra } })
}

test('the web service logs each request through pino', () => {
  const done = run('web-service.js')
  expect(done.status).toBe(0)
  expect(done.stdout).toContain('200 requests served, 200 access records stored, one for each path requested: true')
})

test('the follower sends every line across a rotation', () => {
  const done = run('follow-file.js')
  expect(done.status).toBe(0)
  expect(done.stdout).toContain('followed 1000 lines across one rotation; undelivered: 0')
  expect(done.stdout).toContain('the emulator holds 1000 of them')
})

test('the throughput experiment delivers what it sends', () => {
  const done = run('throughput.js', ['0.5'])
  expect(done.status).toBe(0)
  expect(done.stdout).toMatch(/sends\/s, [\d,]+ delivered\/s, 0 undelivered/)
})

test('the batch job exits 0, 75 or 1 as its records fared', () => {
  const spool = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-example-job-'))
  try {
    const done = run('batch-job.js', [spool])
    expect(done.status).toBe(0)
    expect(done.stdout).toContain('undelivered: 0, kept: 0, keptNotDurable: 0')
    // Nothing listens on port 9: the job's time runs out with every record kept in its spool.
    const kept = run('batch-job.js', [spool, '1'], {
      LOGHOSE_ENDPOINT: 'http://127.0.0.1:9',
      LOGHOSE_PROJECT: 'examples',
      ALIBABA_CLOUD_ACCESS_KEY_ID: 'id',
      ALIBABA_CLOUD_ACCESS_KEY_SECRET: 'secret',
    })
    expect(kept.status).toBe(75)
    expect(kept.stderr).toContain('10000 records kept in')
    // The next run on the spool delivers them (to the project and logstore they were sent to), and its own.
    const again = run('batch-job.js', [spool])
    expect(again.status).toBe(0)
    expect(again.stdout).toContain('the emulator holds 20000 records')
  } finally {
    fs.rmSync(spool, { recursive: true, force: true })
  }
})
