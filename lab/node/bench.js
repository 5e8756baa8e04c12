'use strict'
// The seed benchmark scenarios from Node, with their figures as data (`require('./lab/node/bench.js')` in a checkout; not part of the package):
// `await run('s2', { rates: [100, 20000], seconds: 5 })` resolves with one plain object per rate,
// size or case. `node lab/node/bench-cli.js bench --scenario s2 [--json]` is the same from the command line.
//
// s1 server (the C producer's benchmark, fixed rates then unthrottled), s1r (the same with access
// logs varied as real ones are: the engine's pool of records, as in every harness), s2 pi (the `pi` preset,
// pinned to one core with taskset when it is installed, memory as growth over the idle
// process), s4 timers (one open batch per distinct source, refilled each linger), s5 fleet
// (devices at 10 000 and 20 000 logs/s: backlog each second, add-to-delivery latency; idle
// producers in one process), s6 payload (one large value per record, sent one at a time;
// per codec the ratio and µs to compress 1 MB). Every scenario counts each log it added at the
// emulator: a row's `lost` and `duplicates` say whether its check held.
//
// `run` starts the scenario in a child Node process (so CPU, memory and threads are the
// producer's), which starts the emulator in a process of its own at nice 10. The child reports
// progress and rows as JSON lines; progress is drawn on stderr when it is a terminal or when
// asked (`{ progress: true }`).

const { spawn, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const { monitorEventLoopDelay } = require('node:perf_hooks')
const path = require('node:path')
const readline = require('node:readline')
const lh = require('../../node/lib/index.js')
const native = require('../../node/lib/native.js')
const { recordA, recordB } = require('./s1-records.js')
const { camel } = require('../../node/lib/options.js')

const TAGS = { tag_1: 'val_1', tag_2: 'val_2', tag_3: 'val_3', tag_4: 'val_4', tag_5: 'val_5' }
const CLI = path.join(__dirname, 'bench-cli.js')

/** What each scenario runs when not told otherwise. */
const DEFAULTS = {
  s1: { rates: [1000, 10000, 100000, 200000], seconds: 10, unthrottledSeconds: 10, preset: 'server', api: 'send' },
  s1r: { rates: [1000, 10000, 100000, 200000], seconds: 10, unthrottledSeconds: 10, preset: 'server', api: 'send' },
  s2: { rates: [10, 100, 1000, 10000, 20000], seconds: 10, preset: 'pi', core: 0 },
  s4: { openBatches: [100000], lingersMs: [1000, 60000], seconds: 20 },
  s5: { devices: 100000, rates: [10000, 20000], seconds: 60, key: 'shardKey', sampleEvery: 50, tenants: 10000 },
  s6: { sizes: [1 << 10, 16 << 10, 256 << 10, 512 << 10, 1 << 20], count: 50, codecs: ['none', 'lz4', 'zstd', 'deflate'], codecRounds: 20 },
}
const SCENARIOS = Object.keys(DEFAULTS)

/** The scenario's parameters: its defaults overridden by `params`; an unknown scenario or
 * parameter throws, naming it. */
function checked(scenario, params = {}) {
  if (!DEFAULTS[scenario]) throw new RangeError(`unknown scenario ${JSON.stringify(scenario)}: one of ${SCENARIOS.join(', ')}`)
  for (const name of Object.keys(params)) {
    if (!(name in DEFAULTS[scenario])) throw new TypeError(`scenario ${scenario} has no parameter ${JSON.stringify(name)}: it takes ${Object.keys(DEFAULTS[scenario]).join(', ')}`)
  }
  return { ...DEFAULTS[scenario], ...params }
}

/** Runs `scenario` in a child process; resolves with its rows. Rejects (with the child's error
 * output) when the scenario could not run; a scenario that lost logs resolves, its rows say so. */
function run(scenario, params = {}, { progress } = {}) {
  const full = checked(scenario, params)
  let argv = [CLI, 'bench', '--scenario', scenario, '--events', '--params', JSON.stringify(full)]
  let command = process.execPath
  // S2 runs on one core, as a Pi gives a logging library at most one of its four.
  if (scenario === 's2' && process.platform === 'linux' && spawnSync('taskset', ['-V']).status === 0) {
    argv = ['-c', String(full.core), command, ...argv]
    command = 'taskset'
  }
  const show = progress ?? process.stderr.isTTY
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'] })
    const rows = []
    let errors = ''
    child.stderr.on('data', (chunk) => {
      errors = (errors + chunk).slice(-4000)
    })
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const event = JSON.parse(line)
      if (event.row) rows.push(event.row)
      else if (event.progress && show) drawProgress(event.progress)
    })
    child.on('error', reject)
    child.on('close', (status) => {
      // 0: every check held; 1: a check failed (the rows say which); else the scenario broke.
      if (status === 0 || status === 1) resolve(rows)
      else reject(new Error(`scenario ${scenario} failed (exit status ${status}):\n${errors}`))
    })
  })
}

