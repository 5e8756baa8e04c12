// A batch job that must not lose a record: a spool on disk, and an exit status that says what
// happened, for cron, systemd or a CI pipeline to act on.
//
// Every record is on disk before `send` returns (`spoolDir`; `spoolSync: 'batch'` makes each
// batch durable before it is sent). If the service cannot take everything before the job's
// time is up, the rest stays in the spool and the next run on the same directory delivers it.
// The exit status follows `loghose pipe`'s: 0 every record delivered, 75 the rest kept durably
// for the next run, 1 something was lost.
//
//   node examples/node/batch-job.js [SPOOL_DIR] [SECONDS]
//
// SECONDS (default 30) is how long the close may take to deliver what is left.
'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Producer } = require('loghose')
const { destination } = require('./destination.js')

async function main(spoolDir, seconds) {
  const { options, emu } = destination('jobs')
  const producer = new Producer({ ...options, spoolDir, spoolSync: 'batch' })
  for (let n = 0; n < 10000; n++) producer.send({ job: 'nightly-export', row: n, status: 'exported' })
  const closed = await producer.close({ timeoutMs: seconds * 1000 })
  console.log({ undelivered: closed.undelivered, kept: closed.kept, keptNotDurable: closed.keptNotDurable })
  if (emu) {
    console.log(`the emulator holds ${emu.logs('examples', 'jobs').length} records`)
    emu.close()
  }
  const lost = closed.undelivered + closed.keptNotDurable
  if (lost > 0) {
    console.error(`${lost} records lost`)
    return 1
  }
  if (closed.kept > 0) {
    console.error(`${closed.kept} records kept in ${spoolDir} for the next run`)
    return 75
  }
  return 0
}

main(process.argv[2] || fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-job-')), Number(process.argv[3] || 30)).then((status) => {
  process.exitCode = status
})
