'use strict'
// Ctrl-C reaches a Node producer on Windows (run under Wine by scripts/platforms/windows/node.sh).
// The parent starts the emulator and a child whose producer holds 1 000 records (a minute's
// linger); once the child says it is ready, the parent writes MARKER and the caller sends the
// child a Ctrl-C (under Wine, SIGINT to the child's process: how Wine delivers a console's).
// The child must deliver every record and end.
//
//   node ctrl-c.cjs MARKER
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')

const ROOT = path.join(__dirname, '..', '..')
const loghose = require(ROOT)

async function main(marker) {
  const emu = new loghose.Emulator()
  const options = { ...emu.producerOptions('demo', 'ctrl-c'), lingerMs: 60000 }
  const script = `
    const loghose = require(${JSON.stringify(ROOT)})
    const p = new loghose.Producer(${JSON.stringify(options)})
    for (let i = 0; i < 1000; i++) p.send({ i })
    console.log('ready')
    setInterval(() => {}, 1000) // ctrl-c.cjs child`
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += chunk })
  child.stdout.on('data', (chunk) => {
    if (String(chunk).includes('ready')) fs.writeFileSync(marker, String(child.pid))
  })
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
  const [code, signal] = await new Promise((resolve) => child.on('close', (...end) => resolve(end)))
  clearTimeout(timer)
  const delivered = emu.logs('demo', 'ctrl-c').length
  console.log(`child ended (code ${code}, signal ${signal}): ${delivered} of 1000 delivered`)
  assert.notEqual(signal, 'SIGKILL', `not ended by the Ctrl-C in 90 s: ${stderr}`)
  assert.equal(delivered, 1000, stderr)
  emu.close()
}

main(process.argv[2]).catch((e) => {
  console.error(e)
  process.exit(1)
})
