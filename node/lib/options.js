'use strict'
// A producer's options as the facade takes them (camelCase, presets, a credentials provider)
// and hands them to the engine (its snake_case configuration as JSON), which validates them.

const native = require('./binding.js')
const { typeName } = require('./values.js')

/** An engine option's name in camelCase. */
function camel(name) {
  return name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())
}

/** The options a preset sets, camelCase; the engine holds the values. */
function presetOptions(preset) {
  const snake = JSON.parse(native.presetOptionsJson(String(preset)))
  const options = {}
  for (const [key, value] of Object.entries(snake)) options[camel(key)] = value
  return options
}

/** The function the addon calls (from an I/O thread, through the event loop) to ask the
 * provider for fresh credentials; the answer goes back with setCredentials/credentialsFailed. */
function credentialsAsker(provider, nativeProducer) {
  if (provider === null || typeof provider !== 'object' || typeof provider.getCredentials !== 'function') {
    throw new TypeError(`option credentialsProvider must have a getCredentials() method, not be ${typeName(provider)}`)
  }
  return () => {
    Promise.resolve()
      .then(() => provider.getCredentials())
      .then(
        (c) => {
          if (!c || typeof c.accessKeyId !== 'string' || typeof c.accessKeySecret !== 'string') {
            throw new TypeError('getCredentials() resolved without accessKeyId and accessKeySecret strings')
          }
          nativeProducer().setCredentials(c.accessKeyId, c.accessKeySecret, c.securityToken ?? null)
        },
      )
      .catch((err) => nativeProducer().credentialsFailed(`${(err && err.name) || 'Error'}: ${(err && err.message) || err}`))
  }
}

const FACADE_OPTIONS = new Set(['exitTimeoutMs', 'statsIntervalMs', 'default', 'credentialsProvider'])

/** camelCase options → the engine's snake_case configuration, as JSON. */
function configJson(options) {
  const config = {}
  for (const [key, value] of Object.entries(options)) {
    if (FACADE_OPTIONS.has(key) || value === undefined) continue
    const snake = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
    if (snake === 'tags' && value && !Array.isArray(value)) {
      config.tags = Object.entries(value).map(([k, v]) => [String(k), String(v)])
    } else {
      config[snake] = value
    }
  }
  return JSON.stringify(config)
}

module.exports = { presetOptions, credentialsAsker, configJson, camel }
