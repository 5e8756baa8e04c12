// The API's edges from Node: what is stored for each kind of value (the table shared with the
// Python tests), all-or-nothing sendMany, per-send options of the wrong type, and
// configuration errors that name the option and never show a secret.
'use strict'

const path = require('node:path')
const lh = require('..')
const { values } = require(path.join(__dirname, '..', 'tests-shared', 'values.json'))

jest.setTimeout(60000)

const options = (emu, extra = {}) => ({ ...emu.producerOptions(), lingerMs: 20, ...extra })
const stored = (emu, logstore = 'logs') => emu.logs('loghose', logstore).map((l) => Object.fromEntries(l.contents))

/** `value` sent every way a record can go (object, pairs, with options, sendMany); what was
 * stored for each, by way. */
async function storedEachWay(emu, value) {
    const p = new lh.Producer(options(emu))
    p.send({ id: 'object', v: value })
    p.send([['id', 'pairs'], ['v', value]])
    p.send({ id: 'options', v: value }, { topic: 't' })
    p.sendMany([{ id: 'many', v: value }])
    p.sender(['id', 'v'])('sender', value)
    expect(await p.flush(30000)).toBe(0)
    await p.close()
    const got = Object.fromEntries(stored(emu).map((log) => [log.id, log.v]))
  return got
}

describe('values, sendMany and option errors', () => {
  let emu
  beforeEach(() => {
    emu = new lh.Emulator()
  })
  afterEach(() => emu.close())

  test.each(values.map((row) => [row.name, row]))('%s is stored as the shared table says', async (_, row) => {
    // eslint-disable-next-line no-new-func
    const value = new Function(`return (${row.js})`)()
    expect(await storedEachWay(emu, value)).toEqual({ object: row.stored, pairs: row.stored, options: row.stored, many: row.stored, sender: row.stored })
  })

  test('a sender stores what send stores, refuses what send refuses, and checks its keys once', async () => {
    const p = new lh.Producer(options(emu))
    const log = p.sender(['id', 'level', 'msg', 'n'])
    const values = [
      ['ascii', 'info', 'signed in', 1],
      ['unicode', '警告', '日志服务 🚀 é\u00ff', -7.5],
      ['empty', '', '', 0],
      // Lone halves of a pair in two values: joined they read as one pair, which does not
      // frame; the record goes through send, each half a U+FFFD.
      ['halves', '\uD83D', '\uDE80', true],
      ['converted', new Date(0), { nested: [1] }, null],
    ]
    for (const [id, level, msg, n] of values) {
      log(id, level, msg, n)
      p.send({ id: `${id}-send`, level, msg, n })
    }
    expect(() => log('one', 'two')).toThrow(new TypeError('this sender takes 4 values (id, level, msg, n), not 2'))
    expect(() => log('f', 'x', () => 'a function', 1)).toThrow(TypeError)
    expect(() => p.sender(['ok', '__time__'])).toThrow(lh.InvalidRecordError)
    expect(() => p.sender([])).toThrow(TypeError)
    expect(() => p.sender(['ok', 7])).toThrow(new TypeError('key 1 of the sender is a number, not a string'))
    expect(() => p.sender(Array.from({ length: 257 }, (_, i) => `k${i}`))).toThrow(TypeError)
    expect(await p.flush(30000)).toBe(0)
    const logs = emu.logs('loghose', 'logs').map((l) => l.contents)
    expect(logs).toHaveLength(2 * values.length)
    for (const [id] of values) {
      const bySender = logs.find((c) => c[0][1] === id)
      const bySend = logs.find((c) => c[0][1] === `${id}-send`)
      expect(bySender.slice(1)).toEqual(bySend.slice(1))
    }
    expect(logs.find((c) => c[0][1] === 'halves')[2]).toEqual(['msg', '\uFFFD'])
    await p.close()
    expect(() => log('late', 'info', 'after close', 1)).toThrow(lh.ProducerClosedError)
  })

  const bads = [
    ['type', { k: () => 'a function' }, TypeError],
    ['reserved key', { __time__: 'reserved' }, lh.InvalidRecordError],
    ['not a record', 42, TypeError],
  ]
  for (const badAt of [0, 2, 4]) {
    test.each(bads)(`sendMany with a bad record (%s) at ${badAt} queues nothing`, async (_, bad, Cls) => {
      const records = Array.from({ length: 5 }, (_, i) => ({ id: String(i) }))
      records[badAt] = bad
      const p = new lh.Producer(options(emu))
      let thrown
      try {
        p.sendMany(records)
      } catch (err) {
        thrown = err
      }
      expect(thrown).toBeInstanceOf(Cls)
      expect(thrown.message).toMatch(new RegExp(`^record ${badAt}: `))
      expect(await p.flush(30000)).toBe(0)
      expect(p.stats().accepted).toBe(0)
      expect(p.sendMany(records.filter((_, i) => i !== badAt))).toBe(4)
      await p.close()
      expect(stored(emu).map((l) => l.id).sort()).toEqual(['0', '1', '2', '3', '4'].filter((id) => id !== String(badAt)))
    })
  }

  test('sendMany is refused whole when the buffer has no room', async () => {
    const p = new lh.Producer(options(emu, { bufferMaxBytes: 2048, batchMaxBytes: 1024, lingerMs: 60000 }))
    const records = Array.from({ length: 20 }, (_, i) => ({ id: String(i), v: 'x'.repeat(200) }))
    expect(() => p.sendMany(records)).toThrow(lh.BufferFullError)
    expect(p.stats().accepted).toBe(0)
    expect(p.stats().dropped).toBe(20)
    expect(p.sendMany(records.slice(0, 3))).toBe(3)
    await p.close()
    expect(stored(emu)).toHaveLength(3)
  })

  test('a per-send option of the wrong type names the option and the type given', async () => {
    const p = new lh.Producer(options(emu))
    expect(() => p.send({ a: '1' }, { topic: 5 })).toThrow(/^option topic must be a string, not number$/)
    expect(() => p.send({ a: '1' }, { shardKey: ['x'] })).toThrow(/option shardKey must be a string, not array/)
    expect(() => p.send({ a: '1' }, { time: '10' })).toThrow(/option time must be a number/)
    expect(() => p.send({ a: '1' }, 'topic')).toThrow(/send options must be an object, not string/)
    await p.close()
    expect(p.stats().accepted).toBe(0)
  })

  test.each(['accessKeyId', 'accessKeySecret', 'securityToken', 'apiKey'])('a config error never shows %s', (option) => {
    let thrown
    try {
      // eslint-disable-next-line no-new
      new lh.Producer({ ...emu.producerOptions(), [option]: 987654321 })
    } catch (err) {
      thrown = err
    }
    expect(thrown).toBeInstanceOf(lh.ConfigError)
    expect(thrown.message).not.toContain('987654321')
    expect(thrown.message).toContain(`\`${option}\``)
  })

  test('a config error names the option as JavaScript spells it, its type and unit', () => {
    expect(() => new lh.Producer({ ...emu.producerOptions(), lingerMs: '10' })).toThrow(
      /^`lingerMs`: invalid type: string "10", expected a whole number \(milliseconds\)$/,
    )
    expect(() => new lh.Producer({ ...emu.producerOptions(), lingrMs: 10 })).toThrow(/^`lingrMs`: unknown option; did you mean `lingerMs`\?$/)
  })

  test.each([0, 101, 4294967295])('the emulator refuses %d shards as the service would', (shards) => {
    expect(() => emu.createLogstore('proj', 'huge', shards)).toThrow(lh.ConfigError)
    expect(emu.totals('proj', 'huge')).toBeNull()
    expect(() => new lh.Emulator({ shardCount: shards })).toThrow(/shard_?[cC]ount/)
  })
})

