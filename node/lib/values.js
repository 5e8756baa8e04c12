'use strict'
// Records as the facade hands them to the addon: a plain record framed for the fast path (keys
// and values in one string, their lengths in a shared array), any other as JSON; values
// converted as every front converts them (numbers, dates, errors, buffers, nested objects,
// the `default` option). Pure functions on the caller's thread; nothing here is kept.

const { InvalidRecordError } = require('./errors.js')

const DECODER = new TextDecoder('utf-8', { fatal: true })

const TWO_TO_64 = 2 ** 64

/** Whether JSON carries a number as every front writes it: a safe integer (its digits), or a
 * float the engine formats as Python's repr. Not: the four JSON cannot carry, and integers
 * past 2^53, whose JSON text is rounded. */
function plainNumber(value) {
  if (Number.isSafeInteger(value)) return !Object.is(value, -0)
  return Number.isFinite(value) && !(Number.isInteger(value) && Math.abs(value) < TWO_TO_64)
}

/** A number as every front writes it: integers below 2^64 as their exact digits, floats as
 * Python's repr (the engine formats finite ones). */
function numberValue(value) {
  if (plainNumber(value)) return value
  if (Number.isNaN(value)) return 'nan'
  if (value === Infinity) return 'inf'
  if (value === -Infinity) return '-inf'
  if (Object.is(value, -0)) return '-0.0'
  return BigInt(value).toString()
}

/** Text of a value that is not a string, number, boolean or bigint, as every front writes it:
 * Buffers as their (UTF-8) text, null as `null`, a Date as ISO 8601, an Error as its stack
 * (name, message and frames), objects and arrays as compact JSON (Dates, bigints, Errors, Maps
 * and Sets inside converted the same way; functions and symbols inside dropped, as JSON does),
 * and anything else (a function, a symbol) through the producer's `default` option, or a
 * TypeError naming the field and the type given. */
function convertValue(key, value, fallback, depth = 0) {
  switch (typeof value) {
    case 'number':
      return numberValue(value)
    case 'string':
    case 'boolean':
      return value
    case 'bigint':
      return String(value)
    case 'undefined':
      return undefined
    case 'function':
    case 'symbol':
      return viaDefault(key, value, fallback, depth)
    default:
      break
  }
  if (value === null) return 'null'
  if (value instanceof Uint8Array) {
    try {
      return DECODER.decode(value)
    } catch {
      throw new InvalidRecordError(`value of field "${key}" is not valid UTF-8`, { code: 'InvalidRecordError' })
    }
  }
  if (value instanceof Date) return dateText(value)
  if (value instanceof Error) return errorText(value)
  try {
    return JSON.stringify(value, (k, v) => inJson(v, fallback))
  } catch (err) {
    throw new TypeError(`value of field "${key}" cannot be written as JSON: ${err.message}`)
  }
}

function dateText(date) {
  return Number.isNaN(date.getTime()) ? 'Invalid Date' : date.toISOString()
}

function errorText(err) {
  return typeof err.stack === 'string' && err.stack ? err.stack : `${err.name}: ${err.message}`
}

function inJson(value, fallback) {
  switch (typeof value) {
    case 'bigint':
      return String(value)
    case 'function':
    case 'symbol':
      return fallback ? fallback(value) : undefined
    case 'object':
      if (value instanceof Error) return errorText(value)
      if (value instanceof Map) return Object.fromEntries(value)
      if (value instanceof Set) return [...value]
      return value
    default:
      return value
  }
}

function viaDefault(key, value, fallback, depth) {
  if (!fallback) {
    throw new TypeError(`value of field "${key}" is a ${typeName(value)}, which has no text form; pass the producer a default function to convert it`)
  }
  if (depth > 4) throw new TypeError(`value of field "${key}": default keeps returning values without a text form`)
  let converted
  try {
    converted = fallback(value)
  } catch (err) {
    throw new TypeError(`value of field "${key}": default threw ${err && err.name}: ${err && err.message}`)
  }
  return convertValue(key, converted, fallback, depth + 1)
}

function typeName(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'object' && value.constructor && value.constructor.name) return value.constructor.name
  return typeof value
}

function plain(value) {
  const t = typeof value
  return t === 'string' || (t === 'number' && plainNumber(value)) || t === 'boolean'
}

/** The record as JSON for the addon, which encodes it in order and checks every field. Lone
 * surrogates become U+FFFD, as on the fast path (V8 writes them so as UTF-8; as JSON escapes
 * they would not decode). */
