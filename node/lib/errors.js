'use strict'
// loghose's error classes, the same hierarchy as the Python package's. The addon raises its
// errors as instances of these (index.js hands them over at load), each with `code` set to its
// class's name; `DeliveryError` is what a `sendAsync` promise rejects with.

class LoghoseError extends Error {
  constructor(message, props) {
    super(message)
    this.name = new.target.name
    if (props) Object.assign(this, props)
  }
}
/** An option that cannot work, named in the message (with "did you mean" for a misspelt one). */
class ConfigError extends LoghoseError {}
/** A record the service would refuse (a bad key, a value too long), named in the message. */
class InvalidRecordError extends LoghoseError {}
/** The buffer is full (`bufferMaxBytes`), and `maxBlockMs` passed without room. */
class BufferFullError extends LoghoseError {}
/** The producer was closed. */
class ProducerClosedError extends LoghoseError {}
/** Every slot of `spoolDir` is held by another producer (the message names one's pid). */
class SpoolLockedError extends LoghoseError {}
/** A record's batch failed for good: `code`, `requestId`, `httpStatus`, `attempts`, `report`. */
class DeliveryError extends LoghoseError {}

module.exports = { LoghoseError, ConfigError, InvalidRecordError, BufferFullError, ProducerClosedError, SpoolLockedError, DeliveryError }
