'use strict'
// The lab's scenarios from Node (lab/node/bench.js) (short versions): each one's correctness check holds (every
// log added is counted at the emulator, none lost, none duplicated) and its rows carry the
// figures the scenario reports. Timings are not asserted; BENCHMARKS.md records them.

const { spawnSync } = require('node:child_process')
const bench = require('../bench.js')

jest.setTimeout(180000)

const CLI = require('node:path').join(__dirname, '..', 'bench-cli.js')

function checked(row) {
  expect([row.lost, row.duplicates, row.pending ?? 0]).toEqual([0, 0, 0])
}

test('s1r: the pool\'s access logs, none lost', async () => {
  const rows = await bench.run('s1r', { rates: [2000], seconds: 2, unthrottledSeconds: 1 }, { progress: false })
  const [rate, unthrottled] = rows
  checked(rate)
  checked(unthrottled)
  expect([rate.scenario, unthrottled.scenario]).toEqual(['s1r', 's1r'])
  expect(rate.received).toBe(4000)
  expect(unthrottled.received).toBeGreaterThan(0)
  // About 240 bytes of keys and values a log (S1's average is about 450).
  expect(rate.rawKbS).toBeGreaterThan(400)
  expect(rate.rawKbS).toBeLessThan(550)
})

test('s2: the pi preset on one core, memory as growth over the idle process', async () => {
  const rows = await bench.run('s2', { rates: [100, 4000], seconds: 2 }, { progress: false })
  expect(rows.map((r) => r.rate)).toEqual([100, 4000])
  for (const row of rows) {
    checked(row)
    expect(row.preset).toBe('pi')
    expect(row.received).toBe(row.rate * 2)
    expect(row.rssGrowthMb).toBeLessThan(row.rssMb)
    // taskset is part of util-linux, on every Linux this runs on.
    if (process.platform === 'linux') expect(row.pinnedCore).toBe(0)
  }
})

test('s4: open batches flush at their linger and are refilled', async () => {
  const [short, long] = await bench.run('s4', { openBatches: [3000], lingersMs: [500, 60000], seconds: 2 }, { progress: false })
  for (const row of [short, long]) {
    checked(row)
    expect(row.received).toBe(row.adds)
    expect(row.usPerAdd).toBeGreaterThan(0)
  }
  expect([short.refills, short.adds]).toEqual([3, 12000])
  expect([long.refills, long.adds]).toEqual([0, 3000])
})

test('s5: backlog each second, sampled latency, idle tenants', async () => {
  const [fleet, tenants] = await bench.run('s5', { devices: 5000, rates: [3000], seconds: 3, tenants: 40, sampleEvery: 10 }, { progress: false })
  checked(fleet)
  expect(fleet.received).toBe(9000)
  expect(fleet.backlog).toHaveLength(3)
  expect(typeof fleet.backlogTrendPerS).toBe('number')
  expect(fleet.latencySamples).toBe(900)
  expect(fleet.latencyP50Ms).toBeGreaterThan(0)
  expect(fleet.latencyP99Ms).toBeGreaterThanOrEqual(fleet.latencyP50Ms)
  checked(tenants)
  expect([tenants.tenants, tenants.received]).toEqual([40, 40])
  // Idle producers hold no thread of their own (the I/O threads are the engine's, shared).
  expect(tenants.threadsPerProducer).toBeLessThanOrEqual(0)
})

test('s6: latency per size and the codecs on log-like text', async () => {
  const rows = await bench.run('s6', { sizes: [1024, 256 << 10], count: 4, codecRounds: 2 }, { progress: false })
  const sizes = rows.filter((r) => 'size' in r)
  expect(sizes.map((r) => r.size)).toEqual([1024, 256 << 10])
  checked(rows.find((r) => r.check === 'payload'))
  const codecs = Object.fromEntries(rows.filter((r) => r.codec).map((r) => [r.codec, r]))
  expect(Object.keys(codecs).sort()).toEqual(['deflate', 'lz4', 'none', 'zstd'])
  expect(codecs.none.ratio).toBeCloseTo(1, 2)
  expect(codecs.lz4.ratio).toBeGreaterThan(3)
  expect(codecs.lz4.ratio).toBeLessThan(8)
  expect(codecs.zstd.ratio).toBeGreaterThan(codecs.lz4.ratio)
})

test('unknown scenario and parameter are named', () => {
  expect(() => bench.run('s3')).toThrow(/unknown scenario "s3"/)
  expect(() => bench.run('s2', { rate: 5 })).toThrow(/scenario s2 has no parameter "rate"/)
  const bad = spawnSync(process.execPath, [CLI, 'bench', '--scenario', 's6', '--param', 'speed=3'], { encoding: 'utf8', timeout: 30000 })
  expect(bad.status).toBe(2)
  expect(bad.stderr).toMatch(/scenario s6 has no parameter "speed"/)
})

