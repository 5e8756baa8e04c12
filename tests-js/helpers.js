'use strict'
// What several test files need: paths, waiting, and reading records back from the emulator.

const path = require('node:path')

/** The package root (what `require('loghose')` resolves to from a child process). */
const ROOT = path.join(__dirname, '..')
/** The package's `loghose` command. */
const CLI = path.join(ROOT, 'node', 'lib', 'cli.js')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Resolves once `condition()` holds; rejects after `ms`. */
async function waitFor(condition, ms = 10000) {
  const deadline = Date.now() + ms
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition')
    await sleep(10)
  }
}

/** A stored log's fields as an object. */
const fields = (log) => Object.fromEntries(log.contents)

/** The fields of every log stored in `logstore` of the emulator's default project. */
const stored = (emu, logstore = 'logs') => emu.logs('loghose', logstore).map(fields)

/** The emulator's producer options with short lingers and backoffs, and `extra`. */
const quickOptions = (emu, extra = {}) => ({ ...emu.producerOptions(), lingerMs: 20, backoffBaseMs: 10, backoffMaxMs: 100, ...extra })

module.exports = { ROOT, CLI, sleep, waitFor, fields, stored, quickOptions }
