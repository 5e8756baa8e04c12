'use strict'
// The facade's Emulator: the engine's embedded emulator (an offline Log Service on 127.0.0.1),
// its answers typed by the addon (node/src/views.rs); stored logs cross as the engine's JSON.

const native = require('./binding.js')

/** `object`'s own keys in snake_case, as the engine's emulator configuration and faults take them. */
function snakeKeys(object) {
  const out = {}
  for (const [k, v] of Object.entries(object)) out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v
  return out
}

/** A stored log from the engine's JSON, as the facade shows it: `timeNs`, and no `null` for
 * what a log did not carry (its time's nanoseconds, topic, source). */
function storedLog({ shard, time, time_ns: timeNs, topic, source, tags, contents }) {
  const log = { shard, time, tags, contents }
  if (timeNs !== null && timeNs !== undefined) log.timeNs = timeNs
  if (topic !== null && topic !== undefined) log.topic = topic
  if (source !== null && source !== undefined) log.source = source
  return log
}

class Emulator {
  constructor(config = {}) {
    this._native = new native.NativeEmulator(JSON.stringify(snakeKeys(config)))
    // A server: while open it keeps the process alive, as a listening http.Server does (it
    // serves from threads of its own, which the event loop does not see).
    this._alive = setInterval(() => {}, 2 ** 30)
  }

  get endpoint() {
    return this._native.endpoint
  }

  get accessKeyId() {
    return this._native.accessKeyId
  }

  get accessKeySecret() {
    return this._native.accessKeySecret
  }

  producerOptions(project = 'loghose', logstore = 'logs') {
    return { endpoint: this.endpoint, project, logstore, accessKeyId: this.accessKeyId, accessKeySecret: this.accessKeySecret }
  }

  /** Stored logs: shard, time, timeNs, topic, source, tags and contents (arrays of pairs). */
  logs(project, logstore) {
    return JSON.parse(this._native.logsJson(project, logstore)).map(storedLog)
  }

  totals(project, logstore) {
    return this._native.totals(project, logstore)
  }

  counters() {
    return this._native.counters()
  }

  inject(kind, fault = {}) {
    this._native.injectJson(JSON.stringify({ kind, ...snakeKeys(fault) }))
  }

  clearFaults() {
    this._native.clearFaults()
  }

  /** Replaces the temporary (STS) keys (`[{ id, secret, token }]`): requests signed with a key
   * no longer listed are refused with 401, as the service refuses an expired token. */
  replaceStsKeys(keys) {
    this._native.replaceStsKeysJson(JSON.stringify(keys))
  }

  reset() {
    this._native.reset()
  }

  /** Creates a logstore of 1 to 100 shards (ConfigError outside that, as the service refuses). */
  createLogstore(project, logstore, shards) {
    this._native.createLogstore(project, logstore, shards)
  }

  /** Stops serving; the process may then end. */
  close() {
    clearInterval(this._alive)
    this._native.close()
  }

  [Symbol.dispose]() {
    this.close()
  }
}

module.exports = { Emulator }