function recordJson(contents, fallback) {
  const json = rawRecordJson(contents, fallback)
  // Only a lone surrogate (or a literal backslash before "ud") puts this in the JSON.
  return json.includes('\\ud') ? rawRecordJson(wellFormed(contents), fallback) : json
}

// String.prototype.toWellFormed is Node 20's; on Node 18 (Debian 12's and Raspberry Pi OS's
// own), a regular expression does the same.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
const toWellFormed = String.prototype.toWellFormed ? (s) => s.toWellFormed() : (s) => s.replace(LONE_SURROGATE, '\uFFFD')

function wellFormed(contents) {
  const fix = (v) => (typeof v === 'string' ? toWellFormed(v) : v)
  const fields = Array.isArray(contents) ? contents : Object.entries(contents)
  const fixed = fields.map((pair) => (Array.isArray(pair) && pair.length === 2 ? [fix(pair[0]), fix(pair[1])] : pair))
  return Array.isArray(contents) ? fixed : Object.fromEntries(fixed)
}

/** The common case (plain strings, numbers, booleans) is one JSON.stringify; Buffers and
 * bigints are converted first. */
function rawRecordJson(contents, fallback) {
  if (Array.isArray(contents)) {
    let simple = true
    for (const pair of contents) {
      if (!Array.isArray(pair) || pair.length !== 2) throw new TypeError('each field must be a [key, value] pair')
      if (typeof pair[0] !== 'string') throw new TypeError(`field key ${String(pair[0])} must be a string`)
      if (!plain(pair[1])) simple = false
    }
    if (simple) return JSON.stringify(contents)
    const converted = []
    for (const [k, v] of contents) {
      const text = convertValue(k, v, fallback)
      if (text !== undefined) converted.push([k, text])
    }
    return JSON.stringify(converted)
  }
  if (contents === null || typeof contents !== 'object') {
    throw new TypeError(`contents must be an object or an array of [key, value] pairs, not ${contents === null ? 'null' : typeof contents}`)
  }
  for (const key in contents) {
    if (!plain(contents[key])) {
      const copy = {}
      for (const k of Object.keys(contents)) copy[k] = convertValue(k, contents[k], fallback)
      return JSON.stringify(copy)
    }
  }
  return JSON.stringify(contents)
}

/** A field value as the fast path sends it: strings as they are, booleans, safe integers and
 * floats of ordinary size as text (read the same on both paths); null for anything else. */
function fieldText(value) {
  // `typeof v === '…'` tests compile to type checks; a `switch` on typeof calls a builtin
  // for the type's name on every value.
  if (typeof value === 'string') return value
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) return Object.is(value, -0) ? null : String(value)
    // Between 1e-4 and 1e16 JavaScript and Python both write a float's shortest digits in
    // plain decimal notation, so String() is already the shared text; other numbers go as
    // JSON, where the engine writes them as every front does.
    const size = Math.abs(value)
    return size >= 1e-4 && size < 1e16 ? String(value) : null
  }
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  return null
}

/** What framing a record found besides its text, written by `framedFields` and
 * `shapedValues` into the caller's own `Frame` (a producer keeps one, read right after each
 * call): `count` fields; `shape`, the registered key list the values follow; `learn`, whether
 * the record's keys may be worth registering. */
function newFrame() {
  return { count: 0, shape: 0, learn: false }
}

/** A plain object or an array of [string, value] pairs in the fast path's framing: keys and
 * values concatenated, each one's length (UTF-16 units) in `lengths` (no separators: each
 * extra piece of a concatenation costs when V8 flattens it). Null for anything else, or for
 * more fields than `lengths` holds (these go as JSON). The number of fields is left in
 * `frame.count`. */
function framedFields(contents, lengths, frame) {
  let text = ''
  let n = 0
  const limit = lengths.length
  if (Array.isArray(contents)) {
    for (const pair of contents) {
      if (!Array.isArray(pair) || pair.length !== 2) return null
      const key = pair[0]
      const value = fieldText(pair[1])
      if (typeof key !== 'string' || value === null || n === limit) return null
      text = text + key + value
      lengths[n] = key.length
      lengths[n + 1] = value.length
      n += 2
    }
  } else {
    const proto = Object.getPrototypeOf(contents)
    if (proto !== Object.prototype && proto !== null) return null
    for (const key in contents) {
      const value = fieldText(contents[key])
      if (value === null || n === limit) return null
      text = text + key + value
      lengths[n] = key.length
      lengths[n + 1] = value.length
      n += 2
    }
  }
  frame.count = n >> 1
  return n === 0 ? null : text
}

