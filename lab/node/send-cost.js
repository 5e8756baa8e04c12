'use strict'
// Where a `send` of the S1 records goes in Node: builds the records only, then joins their keys and
// values as the facade does (cons strings, lengths into a typed array), then forces the join flat
// (what V8 does before copying it out), then sends through the facade. Each line is the best of five rounds of 400 000
// sends, in ns per send. The producer points at a closed port, so nothing is delivered and
// nothing but the caller's cost is measured.
//
//   node lab/node/send-cost.js [sends-per-round]

const lh = require('../../node/lib/index.js')
const { recordA, recordB } = require('./s1-records.js')

const lengths = new Uint32Array(512)
/** The facade's framing for records of strings: keys and values concatenated, their lengths
 * in `lengths`. */
function joined(contents) {
  let text = ''
  let n = 0
  for (const key in contents) {
    const value = contents[key]
    text = text + key + value
    lengths[n] = key.length
    lengths[n + 1] = value.length
    n += 2
  }
  return text
}

const sends = Number(process.argv[2] || 400000)
const producer = new lh.Producer({
  endpoint: 'http://127.0.0.1:9', project: 'proj', logstore: 'logs', accessKeyId: 'a', accessKeySecret: 'b',
  bufferMaxBytes: 1 << 30, batchMaxCount: 4096, batchMaxBytes: 4 << 20, lingerMs: 3000, maxAttempts: 1, exitTimeoutMs: 100,
})
let sink = 0
const stages = {
  'build the records': () => {
    for (let i = 0; i < sends; i += 2) sink += recordA(i).index.length + recordB().LogHub.length
  },
  '+ join their fields': () => {
    for (let i = 0; i < sends; i += 2) sink += joined(recordA(i)).length + joined(recordB()).length
  },
  '+ flatten the join': () => {
    for (let i = 0; i < sends; i += 2) sink += joined(recordA(i)).charCodeAt(5) + joined(recordB()).charCodeAt(5)
  },
  'send through the facade': () => {
    for (let i = 0; i < sends; i += 2) {
      producer.send(recordA(i))
      producer.send(recordB())
    }
  },
}
const best = {}
for (let round = 0; round < 5; round++) {
  for (const [name, run] of Object.entries(stages)) {
    const t0 = process.hrtime.bigint()
    run()
    const ns = Number(process.hrtime.bigint() - t0) / sends
    best[name] = Math.min(best[name] ?? Infinity, ns)
  }
}
for (const [name, ns] of Object.entries(best)) console.log(`${name.padEnd(24)} ${ns.toFixed(0)} ns per send`)
if (sink === 0) console.log('')
producer.close({ timeoutMs: 100 }).catch(() => {})