function drawProgress({ label, done, total }) {
  const width = 30
  const filled = Math.floor((width * done) / Math.max(total, 1))
  process.stderr.write(`\r${label.padEnd(28)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}${done >= total ? '\n' : ''}`)
}

/** Whether a row's correctness check failed: a log lost, duplicated, refused or left pending. */
function failed(row) {
  return ['lost', 'duplicates', 'refused', 'pending'].some((k) => row[k])
}

// ---------------------------------------------------------------------------------------------
// The child side: the scenarios themselves.

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const nowMs = () => Number(process.hrtime.bigint()) / 1e6
const cpuMs = (since) => {
  const c = process.cpuUsage(since)
  return (c.user + c.system) / 1000
}

// The statistics, the process figures, the exactly-once check and the rows are the engine's
// benchmark harness (shared with the Python front and the Rust examples); this file supplies
// the send loops.

/** The process's CPU time and memory now: `cpu_seconds`, `rss_mb`, `anon_mb`, `peak_rss_mb`,
 * `threads` (snake_case, as the harness's rows take it). */
const sample = () => JSON.parse(native.benchProcessSample())
const rssMb = () => sample().rss_mb
const threadCount = () => sample().threads

function median(values) {
  return native.benchMedian(values)
}

function percentile(values, q) {
  return native.benchPercentile(values, q)
}

/** The least-squares slope of `values` against their index: a backlog's growth per second (one
 * that keeps up saws with the linger around a flat line, near 0 against the rate). */
function slope(values) {
  return native.benchSlope(values)
}

/** A row of the harness (JSON `[column, value]` pairs, snake_case) as an object, camelCase. */
function rowObject(json) {
  return Object.fromEntries(JSON.parse(json).map(([k, v]) => [camel(k), v]))
}

/** The emulator in a child process at nice 10 (its work is not the producer's). */
async function startEmulator() {
  // It stands in for a remote service: on every core even when this process is pinned (S2).
  const everyCore = process.platform === 'linux' && spawnSync('taskset', ['-V']).status === 0
  const argv = [process.execPath, CLI, 'bench-emulator']
  const child = everyCore
    ? spawn('taskset', ['-c', `0-${require('node:os').cpus().length - 1}`, ...argv], { stdio: ['pipe', 'pipe', 'inherit'] })
    : spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] })
  const info = await new Promise((resolve) => {
    readline.createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line)))
  })
  return {
    endpoint: info.endpoint,
    options: { endpoint: info.endpoint, accessKeyId: info.access_key_id, accessKeySecret: info.access_key_secret },
    close: () => child.stdin.end(),
  }
}

/** One run's measure by the harness: the exactly-once check of a logstore and the process's
 * CPU time and memory between `begin()` and `stop()`; `rateRow`/`unthrottledRow` make its row. */
function meter(emu, logstore, project = 'bench') {
  const m = new native.BenchMeter(emu.endpoint, project, logstore)
  return {
    begin: () => m.begin(),
    stop: () => m.stop(),
    counted: (sent) => JSON.parse(m.counted(sent)),
    rateRow: (run) => rowObject(m.rateRow(JSON.stringify(run))),
    unthrottledRow: (run) => rowObject(m.unthrottledRow(JSON.stringify(run))),
  }
}

/** The exactly-once check of one logstore: logs read back against logs sent, and batches the
 * emulator saw twice while the check was open. */
async function counted(emu, logstore) {
  const m = meter(emu, logstore)
  return async (sent) => m.counted(sent)
}

/** Calls `body(second)` at the start of each second and sleeps out the rest; resolves with the
 * ms each call took. */
