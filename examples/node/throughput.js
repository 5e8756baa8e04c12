// A throughput experiment: how many records a second this machine sends from Node.js, and what
// the producer does meanwhile. Records of the same keys go through `producer.sender(keys)` (the
// keys encoded once, the values passed in order). Runs for SECONDS (default 3), then prints the
// rate of sends, the rate of delivery and the producer's counters.
//
//   node examples/node/throughput.js [SECONDS]
'use strict'

const { Producer } = require('loghose')
const { destination } = require('./destination.js')

async function main(seconds) {
  const { options, emu } = destination('throughput')
  const producer = new Producer(options)
  const access = producer.sender(['method', 'path', 'status', 'ms', 'agent'])
  let sent = 0
  const started = performance.now()
  while (performance.now() - started < seconds * 1000) {
    for (let i = 0; i < 1000; i++) access('GET', `/items/${i}`, 200, 1.5, 'curl/8.5')
    sent += 1000
    // Let the event loop run: delivery reports and timers are handled between bursts.
    if (sent % 100000 === 0) await new Promise(setImmediate)
  }
  const adding = (performance.now() - started) / 1000
  const closed = await producer.close({ timeoutMs: 60000 })
  const total = (performance.now() - started) / 1000
  const stats = producer.stats()
  console.log(
    `${sent.toLocaleString('en')} records in ${adding.toFixed(1)} s: ${Math.round(sent / adding).toLocaleString('en')} sends/s, ` +
      `${Math.round(stats.delivered / total).toLocaleString('en')} delivered/s, ${closed.undelivered} undelivered`,
  )
  if (emu) {
    console.log('the emulator counted', emu.totals('examples', 'throughput'))
    emu.close()
  }
}
main(Number(process.argv[2] || 3))
