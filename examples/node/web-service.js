// A web service that logs one access record per request through pino, with loghose as pino's
// transport (`target: 'loghose/pino'`, run in pino's worker thread). It serves on a free port of
// 127.0.0.1, sends itself 200 requests, then ends the transport, which delivers what it holds.
//
//   node examples/node/web-service.js
'use strict'

const http = require('node:http')
const { once } = require('node:events')
const pino = require('pino')
const { destination } = require('./destination.js')

async function main() {
  const { options, emu } = destination('access')
  const transport = pino.transport({ target: 'loghose/pino', options: { ...options, topic: 'web' } })
  const log = pino(transport)
  const server = http.createServer((req, res) => {
    const started = process.hrtime.bigint()
    res.end('hello\n')
    log.info({ method: req.method, path: req.url, status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 }, 'request served')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address()
  for (let i = 0; i < 200; i++) {
    const answer = await fetch(`http://127.0.0.1:${port}/items/${i}`)
    await answer.text()
  }
  server.close()
  transport.end()
  await once(transport, 'close') // the transport has delivered what it held
  if (emu) {
    // Stored per shard, so not in the order sent: every path, each once.
    const paths = emu.logs('examples', 'access').map((log) => Object.fromEntries(log.contents).path).sort()
    const expected = Array.from({ length: 200 }, (_, i) => `/items/${i}`).sort()
    const every = JSON.stringify(paths) === JSON.stringify(expected)
    console.log(`200 requests served, ${paths.length} access records stored, one for each path requested: ${every}`)
    emu.close()
  } else {
    console.log('200 requests served and logged')
  }
}
main()