async function eachSecond(seconds, label, emit, body) {
  const took = []
  const t0 = nowMs()
  for (let second = 0; second < seconds; second++) {
    const start = nowMs()
    // A body may return the ms it spent yielding to the event loop: not its own time.
    const yielded = (await body(second)) || 0
    took.push(nowMs() - start - yielded)
    emit({ progress: { label, done: second + 1, total: seconds } })
    const rest = t0 + (second + 1) * 1000 - nowMs()
    if (rest > 0) await sleep(rest)
  }
  return took
}

/** Times the producer's work on the event loop besides `send`: its one call per batch of
 * delivery reports (the facade's report handler, wrapped; the reports' objects are made by
 * the addon just before it). */
function timeReportCallbacks(producer) {
  const timing = { maxNs: 0 }
  const onReports = producer._onReports
  producer._onReports = function (reports) {
    const t = process.hrtime.bigint()
    try {
      return onReports.call(this, reports)
    } finally {
      timing.maxNs = Math.max(timing.maxNs, Number(process.hrtime.bigint() - t))
    }
  }
  return timing
}

/** S1-R's records (the engine's pool, the same in every harness), loaded once: log `n` is
 * record `n % 4096` with the first 12 hex digits of its `request_id` set to `n`. */
const s1r = { pool: null, tails: null, rawBytesPerLog: 0 }
function loadS1R() {
  if (s1r.pool) return
  s1r.pool = native.benchS1RPool().split('\n').filter(Boolean).map((line) => Object.fromEntries(line.split('\t').map((field) => {
    const at = field.indexOf('=')
    return [field.slice(0, at), field.slice(at + 1)]
  })))
  s1r.tails = s1r.pool.map((record) => record.request_id.slice(12))
  let bytes = 0
  for (const record of s1r.pool) for (const [k, v] of Object.entries(record)) bytes += k.length + v.length
  s1r.rawBytesPerLog = bytes / s1r.pool.length
}

/** S1-R log `n`: its pool record copied, its number formatted into the request id (as S1
 * formats its index). */
function recordS1R(n) {
  const at = n % 4096
  const record = { ...s1r.pool[at] }
  record.request_id = n.toString(16).padStart(12, '0') + s1r.tails[at]
  return record
}

/** A function sending log `n` of `scenario` (S1: even `n` the ten-field record of iteration
 * `n / 2`, odd the four-field one; S1-R: access log `n`), through `send` or, with `api`
 * 'sender', through senders of the records' keys (`Producer.sender`). */
function logAdder(producer, scenario, api) {
  if (scenario === 's1r') {
    if (api !== 'sender') return (n) => producer.send(recordS1R(n))
    const keys = Object.keys(s1r.pool[0])
    if (keys.length !== 10 || keys[8] !== 'request_id') throw new Error(`unexpected S1-R keys: ${keys}`)
    const rows = s1r.pool.map((record) => keys.map((k) => record[k]))
    const log = producer.sender(keys)
    return (n) => {
      const at = n % 4096
      const v = rows[at]
      log(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], n.toString(16).padStart(12, '0') + s1r.tails[at], v[9])
    }
  }
  if (api !== 'sender') return (n) => producer.send(n % 2 === 0 ? recordA(n / 2) : recordB())
  const a = recordA(0)
  const v = Object.values(a)
  const sendA = producer.sender(Object.keys(a))
  const sendB = producer.sender(Object.keys(recordB()))
  return (n) => {
    if (n % 2 === 0) sendA(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], String(n / 2))
    else sendB('Real-time log collection and consumption', 'Query and real-time analysis', 'dashboard and report functions', 'Grafana and JDBC/SQL92')
  }
}

