'use strict'
// Where a `send` of the S1 records goes in Node: builds the records only, then joins their fields
// as the facade does (cons strings), then forces the join flat (what V8 does before copying
// it out), then sends through the facade. Each line is the best of five rounds of 400 000
// sends, in ns per send. The producer points at a closed port, so nothing is delivered and
// nothing but the caller's cost is measured.
//
//   node node/bench/send-cost.js [sends-per-round]

const lh = require('../index.js')

function recordA(index) {
  return {
    content_key_1: '1abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_2: '2abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_3: '3abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_4: '4abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_5: '5abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_6: '6abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_7: '7abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_8: '8abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    content_key_9: '9abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+',
    index: String(index),
  }
}

function recordB() {
  return {
    LogHub: 'Real-time log collection and consumption',
    'Search/Analytics': 'Query and real-time analysis',
    Visualized: 'dashboard and report functions',
    Interconnection: 'Grafana and JDBC/SQL92',
  }
}

/** The facade's framing, `key \0 value \0 …`, for records of strings. */
function joined(contents) {
  let text = ''
  for (const key in contents) text += key + '\0' + contents[key] + '\0'
  return text
}

const sends = Number(process.argv[2] || 400000)
const producer = new lh.Producer({
  endpoint: 'http://127.0.0.1:9', project: 'p', logstore: 'l', accessKeyId: 'a', accessKeySecret: 'b',
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
