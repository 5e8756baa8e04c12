'use strict'
// Writing JSON lines (pino's) into a producer, for the `loghose/pino` transport and
// `pinoDestination`: a line that cannot be sent is counted (`invalid` or `dropped` in the
// producer's stats, and `failures` here) and reported once per error class as a process
// warning; the writer goes on.

/** A writer of pino lines into `producer`, counting and reporting what it refuses. */
function lineWriter(producer, counter = { failures: 0 }) {
  const reported = new Set()
  return function write(line) {
    try {
      producer.sendJsonLine(line)
    } catch (err) {
      counter.failures += 1
      const kind = (err && (err.code || err.name)) || 'Error'
      if (!reported.has(kind)) {
        reported.add(kind)
        process.emitWarning(`loghose: a pino line could not be sent: ${err.message} (counted in the producer's stats; reported once per error class)`, { code: 'LOGHOSE_PINO_LINE' })
      }
    }
  }
}

module.exports = { lineWriter }