async function rateRow(emu, emit, scenario, preset, rate, seconds, idle, api = 'send') {
  const logstore = `${scenario}-rate-${rate}`
  const measure = meter(emu, logstore)
  const producer = lh.Producer.fromPreset(preset, { ...emu.options, project: 'bench', logstore, topic: 'test_topic', tags: TAGS })
  const callbacks = timeReportCallbacks(producer)
  const delay = monitorEventLoopDelay({ resolution: 5 })
  delay.enable()
  const pairs = Math.max(Math.floor(rate / 2), 1)
  const add = logAdder(producer, scenario, api)
  let refused = 0
  let index = 0
  measure.begin()
  const took = await eachSecond(seconds, `${scenario} ${rate} logs/s`, emit, async () => {
    let yielded = 0
    for (let i = 0; i < pairs; i++) {
      try {
        add(2 * index)
        add(2 * index + 1)
      } catch (err) {
        if (err instanceof lh.BufferFullError) refused += 1
        else throw err
      }
      index += 1
      // Adds go in slices of 500 pairs with a yield between, as a server handling requests
      // would, so the loop-delay figure shows what the producer itself costs the event loop.
      if (i % 500 === 499) {
        const t = nowMs()
        await new Promise((r) => setImmediate(r))
        yielded += nowMs() - t
      }
    }
    return yielded
  })
  const pending = await producer.flush(120000)
  measure.stop()
  delay.disable()
  await producer.close()
  return measure.rateRow({
    scenario, preset, pairs_per_second: pairs, took_seconds: took.map((ms) => ms / 1000), refused, pending, idle,
    raw_bytes_per_log: scenario === 's1r' ? s1r.rawBytesPerLog : null,
    extra: [['loop_delay_max_ms', delay.max / 1e6], ['callback_max_ms', callbacks.maxNs / 1e6]],
  })
}

async function unthrottled(emu, emit, preset, seconds, scenario = 's1', api = 'send') {
  const measure = meter(emu, `${scenario}-unthrottled`)
  const producer = lh.Producer.fromPreset(preset, { ...emu.options, project: 'bench', logstore: `${scenario}-unthrottled`, topic: 'test_topic', tags: TAGS })
  const add = logAdder(producer, scenario, api)
  let n = 0
  let backoffs = 0
  measure.begin()
  const t0 = nowMs()
  for (let second = 0; second < seconds; second++) {
    while (nowMs() - t0 < (second + 1) * 1000) {
      let full = false
      for (let i = 0; i < 500 && !full; i++) {
        try {
          add(n)
          n += 1
        } catch (err) {
          if (!(err instanceof lh.BufferFullError)) throw err
          backoffs += 1
          full = true
        }
      }
      // The buffer is full: back off and let delivery catch up, as an application would.
      if (full) await sleep(1)
    }
    emit({ progress: { label: `${scenario} unthrottled`, done: second + 1, total: seconds } })
  }
  const addMs = nowMs() - t0
  const pending = await producer.flush(300000)
  measure.stop()
  const scrapeMs = scrapeCost(producer)
  await producer.close()
  // Refused sends were retried after a back-off, never lost: not part of the check.
  return measure.unthrottledRow({
    scenario, preset, sent: n, add_seconds: addMs / 1000, pending,
    extra: [['backoffs', backoffs], ['scrape_ms', scrapeMs]],
  })
}

/** What a scrape of the producer's metrics costs from JavaScript (`metricsText()`, rendered by
 * the engine): median milliseconds of 21. */
function scrapeCost(producer) {
  const spent = []
  for (let i = 0; i < 21; i++) {
    const start = nowMs()
    producer.metricsText()
    spent.push(nowMs() - start)
  }
  spent.sort((a, b) => a - b)
  return Math.round(spent[10] * 1000) / 1000
}

