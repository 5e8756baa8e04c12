'use strict'
// Instructions per Node `send` of the S1 records, for `valgrind --tool=callgrind` (see
// lab/scripts/instructions.sh): adds N prebuilt S1 records (the two kinds alternating) to a producer
// whose batches never seal while it runs, then exits at once. The marginal count per send is
// (count at N - count at 0) / N.
const path = require('node:path')
const { Producer } = require(path.join(__dirname, '..', '..', 'node', 'lib', 'index.js'))
const { recordA, recordB } = require(path.join(__dirname, 's1-records.js'))

const n = Number(process.argv[2] || 0)
const producer = new Producer({
  endpoint: 'http://127.0.0.1:9', project: 'proj', logstore: 'logs', accessKeyId: 'id', accessKeySecret: 'secret',
  batchMaxBytes: 4 << 20, batchMaxCount: 40960, bufferMaxBytes: 128 << 20, lingerMs: 600000,
})
const records = [recordA(12345), recordB()]
for (let i = 0; i < n; i++) producer.send(records[i & 1])
process.reallyExit(0)