/** The values of a plain object whose keys, in order, are a key list the producer registered,
 * concatenated, each one's length in `lengths`; `frame.count` and `frame.shape` (the list's
 * id) say which. `shapes` maps a first key to the first list registered with it; each list
 * (`newShape`) knows the others of its first key and where records part from it. Null when
 * the keys are no registered list (`frame.learn` then says so: the record's keys may be
 * registered once the fast path has sent it with them) or a value is not plain. */
function shapedValues(contents, shapes, lengths, frame) {
  frame.learn = false
  if (Array.isArray(contents)) return null
  const proto = Object.getPrototypeOf(contents)
  if (proto !== Object.prototype && proto !== null) return null
  let shape = null
  let keys = null
  let text = ''
  let i = 0
  for (const key in contents) {
    if (i === 0) {
      shape = shapes.get(key)
      if (shape === undefined) {
        frame.learn = true
        return null
      }
      keys = shape.keys
    } else if (keys[i] !== key) {
      // Registered keys are V8's internalized strings: equal ones are the same string, so
      // this compares addresses.
      shape = fork(shape, i, key, frame)
      if (shape === null) return null
      keys = shape.keys
    }
    const value = fieldText(contents[key])
    if (value === null) return null
    text += value
    lengths[i] = value.length
    i++
  }
  if (keys === null) return null
  if (i !== keys.length) {
    shape = fork(shape, i, ENDS, frame)
    if (shape === null) return null
  }
  frame.count = i
  frame.shape = shape.id
  return text
}

/** A key list (registered as `id`) for `shapedValues`, joining `group`, the lists of its first
 * key (a new group when none). */
function newShape(keys, id, group) {
  const shape = { keys, id, group: group ?? [], forks: new Map() }
  // A list that a record found missing may be this one now.
  for (const other of shape.group) other.forks.clear()
  shape.group.push(shape)
  return shape
}

/** Partings a list remembers (records with keys of their own, a user id as a key, say, would
 * otherwise add one each). */
const FORKS_KEPT = 128

/** Where a record parts from a list: it ends after `i` keys. */
const ENDS = Symbol('ends')

/** The list of `shape`'s group whose first `i` keys are `shape`'s and whose next is `key` (or
 * which ends there: `ENDS`); null (`frame.learn` set) when there is none. Remembered per
 * list and key, so records of a group's other lists find theirs in one lookup. */
function fork(shape, i, key, frame) {
  const known = shape.forks.get(key)
  let found
  if (known !== undefined && known.at === i) {
    found = known.shape
  } else {
    found = null
    const keys = shape.keys
    for (const other of shape.group) {
      const k = other.keys
      if (k === keys || (key === ENDS ? k.length !== i : k[i] !== key)) continue
      let j = 1
      while (j < i && k[j] === keys[j]) j++
      if (j === i) {
        found = other
        break
      }
    }
    if (known === undefined && shape.forks.size < FORKS_KEPT) shape.forks.set(key, { at: i, shape: found })
  }
  if (found === null) frame.learn = true
  return found
}

const STRING_OPTIONS = ['topic', 'source', 'shardKey', 'project', 'logstore']

/** Per-send options of the wrong type are a TypeError naming the option and the type given. */
function checkSendOptions(opts) {
  if (opts === null || typeof opts !== 'object') throw new TypeError(`send options must be an object, not ${typeName(opts)}`)
  for (const name of STRING_OPTIONS) {
    const value = opts[name]
    if (value !== undefined && value !== null && typeof value !== 'string') {
      throw new TypeError(`option ${name} must be a string, not ${typeName(value)}`)
    }
  }
  const time = opts.time
  if (time !== undefined && time !== null && typeof time !== 'number') {
    throw new TypeError(`option time must be a number of unix seconds, not ${typeName(time)}`)
  }
}

/** The time of send options that set nothing else (checked): the fast path takes it; null
 *  when any other option is set or no time is given. */
function timeOnly(opts) {
  if (typeof opts.time !== 'number') return null
  for (const name of STRING_OPTIONS) {
    if (opts[name] !== undefined && opts[name] !== null) return null
  }
  return opts.time
}

module.exports = { recordJson, newFrame, framedFields, shapedValues, newShape, fieldText, checkSendOptions, timeOnly, typeName }