describe('values as applications have them', () => {
  let emu
  beforeEach(() => {
    emu = new lh.Emulator()
  })
  afterEach(() => emu.close())

  const when = new Date(Date.UTC(2026, 11, 1, 3, 4, 5, 678))
  const err = new RangeError('out of range')
  const cases = [
    ['nested object', { a: { b: 1 }, c: [1, 'x', null] }, '{"a":{"b":1},"c":[1,"x",null]}'],
    ['array', [1, 2.5, true, 'é'], '[1,2.5,true,"é"]'],
    ['null', null, 'null'],
    ['Date', when, '2026-12-01T03:04:05.678Z'],
    ['bigint', 12345678901234567890n, '12345678901234567890'],
    ['Map', new Map([['k', 1]]), '{"k":1}'],
    ['Set', new Set([7]), '[7]'],
    ['inside JSON', { when, big: 10n, err, m: new Map([['a', new Set([1])]]) }, JSON.stringify({ when: when.toISOString(), big: '10', err: err.stack, m: { a: [1] } })],
    ['Error', err, err.stack],
  ]
  test.each(cases)('%s is stored as text', async (_, value, text) => {
    expect(await storedEachWay(emu, value)).toEqual({ object: text, pairs: text, options: text, many: text, sender: text })
  })

  test('the Error text starts with its name and message', () => {
    expect(err.stack.startsWith('RangeError: out of range\n')).toBe(true)
  })

  test('undefined fields are left out, as JSON leaves them', async () => {
    const p = new lh.Producer(options(emu))
    p.send({ a: '1', gone: undefined })
    p.send([['a', '2'], ['gone', undefined]])
    await p.close()
    expect(stored(emu)).toEqual([{ a: '1' }, { a: '2' }])
  })

  test('default converts what has no text form, at the top and inside JSON', async () => {
    const p = new lh.Producer(options(emu, { default: (v) => `<${typeof v}>` }))
    p.send({ id: 'top', v: () => 1 })
    p.send({ id: 'inside', v: { f: () => 1, s: Symbol('x') } })
    await p.close()
    expect(Object.fromEntries(stored(emu).map((l) => [l.id, l.v]))).toEqual({ top: '<function>', inside: '{"f":"<function>","s":"<symbol>"}' })
  })

  test('without default, a function is a TypeError naming the field; a circular object too', async () => {
    const p = new lh.Producer(options(emu))
    expect(() => p.send({ ok: '1', handler: () => 1 })).toThrow(/^value of field "handler" is a function, which has no text form; pass the producer a default function/)
    const loop = { name: 'loop' }
    loop.self = loop
    expect(() => p.send({ loop })).toThrow(/^value of field "loop" cannot be written as JSON: Converting circular structure/)
    expect(() => p.sendMany([{ ok: '1' }, { f: () => 1 }])).toThrow(/^record 1: value of field "f"/)
    await p.close()
    expect(p.stats().accepted).toBe(0)
  })

  test('a default that throws, or never reaches text, is a TypeError naming the field', async () => {
    const p = new lh.Producer(options(emu, { default: () => { throw new Error('no way') } }))
    expect(() => p.send({ f: () => 1 })).toThrow(/^value of field "f": default threw Error: no way$/)
    await p.close()
    const q = new lh.Producer(options(emu, { default: () => Symbol('again') }))
    expect(() => q.send({ f: () => 1 })).toThrow(/default keeps returning values without a text form/)
    await q.close()
    expect(() => new lh.Producer(options(emu, { default: 'nope' }))).toThrow(/^option default must be a function, not string$/)
  })
})
