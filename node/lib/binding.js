'use strict'
// The napi-rs addon (./native.js), loaded once for every module of the facade, its errors
// raised as instances of the facade's classes with their `code` set (node/src/errors.rs).

const { LoghoseError, ConfigError, InvalidRecordError, BufferFullError, ProducerClosedError, SpoolLockedError } = require('./errors.js')

/** The addon, from this platform's package (or a source build beside this file); when neither
 * is there, an error naming the package this platform needs. */
function loadNative() {
  try {
    return require('./native.js')
  } catch (err) {
    const abi = process.platform === 'linux' ? (/** @type {any} */ (process.report?.getReport())?.header?.glibcVersionRuntime ? '-gnu' : '-musl') : process.platform === 'win32' ? '-msvc' : ''
    const arm = process.arch === 'arm' ? (process.platform === 'linux' ? '-gnueabihf' : '') : ''
    const wanted = `loghose-${process.platform}-${process.arch}${arm || abi}`
    const error = new Error(
      `loghose: no native addon for ${process.platform}-${process.arch}: the package ${wanted} is not installed ` +
        '(npm skips optional dependencies with --omit=optional or --no-optional, and a lockfile made on another ' +
        `platform may lack it: install ${wanted}@${require('../../package.json').version} beside loghose), or this ` +
        'platform has no prebuilt addon (build one from a clone with `npm ci && npm run build`).',
    )
    error.cause = err
    throw error
  }
}

const native = loadNative()
native.useErrorClasses({ LoghoseError, ConfigError, InvalidRecordError, BufferFullError, ProducerClosedError, SpoolLockedError, TypeError })

module.exports = native
