'use strict'
// loghose/winston: a winston transport.
//
//   const LoghoseTransport = require('loghose/winston')
//   const logger = winston.createLogger({ transports: [new LoghoseTransport({ endpoint, project, logstore, ... })] })
//
// The options are the Producer's, plus winston's own (`level`, `format`, `silent`,
// `handleExceptions`, `handleRejections`), or `producer` for an existing Producer. Each info
// object becomes one log: `level` (the level's name, uncoloured), `message`, then every other
// key (metadata, `timestamp` from a format, an `error`'s stack...) converted as the Producer
// converts values. `log` never throws into the application: a record that cannot be sent is
// counted in `failures` and emitted as the transport's `warn` event. `close()` (winston calls
// it on `logger.close()`) delivers what is pending (`closeTimeoutMs`, default 10 000) when the
// transport built the producer, then emits `closed`.

const Transport = require('winston-transport')
const { Producer } = require('./index.js')

const LEVEL = Symbol.for('level')
const WINSTON_OPTIONS = ['level', 'format', 'silent', 'handleExceptions', 'handleRejections', 'producer', 'closeTimeoutMs']

class LoghoseTransport extends Transport {
  constructor(options = {}) {
    super(options)
    // What is not winston's is the producer's (checked by the engine, naming what is wrong).
    const producerOptions = /** @type {import('./index').ProducerOptions} */ ({})
    for (const [key, value] of Object.entries(options)) {
      if (!WINSTON_OPTIONS.includes(key)) producerOptions[key] = value
    }
    this.ownsProducer = !options.producer
    this.producer = options.producer ?? new Producer({ default: String, ...producerOptions })
    this.closeTimeoutMs = options.closeTimeoutMs ?? 10000
    /** Records that could not be sent. */
    this.failures = 0
  }

  log(info, callback) {
    const fields = { level: info[LEVEL] ?? info.level, message: info.message }
    for (const key of Object.keys(info)) {
      if (key !== 'level' && key !== 'message') fields[key] = info[key]
    }
    try {
      this.producer.send(fields)
    } catch (err) {
      this.failures += 1
      this.emit('warn', err)
    }
    this.emit('logged', info)
    if (callback) callback()
  }

  close() {
    if (!this.ownsProducer || this.producer.closed) {
      setImmediate(() => this.emit('closed'))
      return
    }
    this.producer.close({ timeoutMs: this.closeTimeoutMs }).then(
      () => this.emit('closed'),
      (err) => this.emit('warn', err),
    )
  }
}

module.exports = LoghoseTransport
module.exports.LoghoseTransport = LoghoseTransport
