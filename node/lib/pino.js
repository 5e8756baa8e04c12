'use strict'
// loghose/pino: a pino transport. pino loads it in its worker thread:
//
//   const logger = pino(pino.transport({ target: 'loghose/pino', options: { endpoint, project, logstore, ... } }))
//
// The options are the Producer's. Each line pino writes becomes one log, parsed by the engine
// (not with JSON.parse here): `time` is the log's time, `level` its label, every other key a
// field, nested objects as compact JSON. The worker sends while the application runs; when pino
// ends the stream (logger flush at exit, `transport.end()`), what is pending is delivered
// (`closeTimeoutMs`, default 10 000) before the worker exits. A line that cannot be sent is
// counted (`invalid` or `dropped` in the producer's stats) and reported once per error class
// as a process warning; the worker goes on.

const build = require('pino-abstract-transport')
const { Producer } = require('./index.js')
const { lineWriter } = require('./lines.js')

module.exports = async function loghoseTransport(options = {}) {
  const { closeTimeoutMs = 10000, ...rest } = options
  // pino adds keys of its own (`$context`, `pinoWillSendConfig`); they are not producer options.
  const producerOptions = Object.fromEntries(Object.entries(rest).filter(([key]) => !key.startsWith('$') && key !== 'pinoWillSendConfig'))
  const producer = new Producer(/** @type {import('./index').ProducerOptions} */ (producerOptions))
  const write = lineWriter(producer)
  return build(
    async function (source) {
      for await (const line of source) {
        if (line) write(line)
      }
    },
    {
      parse: 'lines',
      async close() {
        await producer.close({ timeoutMs: closeTimeoutMs })
      },
    },
  )
}

module.exports.lineWriter = lineWriter
