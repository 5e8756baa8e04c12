'use strict'
// loghose for Node.js: the hand-written facade over the napi-rs addon (./native.js).
//
// `send` is synchronous and cheap: a plain record crosses as one string of its keys and values
// (its values alone once its keys were seen before), their lengths in an array shared with the
// addon (other records cross as JSON), and is encoded
// and checked field by field by the engine; nothing blocks the event loop. Reports arrive in
// batches through one weak threadsafe function, so an idle producer never keeps the process alive; while records
// are pending, a ref'd timer keeps the loop alive (bounded by `exitTimeoutMs` without
// progress) so a script that ends without `close()` still delivers. A throwing `delivery`
// listener is caught and re-emitted as `error` (only if someone listens); it never reaches
// the addon or crashes the process.
//
// One module per concept: binding.js (the addon), values.js (records and their values),
// options.js (options and presets), producer.js (Producer), emulator.js (Emulator),
// errors.js, lines.js (JSON lines, for pino); this one puts them together.

const native = require('./binding.js')
const { LoghoseError, ConfigError, InvalidRecordError, BufferFullError, ProducerClosedError, SpoolLockedError, DeliveryError } = require('./errors.js')
const { lineWriter } = require('./lines.js')
const { Producer } = require('./producer.js')
const { Emulator } = require('./emulator.js')

/** A pino destination on the main thread (no worker): `pino(opts, loghose.pinoDestination(options))`.
 * Each line becomes one log as with the `loghose/pino` transport; `flush()` / `end()` deliver
 * what is pending, and pending records keep the process alive until delivered, as for any
 * producer. `producer` is the Producer behind it. */
function pinoDestination(options = {}) {
  const producer = options instanceof Producer ? options : new Producer(options)
  const destination = {
    producer,
    // What pino looks for to take a lone argument as the destination: `pino(pinoDestination(o))`.
    writable: true,
    /** Lines that could not be sent (each class of error also reported once as a process warning). */
    failures: 0,
    write(chunk) {
      // pino writes one line per call; a chunk of several (a multistream's) is split here.
      let start = 0
      for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
        if (end > start) write(chunk.slice(start, end))
        start = end + 1
      }
      if (start < chunk.length) write(chunk.slice(start))
      return true
    },
    flush(callback) {
      const done = producer.flush()
      if (typeof callback === 'function') done.then(() => callback(), callback)
      return done
    },
    end(callback) {
      const done = producer.close()
      if (typeof callback === 'function') done.then(() => callback(), callback)
      return done
    },
  }
  const write = lineWriter(producer, destination)
  return destination
}

module.exports = {
  pinoDestination,
  Producer,
  Emulator,
  LoghoseError,
  ConfigError,
  InvalidRecordError,
  BufferFullError,
  ProducerClosedError,
  SpoolLockedError,
  DeliveryError,
  engineVersion: native.engineVersion,
}
