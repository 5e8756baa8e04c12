'use strict'
// What a scrape of one producer's metrics costs in Node, by route, with DESTINATIONS destinations
// (each with delivered batches, so every per-destination series exists):
//
// - `text`: `producer.metricsText()`, rendered by the engine (what a bare `/metrics` answers);
// - `metrics`: `producer.metrics()`, the snapshot as objects;
// - `prom-client`: `registry.metrics()` of a prom-client registry holding only the producer
//   (`loghose/prometheus`).
//
// Prints the median, min and max milliseconds of RUNS calls of each, and the lines of text.
//
//   node lab/node/metrics-scrape.js [destinations=100] [runs=30]

const lh = require('../../node/lib/index.js')
const { register } = require('../../node/lib/prometheus.js')
const client = require('prom-client')

const destinations = Number(process.argv[2] ?? 100)
const runs = Number(process.argv[3] ?? 30)

async function timed(call) {
  const spent = []
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint()
    await call()
    spent.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  spent.sort((a, b) => a - b)
  const median = spent[Math.floor(spent.length / 2)]
  return `${median.toFixed(2)} ms (${spent[0].toFixed(2)}-${spent[spent.length - 1].toFixed(2)})`
}

async function main() {
  const emu = new lh.Emulator()
  const producer = new lh.Producer({ ...emu.producerOptions(), lingerMs: 5 })
  try {
    for (let d = 0; d < destinations; d++) {
      const logstore = `ls${String(d).padStart(4, '0')}`
      for (let i = 0; i < 20; i++) producer.send({ i: String(i) }, { logstore })
    }
    if ((await producer.flush(60000)) !== 0) throw new Error('not everything was delivered')
    const registry = new client.Registry()
    register(producer, { registry })
    const text = producer.metricsText()
    const registryText = await registry.metrics()
    console.log(`${destinations} destinations: ${text.trimEnd().split('\n').length} lines (engine), ` +
      `${registryText.trimEnd().split('\n').length} lines (prom-client)`)
    console.log('text        ', await timed(() => producer.metricsText()))
    console.log('metrics     ', await timed(() => producer.metrics()))
    console.log('prom-client ', await timed(() => registry.metrics()))
  } finally {
    await producer.close()
    emu.close()
  }
}

main().catch((err) => { console.error(err); process.exit(1) })
