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

describe('values, sendMany and option errors', () => {
  let emu
  beforeEach(() => {
    emu = new lh.Emulator()
  })
  afterEach(() => emu.close())

  test.each(values.map((row) => [row.name, row]))('%s is stored as the shared table says', async (_, row) => {
    // eslint-disable-next-line no-new-func
    const value = new Function(`return (${row.js})`)()
    const p = new lh.Producer(options(emu))
    p.send({ id: 'object', v: value })
    p.send([['id', 'pairs'], ['v', value]])
    p.send({ id: 'options', v: value }, { topic: 't' })
    p.sendMany([{ id: 'many', v: value }])
    expect(await p.flush(30000)).toBe(0)
    await p.close()
    const got = Object.fromEntries(stored(emu).map((log) => [log.id, log.v]))
    expect(got).toEqual({ object: row.stored, pairs: row.stored, options: row.stored, many: row.stored })
  })

  const bads = [
    ['type', { k: { nested: true } }, TypeError],
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
    expect(thrown.message).toContain(option.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`))
  })

  test('a config type error names the option', () => {
    expect(() => new lh.Producer({ ...emu.producerOptions(), lingerMs: '10' })).toThrow(/linger_ms/)
  })

  test.each([0, 101, 4294967295])('the emulator refuses %d shards as the service would', (shards) => {
    expect(() => emu.createLogstore('proj', 'huge', shards)).toThrow(lh.ConfigError)
    expect(emu.totals('proj', 'huge')).toBeNull()
    expect(() => new lh.Emulator({ shardCount: shards })).toThrow(/shard_count/)
  })
})