test('the CLI prints rows as JSON', () => {
  const result = spawnSync(process.execPath, [CLI, 'bench', '--scenario', 's4', '--json', '--param', 'openBatches=[500]', '--param', 'lingersMs=[60000]', '--seconds', '1'], { encoding: 'utf8', timeout: 120000 })
  expect(result.status).toBe(0)
  const [row] = JSON.parse(result.stdout)
  expect([row.openBatches, row.lost, row.received]).toEqual([500, 0, 500])
})

test('a scenario that breaks rejects with the child\'s error', async () => {
  await expect(bench.run('s5', { devices: 10, rates: [10], seconds: 1, key: 'tenant', tenants: 0 }, { progress: false })).rejects.toThrow(/scenario s5 failed \(exit status 3\)[\s\S]*s5 key must be shardKey or source/)
})

test('the logging and middleware commands run end to end and lose nothing', () => {
  // Short runs: that every phase builds, sends and is counted (their figures are BENCHMARKS.md's).
  const logging = spawnSync(process.execPath, [CLI, 'logging', '--rounds', '1', '--records', '300'], { encoding: 'utf8', timeout: 120000 })
  expect(logging.status).toBe(0)
  const row = (kind) => new RegExp(`\\| ${kind.replace(/[+/]/g, '\\$&')} \\| [\\d.]+ \\([\\d.–]+\\) \\| [\\d.]+ \\([\\d.–]+\\) \\| 0 \\|`)
  expect(logging.stdout).toMatch(row('otel + loghose processor'))
  expect(logging.stdout).toMatch(row('winston + loghose transport'))
  // OTel's own pipeline, counted where its exporter posts (a collector stand-in).
  expect(logging.stdout).toMatch(row('otel + batch processor + OTLP/HTTP exporter'))
  const middleware = spawnSync(process.execPath, [CLI, 'middleware', '--seconds', '1', '--connections', '4', '--phases', 'none,loghose,pino'], { encoding: 'utf8', timeout: 120000 })
  expect(middleware.status).toBe(0)
  expect(middleware.stdout).toMatch(/pending after flush: 0/)
})

const run = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30000 })

test.each([
  [['bench', '--secnds', '5'], /Unknown option '--secnds'/],
  [['bench', '--seconds', 'five'], /--seconds must be a number, not "five"/],
  [['bench', '--preset', 'laptop'], /--preset must be server or pi, not "laptop"/],
  [['middleware', '--rates', '1000'], /Unknown option '--rates'/],
  [['bench', 'extra'], /Unexpected argument 'extra'/],
  [['no-such-command'], /^usage: node lab\/node\/bench-cli.js bench/],
])('%j is refused with the usage', (args, message) => {
  const done = run(...args)
  expect(done.status).toBe(2)
  expect(done.stderr).toMatch(message)
  expect(done.stderr).toMatch(/bench-cli.js bench/)
  expect(done.stdout).toBe('')
})

test.each([
  [['bench', '--help'], /usage: node lab\/node\/bench-cli.js bench \[options\][\s\S]*--scenario s1\|s1r\|s2\|s4\|s5\|s6[\s\S]*--compare N/],
  [['middleware', '-h'], /usage: node lab\/node\/bench-cli.js middleware/],
  [['logging', '--help'], /usage: node lab\/node\/bench-cli.js logging/],
])('%j prints the command\'s help and exits 0', (args, help) => {
  const done = run(...args)
  expect(done.status).toBe(0)
  expect(done.stdout).toMatch(help)
  expect(done.stderr).toBe('')
})

test('S1 from Node loses nothing and prints the tables', () => {
  const result = spawnSync(process.execPath, [CLI, 'bench', '--rates', '1000,20000', '--seconds', '2', '--unthrottled-seconds', '2', '--compare', '20000'], { encoding: 'utf8', timeout: 110000 })
  expect(result.status).toBe(0)
  const lines = result.stdout.split('\n')
  const header = lines.find((l) => l.startsWith('| preset | rate |')).split('|').map((c) => c.trim()).filter(Boolean)
  const rows = lines.filter((l) => /^\| server \| (1000|20000) \|/.test(l)).map((l) => Object.fromEntries(l.split('|').map((c) => c.trim()).filter(Boolean).map((v, i) => [header[i], v])))
  expect(rows.map((r) => r.rate)).toEqual(['1000', '20000'])
  for (const row of rows) {
    expect(Number(row.received)).toBe(Number(row.rate) * 2)
    expect(Number(row.lost)).toBe(0)
  }
  expect(result.stdout).toMatch(/\| sendMany \|/)
  // Every record of every compare round was read back.
  expect(result.stdout).toMatch(/^360000 records received, 0 lost$/m)
})
