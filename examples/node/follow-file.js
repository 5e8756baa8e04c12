// A script that follows a log file as `tail -F` does and sends each new line as a record.
//
// A writer stands in for your application: it appends lines, rotates the file once (renames it
// and starts a new one) and stops. The follower reads what is appended, notices the rotation by
// the file's identity, finishes the old file and goes on with the new one. (`loghose pipe
// --follow FILE` does the same from the shell.)
//
//   node examples/node/follow-file.js
'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')
const { Producer } = require('loghose')
const { destination } = require('./destination.js')

const LINES = 1000

async function writeAndRotate(file) {
  for (let i = 0; i < LINES; i++) {
    if (i === LINES / 2) fs.renameSync(file, `${file}.1`)
    fs.appendFileSync(file, `line ${i}: user=ada action=view\n`)
    if (i % 100 === 0) await sleep(10)
  }
}

async function follow(file, producer, writing) {
  let fd = null
  let ino = null
  let pos = 0
  let partial = ''
  let sent = 0
  let done = false
  writing.then(() => (done = true))
  for (;;) {
    if (fd === null && fs.existsSync(file)) {
      fd = fs.openSync(file, 'r')
      ino = fs.fstatSync(fd).ino
      pos = 0
    }
    if (fd !== null) {
      const size = fs.fstatSync(fd).size
      if (size > pos) {
        const chunk = Buffer.alloc(size - pos)
        pos += fs.readSync(fd, chunk, 0, chunk.length, pos)
        const lines = (partial + chunk.toString('utf8')).split('\n')
        partial = lines.pop()
        for (const line of lines) {
          producer.send({ content: line, file: path.basename(file) })
          sent++
        }
      }
      if (fs.existsSync(file) && fs.statSync(file).ino !== ino) {
        fs.closeSync(fd) // read to its end above: go on with the new file
        fd = null
        continue
      }
      if (done && pos === fs.fstatSync(fd).size) {
        fs.closeSync(fd)
        return sent
      }
    }
    await sleep(50)
  }
}

async function main() {
  const { options, emu } = destination('files')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-follow-'))
  const file = path.join(dir, 'app.log')
  const producer = new Producer({ ...options, lingerMs: 200 })
  const sent = await follow(file, producer, writeAndRotate(file))
  const closed = await producer.close()
  console.log(`followed ${sent} lines across one rotation; undelivered: ${closed.undelivered}`)
  if (emu) {
    console.log(`the emulator holds ${emu.logs('examples', 'files').length} of them`)
    emu.close()
  }
  fs.rmSync(dir, { recursive: true, force: true })
}
main()