const SCENARIO_BODIES = {
  async s1(emu, emit, p) {
    const idle = sample()
    for (const rate of p.rates) emit({ row: await rateRow(emu, emit, 's1', p.preset, rate, p.seconds, idle, p.api) })
    if (p.unthrottledSeconds > 0) emit({ row: await unthrottled(emu, emit, p.preset, p.unthrottledSeconds, 's1', p.api) })
  },

  async s1r(emu, emit, p) {
    loadS1R()
    const idle = sample()
    for (const rate of p.rates) emit({ row: await rateRow(emu, emit, 's1r', p.preset, rate, p.seconds, idle, p.api) })
    if (p.unthrottledSeconds > 0) emit({ row: await unthrottled(emu, emit, p.preset, p.unthrottledSeconds, 's1r', p.api) })
  },

  async s2(emu, emit, p) {
    let pinned = null
    try {
      const allowed = /^Cpus_allowed_list:\s+(\S+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]
      if (allowed === String(p.core)) pinned = p.core
    } catch {}
    const idle = sample()
    for (const rate of p.rates) {
      const row = await rateRow(emu, emit, 's2', p.preset, rate, p.seconds, idle)
      emit({ row: { ...row, pinnedCore: pinned } })
    }
  },

  async s4(emu, emit, p) {
    for (const n of p.openBatches) {
      const sources = Array.from({ length: n }, (_, i) => `device-${String(i).padStart(7, '0')}`)
      for (const linger of p.lingersMs) {
        const logstore = `s4-${n}-${linger}`
        const result = await counted(emu, logstore)
        const rss0 = rssMb()
        // The budget charges each open batch its reserved size, not its one small log.
        const producer = new lh.Producer({ ...emu.options, project: 'bench', logstore, lingerMs: linger, bufferMaxBytes: Math.max(64 << 20, n * 8192) })
        const record = { event: 'tick', status: 'ok' }
        let adds = 0
        const fill = () => {
          const t = nowMs()
          for (const source of sources) producer.send(record, { source })
          adds += n
          return nowMs() - t
        }
        const first = fill()
        const perBatch = ((rssMb() - rss0) * 1048576) / n
        const label = `s4 ${n} batches, linger ${linger} ms`
        const cpu0 = process.cpuUsage()
        const t0 = nowMs()
        // "While waiting" starts once the adds' own aftermath (V8 collecting what they left)
        // has passed: 5 s in, or a quarter of a shorter window.
        const settle = Math.min(5, Math.floor(p.seconds / 4))
        let [cpuSettled, tSettled] = [cpu0, t0]
        let nextFill = t0 + linger
        let refills = 0
        for (let second = 0; second < p.seconds; second++) {
          if (second === settle) [cpuSettled, tSettled] = [process.cpuUsage(), nowMs()]
          const end = t0 + (second + 1) * 1000
          for (;;) {
            const now = nowMs()
            if (nextFill <= now && nextFill < t0 + p.seconds * 1000) {
              fill()
              refills += 1
              nextFill += linger
              continue
            }
            if (now >= end) break
            await sleep(Math.min(end, nextFill) - now)
          }
          emit({ progress: { label, done: second + 1, total: p.seconds } })
        }
        const wall = nowMs() - t0
        const cpu = cpuMs(cpu0)
        const waiting = cpuMs(cpuSettled) / Math.max(nowMs() - tSettled, 1)
        const pending = await producer.flush(300000)
        await producer.close()
        emit({ row: { scenario: 's4', openBatches: n, lingerMs: linger, seconds: p.seconds, usPerAdd: (first * 1000) / n, bytesPerOpenBatch: perBatch, cpuPctWaiting: waiting * 100, cpuPctWindow: (cpu / wall) * 100, refills, adds, ...(await result(adds)), pending } })
      }
    }
  },

  async s5(emu, emit, p) {
    if (p.key !== 'shardKey' && p.key !== 'source') throw new RangeError(`s5 key must be shardKey or source, not ${JSON.stringify(p.key)}`)
    // Devices take turns in a shuffled (seeded) order, as a gateway sees them.
    const order = Array.from({ length: p.devices }, (_, i) => i)
    let seed = 5
    for (let i = order.length - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      const j = seed % (i + 1)
      ;[order[i], order[j]] = [order[j], order[i]]
    }
    const names = order.map((i) => (p.key === 'shardKey' ? i.toString(16).padStart(32, '0') : `device-${String(i).padStart(6, '0')}`))
    for (const rate of p.rates) {
      const logstore = `s5-${rate}-${p.key === 'source' ? 'source' : 'shard-key'}`
      const result = await counted(emu, logstore)
      const producer = lh.Producer.fromPreset('server', { ...emu.options, project: 'bench', logstore, adjustShardHash: true })
      const latencies = []
      const backlog = []
      let sent = 0
      const cpu0 = process.cpuUsage()
      const t0 = nowMs()
      const took = await eachSecond(p.seconds, `s5 ${rate} logs/s`, emit, async () => {
        for (let i = 0; i < rate; i++) {
          const device = names[sent % names.length]
          const message = { device, temperature: String(20 + (sent % 15)), seq: String(sent) }
          const route = { [p.key]: device }
          if (sent % p.sampleEvery === 0) {
            const added = nowMs()
            producer.sendAsync(message, route).then(() => latencies.push(nowMs() - added), () => {})
          } else {
            producer.send(message, route)
          }
          sent += 1
          // Let delivery reports in between slices, as a service handling messages would.
          if (i % 1000 === 999) await new Promise((r) => setImmediate(r))
        }
        const stats = producer.stats()
        backlog.push(stats.accepted - stats.delivered)
      })
      const wall = nowMs() - t0
      const deliveredInTime = producer.stats().delivered
      const cpu = cpuMs(cpu0)
      const rss = rssMb()
      const pending = await producer.flush(300000)
      await producer.close()
      emit({
        row: {
          scenario: 's5', devices: p.devices, key: p.key, rate, seconds: p.seconds, deliveredPerS: deliveredInTime / (wall / 1000), cpuPct: (cpu / wall) * 100,
          usPerSend: (median(took) * 1000) / rate, backlogMax: Math.max(0, ...backlog), backlogEnd: backlog.at(-1) ?? 0, backlogTrendPerS: slope(backlog), backlog,
          latencyP50Ms: percentile(latencies, 0.5), latencyP99Ms: percentile(latencies, 0.99), latencySamples: latencies.length, rssMb: rss, ...(await result(sent)), pending,
        },
      })
    }
    if (p.tenants > 0) {
      const result = await counted(emu, 's5-tenants')
      const rss0 = rssMb()
      const threads0 = threadCount()
      const producers = []
      for (let i = 0; i < p.tenants; i++) {
        producers.push(new lh.Producer({ ...emu.options, project: 'bench', logstore: 's5-tenants', topic: `tenant-${i}`, lingerMs: 200 }))
        if ((i + 1) % Math.max(Math.floor(p.tenants / 20), 1) === 0) emit({ progress: { label: `s5 ${p.tenants} producers`, done: i + 1, total: p.tenants } })
      }
      const rssMade = rssMb()
      producers.forEach((producer, i) => producer.send({ tenant: String(i) }))
      let pending = 0
      for (const producer of producers) pending += await producer.flush(60000)
      // Idle: past the time after which a producer's report thread ends (5 s without reports).
      await sleep(6000)
      const rssIdle = rssMb()
      const threads = threadCount()
      for (const producer of producers) await producer.close()
      emit({ row: { scenario: 's5', tenants: p.tenants, kbPerIdleProducer: ((rssIdle - rss0) * 1024) / p.tenants, kbPerNewProducer: ((rssMade - rss0) * 1024) / p.tenants, threadsPerProducer: (threads - threads0) / p.tenants, ...(await result(p.tenants)), pending } })
    }
  },

  async s6(emu, emit, p) {
    const result = await counted(emu, 's6-payload')
    const producer = new lh.Producer({ ...emu.options, project: 'bench', logstore: 's6-payload', lingerMs: 0, bufferMaxBytes: 64 << 20, maxBlockMs: 60000 })
    let sent = 0
    for (const [k, size] of p.sizes.entries()) {
      const payload = native.benchPayload(size)
      const latencies = []
      for (let i = 0; i < p.count; i++) {
        const t = nowMs()
        await producer.sendAsync({ size: String(size), i: String(i), payload })
        latencies.push(nowMs() - t)
        sent += 1
      }
      emit({ progress: { label: 's6 sizes', done: k + 1, total: p.sizes.length } })
      emit({ row: { scenario: 's6', size, count: p.count, latencyP50Ms: percentile(latencies, 0.5), latencyP99Ms: percentile(latencies, 0.99) } })
    }
    await producer.close()
    emit({ row: { scenario: 's6', check: 'payload', ...(await result(sent)) } })
    const data = Buffer.from(native.benchPayload(1 << 20))
    for (const codec of p.codecs) {
      const times = []
      let size = 0
      for (let r = 0; r < p.codecRounds; r++) {
        const t = nowMs()
        size = native.compress(codec, data).length
        times.push(nowMs() - t)
      }
      emit({ row: { scenario: 's6', codec, ratio: data.length / size, usPerMb: median(times) * 1000 } })
    }
  },
}

/** Runs a scenario in this process, passing each event (progress, row) to `emit` as it happens. */
async function runHere(scenario, params, emit) {
  const p = checked(scenario, params)
  const emu = await startEmulator()
  try {
    await SCENARIO_BODIES[scenario](emu, emit, p)
  } finally {
    emu.close()
  }
}

module.exports = { run, runHere, checked, failed, DEFAULTS, SCENARIOS, startEmulator, meter, median, timeReportCallbacks, TAGS }
