// The Node front against the embedded emulator: delivery, conversions, promises, events,
// errors, full buffer, close with pending records, memory.
'use strict'

const crypto = require('node:crypto')

const lh = require('..')

jest.setTimeout(60000)

const { quickOptions: options, fields, waitFor } = require('./helpers.js')

describe('Producer', () => {
  let emu
  beforeEach(() => {
    emu = new lh.Emulator()
  })
  afterEach(() => emu.close())

  test('stats() has exactly the counters its type declares, before and after close', async () => {
    // The counters cross from the engine as its JSON (as in Python); the type is written by
    // hand in index.d.ts, so this keeps the two the same.
    const declared = require('node:fs').readFileSync(require('node:path').join(__dirname, '../node/lib/index.d.ts'), 'utf8')
    const body = /export interface Stats \{([\s\S]*?)\n\}/.exec(declared)[1]
    const names = [...body.matchAll(/^ {2}(\w+):/gm)].map((m) => m[1]).sort()
    expect(names.length).toBeGreaterThan(15)
    const p = new lh.Producer(options(emu))
    p.send({ id: '1' })
    await p.flush(10000)
    const open = p.stats()
    expect(Object.keys(open).sort()).toEqual(names)
    expect(open.accepted).toBe(1)
    expect(open.delivered).toBe(1)
    expect(open.failuresByCode).toEqual({})
    expect(typeof open.spoolDegraded).toBe('boolean')
    // Each destination's send limit, camelCase inside too, as its type declares.
    const limitBody = /export interface SendLimit \{([\s\S]*?)\n\}/.exec(declared)[1]
    const limitNames = [...limitBody.matchAll(/^ {2}(\w+):/gm)].map((m) => m[1]).sort()
    expect(open.sendLimits.length).toBe(1)
    expect(Object.keys(open.sendLimits[0]).sort()).toEqual(limitNames)
    // (`sending` is a snapshot: the batch gives its place back just after it is counted.)
    expect(open.sendLimits[0]).toMatchObject({ project: 'loghose', logstore: 'logs', pushedBack: 0 })
    expect(open.sendLimits[0].sending).toBeLessThanOrEqual(1)
    expect(open.sendLimits[0].limit).toBeGreaterThanOrEqual(1)
    await p.close()
    const closed = p.stats()
    expect(Object.keys(closed).sort()).toEqual(names)
    expect(closed.delivered).toBe(1)
  })

  test('every record arrives exactly once with converted values and metadata', async () => {
    const p = new lh.Producer(options(emu, { topic: 't', source: '10.0.0.1', tags: { env: 'test' } }))
    for (let i = 0; i < 1000; i++) p.send({ id: String(i), n: i, ok: i % 2 === 0, big: 10n, buf: Buffer.from('bytes') })
    p.send([['id', 'pairs'], ['dup', '1'], ['dup', '2']], { topic: 'other', time: 1700000000.5 })
    // A time alone takes the fast path, a time and a topic the JSON one: the same time either way.
    p.send({ id: 'timed', n: 1 }, { time: 1700000001.25 })
    p.send({ id: 'timed and topic', n: 1 }, { time: 1700000001.25, topic: 't' })
    expect(await p.flush(30000)).toBe(0)
    await p.close()
    const logs = emu.logs('loghose', 'logs')
    expect(logs.map((l) => fields(l).id).sort()).toEqual([...Array.from({ length: 1000 }, (_, i) => String(i)), 'pairs', 'timed', 'timed and topic'].sort())
    for (const id of ['timed', 'timed and topic']) {
      const timed = logs.find((l) => fields(l).id === id)
      expect([timed.contents, timed.time, timed.timeNs]).toEqual([[['id', id], ['n', '1']], 1700000001, 250000000])
    }
    const seven = logs.find((l) => fields(l).id === '7')
    expect(seven.contents).toEqual([['id', '7'], ['n', '7'], ['ok', 'false'], ['big', '10'], ['buf', 'bytes']])
    expect([seven.topic, seven.source]).toEqual(['t', '10.0.0.1'])
    expect(seven.tags).toContainEqual(['env', 'test'])
    const pairs = logs.find((l) => fields(l).id === 'pairs')
    expect(pairs.contents).toEqual([['id', 'pairs'], ['dup', '1'], ['dup', '2']])
    expect([pairs.topic, pairs.time, pairs.timeNs]).toEqual(['other', 1700000000, 500000000])
  })

  test('plain records read the same through the fast path and through JSON', async () => {
    // A record sent without options takes the fast path (keys and values concatenated, their
    // UTF-16 lengths in a shared array) when it can; with options it goes as JSON. Both must
    // store exactly the same fields, whatever the text holds.
    const p = new lh.Producer(options(emu))
    const bare = Object.create(null)
    bare.id = 'bare'
    bare.k = 'v'
    class Event { constructor() { this.id = 'class'; this.k = 'v' } }
    const records = [
      { id: 'ascii', a: 'x', b: '' },
      { id: 'nul-in-value', v: 'a\0b\0', w: '\0' },
      { id: 'numbers', int: 42, neg: -7, zero: -0, float: 1.5, big: 2 ** 60, t: true, f: false },
      { id: 'unicode', 中文: '日志服务', emoji: '🚀 ok', mixed: 'é\u00ffz' },
      { id: 'astral-edges', '🚀': '🚀', k: '𝄞', '𝄞𝄞': 'a🚀', e: '' },
      // Lone surrogates read as U+FFFD on both paths; the pair split between a key and its
      // value does not frame, so that record goes as JSON.
      { id: 'lone-surrogate', v: 'a\ud800b', w: '\udc00' },
      { id: 'split-pair', 'k\ud83d': '\ude80x' },
      // 300 fields: more than the fast path's lengths array holds, so it goes as JSON.
      Object.fromEntries([['id', 'many'], ...Array.from({ length: 299 }, (_, i) => [`f${i}`, `v${i}`])]),
      { id: 'empty-value', e: '' },
      bare,
      new Event(),
    ]
    for (const r of records) {
      p.send(r)
      p.send(r, { logstore: 'json' })
      // The same record as pairs, through both paths.
      const pairs = Object.entries(r).map(([k, v]) => [k, k === 'id' ? `${v}-pairs` : v])
      p.send(pairs)
      p.send(pairs, { logstore: 'json' })
    }
    p.send([['id', 'dup'], ['k', '1'], ['k', '2']])
    p.send([['id', 'dup'], ['k', '1'], ['k', '2']], { logstore: 'json' })
    expect(() => p.send({ 'bad\0key': 'v' })).toThrow(lh.InvalidRecordError)
    expect(() => p.send({ 'bad\0key': 'v' }, { logstore: 'json' })).toThrow(lh.InvalidRecordError)
    expect(() => p.send({})).toThrow(/no fields/)
    expect(() => p.send({ '': 'v' })).toThrow(lh.InvalidRecordError)
    expect(await p.flush(30000)).toBe(0)
    await p.close()
    const byId = (logs) => Object.fromEntries(logs.map((l) => [fields(l).id, l.contents]))
    const fast = byId(emu.logs('loghose', 'logs'))
    const json = byId(emu.logs('loghose', 'json'))
    const ids = records.map((r) => r.id)
    expect(Object.keys(fast).sort()).toEqual([...ids, ...ids.map((id) => `${id}-pairs`), 'dup'].sort())
    expect(fast).toEqual(json)
    expect(fast.dup).toEqual([['id', 'dup'], ['k', '1'], ['k', '2']])
    expect(fast['numbers-pairs'].slice(1)).toEqual(fast.numbers.slice(1))
    expect(fast['nul-in-value']).toEqual([['id', 'nul-in-value'], ['v', 'a\0b\0'], ['w', '\0']])
    expect(fast.unicode).toEqual([['id', 'unicode'], ['中文', '日志服务'], ['emoji', '🚀 ok'], ['mixed', 'é\u00ffz']])
    expect(fast['astral-edges']).toEqual([['id', 'astral-edges'], ['🚀', '🚀'], ['k', '𝄞'], ['𝄞𝄞', 'a🚀'], ['e', '']])
    expect(fast['lone-surrogate']).toEqual([['id', 'lone-surrogate'], ['v', 'a\ufffdb'], ['w', '\ufffd']])
    expect(fast['split-pair']).toEqual([['id', 'split-pair'], ['k\ufffd', '\ufffdx']])
    expect(fast.many.length).toBe(300)
    expect(fast.many[299]).toEqual(['f298', 'v298'])
    // -0 is a float's negative zero, written as Python writes it (tests-shared/values.json).
    expect(fast.numbers.slice(1, 4)).toEqual([['int', '42'], ['neg', '-7'], ['zero', '-0.0']])
  })

  test('records of a key list sent before cross as values and store the same fields', async () => {
    // The first record of a key list goes with its keys; the producer then registers the list
    // and later records of it carry values only. Lists sharing their first keys (a prefix of
    // another, one longer, one differing in the middle) must each be told apart.
    const p = new lh.Producer(options(emu))
    const shapes = [
      (r, n) => ({ id: `abc-${r}`, a: `a${n}`, b: n, c: n % 2 === 0 }),
      (r, n) => ({ id: `ab-${r}`, a: `a${n}`, b: n }),
      (r, n) => ({ id: `abcd-${r}`, a: `a${n}`, b: n, c: true, d: 'd' }),
      (r, n) => ({ id: `axc-${r}`, a: `a${n}`, x: 1.5, c: 'c' }),
      (r) => ({ id: `id-${r}` }),
      (r, n) => ({ 2: 'two', 1: `one${n}`, id: `integers-${r}` }),
      (r, n) => ({ 中文: '日志', 'k\ud800': `lone${n}`, '🚀': '🚀', id: `unicode-${r}` }),
      (r) => ({ id: `empty-${r}`, e: '', f: '' }),
    ]
    const expected = []
    for (let round = 0; round < 3; round++) {
      shapes.forEach((shape, n) => {
        const record = shape(round, n)
        p.send(record)
        p.send(record, { logstore: 'json' })
        // With only a time, the fast path too, registered list or not.
        p.send(shape(`${round}-timed`, n), { time: 1700000000.25 })
        p.send(shape(`${round}-timed`, n), { time: 1700000000.25, logstore: 'json' })
        expected.push(record.id, `${record.id.split('-')[0]}-${round}-timed`)
      })
    }
    // Within the same lists, a record whose values do not cross as text goes as JSON.
    p.send({ id: 'abc-nested', a: { n: 1 }, b: 1, c: true })
    p.send({ id: 'abc-nested', a: { n: 1 }, b: 1, c: true }, { logstore: 'json' })
    expected.push('abc-nested')
    expect(p._shapes.get('id').group.length).toBe(6)
    expect(await p.flush(30000)).toBe(0)
    await p.close()
    // Contents, and the time of those sent with one (the others' is when each was sent).
    const byId = (logs) => Object.fromEntries(logs.map((l) => [fields(l).id, l.contents.length === 0 ? [] : [l.contents, ...(fields(l).id.endsWith('-timed') ? [l.time, l.timeNs] : [])]]))
    const fast = byId(emu.logs('loghose', 'logs'))
    const json = byId(emu.logs('loghose', 'json'))
    expect(Object.keys(fast).sort()).toEqual(expected.sort())
    expect(fast).toEqual(json)
    expect(fast['abcd-2'][0]).toEqual([['id', 'abcd-2'], ['a', 'a2'], ['b', '2'], ['c', 'true'], ['d', 'd']])
    expect(fast['integers-2'][0]).toEqual([['1', 'one5'], ['2', 'two'], ['id', 'integers-2']])
    expect(fast['unicode-1'][0]).toEqual([['中文', '日志'], ['k\ufffd', 'lone6'], ['🚀', '🚀'], ['id', 'unicode-1']])
    expect(fast['ab-2-timed'].slice(1)).toEqual([1700000000, 250000000])
  })

  test('records of random key lists (shared first keys, prefixes, integer keys) store what JSON stores', async () => {
    // A seeded model check of the key-list registry: each record is sent on the fast path
    // (where its list may be registered, found, or parted from another) and as JSON; both
    // stores must hold the same fields in the same order. Several seeds: a list wrongly found
    // shows under some of them only.
    const alphabet = ['a', 'b', 'c', 'd', '1', '7']
    const values = [(n) => `v${n}`, (n) => n, () => true, () => '', (n) => n + 0.5, () => 'é']
    for (const seed0 of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) {
      let seed = seed0
      const random = (n) => {
        seed = (seed * 1103515245 + 12345) % 2147483648
        return Math.floor((seed / 2147483648) * n)
      }
      const shuffled = () => {
        const keys = [...alphabet, 'id']
        for (let i = keys.length - 1; i > 0; i--) {
          const j = random(i + 1)
          ;[keys[i], keys[j]] = [keys[j], keys[i]]
        }
        return keys
      }
      // Lists cut from a few orders of the keys (so one is often another's prefix), some with
      // one key replaced (lists that part and meet again); each holds the record's id.
      // Integer keys come first whatever the order, as V8 enumerates them.
      const orders = [shuffled(), shuffled(), shuffled()]
      const lists = Array.from({ length: 48 }, () => {
        const list = orders[random(orders.length)].slice(0, 1 + random(alphabet.length + 1))
        const spare = alphabet.filter((key) => !list.includes(key))
        const at = random(list.length)
        if (spare.length > 0 && list[at] !== 'id' && random(2) === 0) list[at] = spare[random(spare.length)]
        if (!list.includes('id')) list.push('id')
        return list
      })
      const p = new lh.Producer(options(emu, { logstore: `fast${seed0}` }))
      const count = 1500
      for (let n = 0; n < count; n++) {
        const record = {}
        for (const key of lists[random(lists.length)]) record[key] = key === 'id' ? `r${n}` : values[random(values.length)](n)
        p.send(record)
        p.send(record, { logstore: `json${seed0}` })
      }
      expect(await p.flush(30000)).toBe(0)
      await p.close()
      // Lists were registered and records found them (or the check below tested one path).
      expect(p._shapes.size).toBeGreaterThan(1)
      const byId = (logs) => new Map(logs.map((l) => [fields(l).id, l.contents]))
      const fast = byId(emu.logs('loghose', `fast${seed0}`))
      const json = byId(emu.logs('loghose', `json${seed0}`))
      expect(fast.size).toBe(count)
      for (const [id, contents] of json) expect([seed0, id, fast.get(id)]).toEqual([seed0, id, contents])
    }
  })

  test('past the key lists a producer keeps, records go with their keys, whole', async () => {
    const p = new lh.Producer(options(emu))
    // Lists sharing a first key.
    for (let list = 0; list < 12; list++) {
      for (let round = 0; round < 2; round++) p.send({ same: 'first', [`only${list}`]: `${list}`, id: `same-${list}-${round}` })
    }
    expect(p._shapes.get('same').group.length).toBe(12)
    const record = (list, round) => ({ [`first${list}`]: `${round}`, id: `${list}-${round}`, [`k${list % 3}`]: list })
    for (let round = 0; round < 2; round++) {
      for (let list = 0; list < 80; list++) p.send(record(list, round))
    }
    // 64 lists at most; the later ones go with their keys.
    const kept = [...p._shapes.values()].reduce((sum, first) => sum + first.group.length, 0)
    expect(kept).toBe(64)
    // Records with a key of their own each (a user id as a key): where each parts from the
    // lists is remembered for a bounded number of keys.
    for (let n = 0; n < 1000; n++) p.send({ same: 'first', [`user${n}`]: 'x', id: `user-${n}` })
    expect(p._shapes.get('same').forks.size).toBe(128)
    expect(await p.flush(30000)).toBe(0)
    await p.close()
    const logs = emu.logs('loghose', 'logs').map((l) => l.contents)
    expect(logs).toHaveLength(160 + 24 + 1000)
    expect(p._shapes.get('first51').group.length).toBe(1)
    expect(p._shapes.has('first52')).toBe(false)
    for (let list = 0; list < 80; list++) {
      for (let round = 0; round < 2; round++) {
        expect(logs).toContainEqual([[`first${list}`, `${round}`], ['id', `${list}-${round}`], [`k${list % 3}`, `${list}`]])
      }
    }
    for (let list = 0; list < 12; list++) {
      expect(logs).toContainEqual([['same', 'first'], [`only${list}`, `${list}`], ['id', `same-${list}-1`]])
    }
  })

  test('the key-list registry refuses what it cannot hold and a send naming no list', () => {
    const p = new lh.Producer(options(emu))
    const sendFields = p._native.fieldsSender()
    expect(sendFields.register('not a list')).toBeNull()
    expect(sendFields.register([])).toBeNull()
    expect(sendFields.register(Array.from({ length: 257 }, (_, i) => `k${i}`))).toBeNull()
    expect(sendFields.register(['level', 'msg'])).toBe(0)
    sendFields.lengths[0] = 4
    sendFields.lengths[1] = 2
    expect(() => sendFields('infohi', 2, undefined, 1)).toThrow(/no key list 1/)
    expect(() => sendFields('infohi', 3, undefined, 0)).toThrow(/2 keys/)
    expect(sendFields('infohi', 2, undefined, 0)).toBe(true)
    // A keyed sender has no registry.
    expect(p._native.fieldsSender(['a']).register).toBeUndefined()
    return p.close()
  })

  test('a getter that sends through the same producer leaves both records whole', async () => {
    // The inner record's field lengths have the same sums as the outer's so far: written over
    // the outer's, they would split its text into the wrong fields without anyone noticing.
    const p = new lh.Producer(options(emu))
    const withGetter = (id, innerId) => ({
      id,
      a: 'xy',
      get b() {
        p.send({ id: innerId, cc: 'y' })
        return 'zz'
      },
    })
    const outer = withGetter('outer', 'inner')
    p.send(outer)
    p.send([['id', 'outer-pairs'], ['a', 'xy'], ['b', outer.b]])
    // Its keys now registered, a record like it crosses as values: the same again.
    p.send(withGetter('again', 'inner-again'))
    expect(await p.flush(30000)).toBe(0)
    await p.close()
    const byId = Object.fromEntries(emu.logs('loghose', 'logs').map((l) => [fields(l).id, l.contents]))
    expect(byId.outer).toEqual([['id', 'outer'], ['a', 'xy'], ['b', 'zz']])
    expect(byId.inner).toEqual([['id', 'inner'], ['cc', 'y']])
    expect(byId.again).toEqual([['id', 'again'], ['a', 'xy'], ['b', 'zz']])
    expect(byId['inner-again']).toEqual([['id', 'inner-again'], ['cc', 'y']])
    expect(emu.logs('loghose', 'logs')).toHaveLength(6)
  })

  test('records around and above the text buffer size arrive whole', async () => {
    // The fast path copies record text into a reused 16 KiB buffer, growing it when a record
    // is larger; lengths at the edge must neither be cut nor loop.
    const p = new lh.Producer(options(emu))
    // Each record's text (`idNv…`, keys and values concatenated) is exactly N bytes.
    const valueLength = (n) => n - 'id'.length - String(n).length - 'v'.length
    const sizes = [16376, 16379, 16380, 16382, 16383, 16384, 16385, 16386, 70000, 300000, 10]
    for (const n of sizes) p.send({ id: String(n), v: 'x'.repeat(valueLength(n)) })
    expect(await p.flush(30000)).toBe(0)
    await p.close()
    const got = Object.fromEntries(emu.logs('loghose', 'logs').map((l) => [fields(l).id, fields(l).v.length]))
    for (const n of sizes) expect(got[String(n)]).toBe(valueLength(n))
    // The same edges with a three-byte character last, where a cut text is 1–3 bytes short.
    const q = new lh.Producer(options(emu, { logstore: 'wide' }))
    const wide = (n) => 'x'.repeat(valueLength(n) - 3) + '日'
    for (const n of sizes) q.send({ id: String(n), v: wide(n) })
    expect(await q.flush(30000)).toBe(0)
    await q.close()
    const gotWide = Object.fromEntries(emu.logs('loghose', 'wide').map((l) => [fields(l).id, fields(l).v]))
    for (const n of sizes) expect(gotWide[String(n)]).toBe(wide(n))
  })

  test('V8 copies whole characters only, at most capacity - 1 bytes (what the fast path relies on)', () => {
    // The fast path takes a copy as whole when it left more than four bytes of its buffer unused;
    // that holds only if a cut copy leaves at most three. A Node that wrote part of a character,
    // or filled the buffer, would break it: this pins the behaviour.
    const { utf8WriteProbe } = require('../node/lib/native.js')
    const decoder = new TextDecoder('utf-8', { fatal: true })
    for (const ch of ['é', '日', '🚀']) {
      const text = 'x'.repeat(20) + ch + 'y'
      const full = Buffer.from(text)
      for (let capacity = 16; capacity <= full.length + 6; capacity++) {
        const out = Buffer.from(utf8WriteProbe(text, capacity))
        expect(out.length).toBeLessThanOrEqual(capacity - 1)
        expect(out.equals(full.subarray(0, out.length))).toBe(true)
        expect(() => decoder.decode(out)).not.toThrow()
        if (out.length < full.length) expect(capacity - 1 - out.length).toBeLessThanOrEqual(3)
        if (out.length + 4 < capacity) expect(out.length).toBe(full.length)
      }
    }
  })

  test('sendAsync resolves with reports and rejects with DeliveryError', async () => {
    const p = new lh.Producer(options(emu))
    const reports = await Promise.all(Array.from({ length: 20 }, (_, i) => p.sendAsync({ i: String(i) })))
    expect(reports.every((r) => r.delivered && r.attempts === 1 && r.requestId.length === 24)).toBe(true)
    await p.close()
    const strict = new lh.Emulator({ autoCreate: false })
    const q = new lh.Producer(options(strict))
    await expect(q.sendAsync({ i: 'x' })).rejects.toMatchObject({ name: 'DeliveryError', code: 'ProjectNotExist', httpStatus: 404, attempts: 1 })
    await q.close()
    strict.close()
  })

  test('sendAsync of every kind of record (a new key list, a known one, a time, JSON, a split pair) is told its own outcome', async () => {
    const p = new lh.Producer(options(emu, { batchMaxCount: 4 }))
    const sends = [
      [{ id: 'new-list', v: 'x' }],
      [{ id: 'known-list', v: 'y' }],
      [{ id: 'timed', v: 1.5 }, { time: 1700000000.5 }],
      [{ id: 'json', v: { nested: true } }],
      // A surrogate pair split between a value and the next key: the JSON path, as `send`.
      [{ id: 'split\uD83D', '\uDE00k': 'z' }],
      [{ id: 'topic', v: 't' }, { topic: 'own' }],
    ]
    const tracked = []
    for (const [n, [record, opts]] of sends.entries()) {
      tracked.push(p.sendAsync(record, opts))
      p.send({ id: `untracked-${n}` })
    }
    const reports = await Promise.all(tracked)
    expect(reports.map((r) => r.delivered && r.records >= 1)).toEqual(sends.map(() => true))
    await p.close()
    const logs = emu.logs('loghose', 'logs')
    const byId = Object.fromEntries(logs.map((l) => [fields(l).id, l]))
    expect(Object.keys(byId)).toHaveLength(12)
    expect(byId['known-list'].contents).toEqual([['id', 'known-list'], ['v', 'y']])
    expect([byId.timed.time, byId.timed.timeNs, fields(byId.timed).v]).toEqual([1700000000, 500000000, '1.5'])
    expect(fields(byId.json).v).toBe('{"nested":true}')
    expect(byId['split\uFFFD'].contents).toEqual([['id', 'split\uFFFD'], ['\uFFFDk', 'z']])
    // A failure reaches the promise of a record sent on the fast path too.
    const strict = new lh.Emulator({ autoCreate: false })
    const q = new lh.Producer(options(strict))
    q.send({ i: 'first' })
    await expect(q.sendAsync({ i: 'known' })).rejects.toMatchObject({ name: 'DeliveryError', code: 'ProjectNotExist' })
    await q.close()
    strict.close()
  })

  test('delivery events arrive in batches and a throwing listener is contained', async () => {
    const p = new lh.Producer(options(emu, { lingerMs: 0 }))
    const seen = []
    const errors = []
    let calls = 0
    p.on('delivery', (reports) => {
      calls += 1
      if (calls === 1) throw new Error('listener bug')
      seen.push(...reports)
    })
    p.on('error', (err) => errors.push(err))
    p.send({ first: '1' })
    await p.flush(30000)
    await waitFor(() => calls >= 1)
    for (let i = 0; i < 10; i++) p.send({ i: String(i) })
    await p.flush(30000)
    await waitFor(() => seen.reduce((n, r) => n + r.records, 0) >= 10)
    expect(errors.map((e) => e.message)).toEqual(['listener bug'])
    expect(seen.reduce((n, r) => n + r.records, 0)).toBe(10)
    await p.close()
  })

  test('bad input throws typed errors and loses nothing else', async () => {
    const p = new lh.Producer(options(emu))
    p.send({ id: 'before' })
    expect(() => p.send({ k: () => 1 })).toThrow(TypeError)
    expect(() => p.send({ k: Symbol('s') })).toThrow(/"k" is a symbol/)
    expect(() => p.send(42)).toThrow(TypeError)
    expect(() => p.send([['only-key']])).toThrow(TypeError)
    expect(() => p.send({ __time__: 'x' })).toThrow(lh.InvalidRecordError)
    expect(() => p.send({ k: Buffer.from([0xff, 0xfe]) })).toThrow(/UTF-8/)
    expect(() => p.send({ k: 'v'.repeat(1024 * 1024 + 1) })).toThrow(/limit/)
    expect(() => p.send({ k: 'v' }, { shardKey: 'not-hex' })).toThrow(/shard_key/)
    // The addon's raw per-record function refuses misuse without queuing anything.
    expect(() => p._sendFields(42, 1)).toThrow(/must be a string/)
    expect(() => p._sendFields('kv', 257)).toThrow(/up to 256/)
    expect(() => p._sendFields('kv')).toThrow(/two arguments/)
    p._lengths.set([1, 5])
    expect(p._sendFields('kv', 1)).toBe(false)
    p.send({ id: 'after' })
    expect(await p.flush(30000)).toBe(0)
    await p.close()
    expect(emu.logs('loghose', 'logs').map((l) => fields(l).id).sort()).toEqual(['after', 'before'])
    expect(() => new lh.Producer({ ...emu.producerOptions(), batchMaxCount: 0 })).toThrow(lh.ConfigError)
    expect(() => lh.Producer.fromPreset('desktop', emu.producerOptions())).toThrow(/desktop/)
  })

  test('every error the addon raises is an instance of its class with its code, in workers too', async () => {
    const caught = (f) => {
      try {
        f()
      } catch (err) {
        return err
      }
      throw new Error('did not throw')
    }
    const check = (err, Cls, pattern) => {
      expect(err).toBeInstanceOf(Cls)
      expect(err.message).toMatch(pattern)
      // Nothing is encoded in the message any more.
      expect(err.message).not.toMatch(/^\w+\|/)
      if (Cls !== TypeError) expect([err.code, err.name]).toEqual([Cls.name, Cls.name])
    }
    const config = caught(() => new lh.Producer({ ...emu.producerOptions(), lingrMs: 5 }))
    check(config, lh.ConfigError, /`lingrMs`: unknown option; did you mean `lingerMs`\?/)
    check(caught(() => lh.Producer.presetOptions('desktop')), lh.ConfigError, /desktop/)
    check(caught(() => emu.inject('sometimes')), lh.ConfigError, /sometimes/)
    check(caught(() => emu.replaceStsKeys('not a list')), lh.ConfigError, /.+/)
    check(caught(() => emu.createLogstore('proj', 'huge', 1000)), lh.ConfigError, /1000/)
    check(caught(() => new lh.Emulator({ shards: 0 })), lh.ConfigError, /shards/)
    const p = new lh.Producer(options(emu))
    check(caught(() => p.send({ ['k'.repeat(129)]: 'v' })), lh.InvalidRecordError, /longer than 128 bytes/)
    check(caught(() => p.send({ k: 'v' }, { time: -1e20 })), lh.InvalidRecordError, /.+/)
    check(caught(() => p.sendMany([{ ok: 'v' }, { '': 1.5 }])), lh.InvalidRecordError, /^record 1: key "" is empty/)
    check(caught(() => p.sendJsonLine('[1, 2]')), TypeError, /JSON object/)
    check(caught(() => p._sendFields(42, 1)), TypeError, /must be a string/)
    p.sendJsonLine('{"level":30,"time":1700000000123,"msg":"from a line"}')
    expect(await p.flush(30000)).toBe(0)
    await p.close()
    check(caught(() => p.send({ a: '1' })), lh.ProducerClosedError, /closed/)
    check(caught(() => p.sendJsonLine('{}')), lh.ProducerClosedError, /closed/)
    // A promise-returning call rejects rather than throwing.
    await expect(p.flush(10)).rejects.toBeInstanceOf(lh.ProducerClosedError)
    const line = emu.logs('loghose', 'logs').find((l) => fields(l).msg === 'from a line')
    expect([line.time, fields(line).level]).toEqual([1700000000, 'info'])
    // A worker thread loads the package anew: its errors are its own classes' instances.
    const { Worker } = require('node:worker_threads')
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads')
       const lh = require(${JSON.stringify(require('node:path').join(__dirname, '..'))})
       try { new lh.Producer({ endpoint: 'http://127.0.0.1:9', project: 'proj', logstore: 'logs', accessKeyId: 'i', accessKeySecret: 's', batchMaxCount: 0 }) }
       catch (err) { parentPort.postMessage([err instanceof lh.ConfigError, err.code, err.message]) }`,
      { eval: true },
    )
    const [isConfigError, code, message] = await new Promise((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
    })
    await worker.terminate()
    expect([isConfigError, code]).toEqual([true, 'ConfigError'])
    expect(message).toMatch(/`batchMaxCount` is 0/)
  })

  test('a batch stored and then refused is retried and counted as a duplicate', async () => {
    emu.inject('store_then_reset', { count: 1 })
    const p = new lh.Producer(options(emu, { lingerMs: 0 }))
    await p.sendAsync({ id: 'once' })
    await p.close()
    const c = emu.counters()
    expect([c.acceptedRequests, c.duplicateGroups]).toEqual([2, 1])
    const logs = emu.logs('loghose', 'logs')
    expect(logs.map((l) => fields(l).id)).toEqual(['once', 'once'])
    expect(new Set(logs.map((l) => Object.fromEntries(l.tags).__pack_id__)).size).toBe(1)
  })

  test('records that fail with nobody told are warned about once, with the cause', () => {
    const { spawnSync } = require('node:child_process')
    const script = (listen) => `
      const lh = require(${JSON.stringify(require('node:path').join(__dirname, '..'))})
      // One batch, sent by the close at exit (a short linger can seal the first record alone
      // on a slow machine; its warning then comes at once and the other nine's at exit).
      const p = new lh.Producer({ endpoint: 'http://127.0.0.1:9', project: 'proj', logstore: 'logs', accessKeyId: 'id',
                                  accessKeySecret: 'secret', maxAttempts: 1, lingerMs: 60000 })
      ${listen ? "p.on('delivery', () => {})" : ''}
      for (let i = 0; i < 10; i++) p.send({ i: String(i) })
      // a script that just ends, as the ones that lost logs silently did
    `
    const quiet = spawnSync(process.execPath, ['-e', script(false)], { encoding: 'utf8', timeout: 30000 })
    expect(quiet.status).toBe(0)
    const warnings = quiet.stderr.split('\n').filter((l) => l.includes('[LOGHOSE_UNDELIVERED]'))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/10 record\(s\) for proj\/logs failed for good/)
    expect(warnings[0]).toMatch(/127\.0\.0\.1:9/)
    expect(warnings[0]).toMatch(/refused/i)
    const told = spawnSync(process.execPath, ['-e', script(true)], { encoding: 'utf8', timeout: 30000 })
    expect(told.status).toBe(0)
    expect(told.stderr).not.toMatch(/LOGHOSE_UNDELIVERED/)
  })

  test('flush tells "gave up" from "all delivered"; so does close', async () => {
    const p = new lh.Producer({ endpoint: 'http://127.0.0.1:9', project: 'proj', logstore: 'logs', accessKeyId: 'id',
                                accessKeySecret: 'secret', maxAttempts: 1, lingerMs: 10 })
    p.on('delivery', () => {})
    for (let i = 0; i < 10; i++) p.send({ i: String(i) })
    expect(await p.flush(20000)).toBe(10)
    // Only what failed since the previous flush.
    expect(await p.flush(20000)).toBe(0)
    expect((await p.close()).undelivered).toBe(10)
    expect(p.closed).toBe(true)
  })

  test('a full buffer throws BufferFullError; a closed producer refuses records', async () => {
    emu.inject('hang', { ms: 3000, count: 100 })
    const p = new lh.Producer(options(emu, { batchMaxBytes: 1024, bufferMaxBytes: 4096, lingerMs: 0, requestTimeoutMs: 5000 }))
    // A compressed batch gives back what its body does not use of its reservation: values that
    // do not compress keep the buffer full until a batch settles, which the hang delays.
    const value = crypto.randomBytes(450).toString('hex')
    let err
    try {
      for (let i = 0; i < 100; i++) p.send({ v: value })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(lh.BufferFullError)
    expect(err.message).toMatch(/4096/)
    expect(p.stats().dropped).toBe(1)
    const result = await p.close({ timeoutMs: 100 })
    expect(result.undelivered).toBeGreaterThan(0)
    expect(result.failed.every((r) => r.code === 'ProducerClosed')).toBe(true)
    expect(() => p.send({ a: '1' })).toThrow(lh.ProducerClosedError)
    // A record of a registered key list (values alone) is refused the same way.
    expect(() => p.send({ v: 'x' })).toThrow(lh.ProducerClosedError)
    // The JSON path (a fraction) and the tracked path refuse the same way.
    expect(() => p.send({ a: 1.5 })).toThrow(lh.ProducerClosedError)
    await expect(p.sendAsync({ a: '1' })).rejects.toBeInstanceOf(lh.ProducerClosedError)
    emu.clearFaults()
  })

  test('close waits for records in flight', async () => {
    emu.inject('latency', { ms: 300, count: 1 })
    const p = new lh.Producer(options(emu, { lingerMs: 0 }))
    p.send({ a: '1' })
    const result = await p.close({ timeoutMs: 10000 })
    expect(result.undelivered).toBe(0)
    expect(emu.totals('loghose', 'logs').logs).toBe(1)
  })

  test('a million sends keep memory stable', async () => {
    const small = new lh.Emulator({ retentionBytes: 8 << 20 })
    const p = new lh.Producer(options(small, { maxBlockMs: 60000, lingerMs: 200 }))
    const record = { msg: 'a fairly ordinary log line with some text', level: 'INFO' }
    const burst = async (n) => {
      for (let i = 0; i < n; i += 10000) {
        for (let j = 0; j < 10000; j++) p.send(record)
        await new Promise((r) => setImmediate(r))
      }
    }
    await burst(100000)
    await p.flush(60000)
    global.gc?.()
    const warm = process.memoryUsage().rss
    await burst(900000)
    expect(await p.flush(120000)).toBe(0)
    global.gc?.()
    const after = process.memoryUsage().rss
    expect(p.stats().delivered).toBe(1000000)
    await p.close()
    expect(small.counters().logs).toBe(1000000)
    small.close()
    expect((after - warm) / 1048576).toBeLessThan(60)
  })
})

test('console.log and util.inspect show where a producer sends and whether it is open', async () => {
  const util = require('node:util')
  const { Emulator, Producer } = require('..')
  const emu = new Emulator()
  const p = new Producer(emu.producerOptions('demo', 'inspect'))
  expect(util.inspect(p)).toBe(`Producer { demo/inspect at ${emu.endpoint}, open, pending: 0 }`)
  expect(util.inspect({ nested: { deeper: p } }, { depth: 0 })).toBe('{ nested: [Object] }')
  expect(util.inspect([p], { depth: -1 })).toBe('[Array]')
  await p.close()
  expect(util.inspect(p)).toBe(`Producer { demo/inspect at ${emu.endpoint}, closed }`)
  emu.close()
})
