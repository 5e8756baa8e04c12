'use strict'
// The official Node SDK (@alicloud/log) managing and querying the emulator as it would the
// service: a project, a logstore and its index made through the SDK, records written by loghose
// found again with the SDK's getLogs and getHistograms, and the service's refusals.
//
// The SDK connects to `{project}.{endpoint}`, a name nothing resolves here: an HTTP agent whose
// lookup answers 127.0.0.1 for every name takes it to the emulator, Host header unchanged.

const http = require('node:http')
const SLS = require('@alicloud/log')
const lh = require('..')
const { quickOptions } = require('./helpers')

/** An agent that connects every host name to 127.0.0.1. */
const agent = new http.Agent({
  lookup: (_host, options, callback) =>
    options && options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4),
})
const via = { agent }

/** The SDK's error code for a call that must fail. */
async function refusal(call) {
  try {
    await call()
  } catch (e) {
    return e.code
  }
  throw new Error('the call succeeded')
}

describe('the official Node SDK against the emulator', () => {
  let emu
  let client
  beforeAll(() => {
    emu = new lh.Emulator()
    client = new SLS({
      accessKeyId: emu.accessKeyId,
      accessKeySecret: emu.accessKeySecret,
      endpoint: emu.endpoint.replace('http://', ''),
    })
  })
  afterAll(() => emu.close())

  test('a project, a logstore and its index are made, read and deleted', async () => {
    await client.createProject('node-sdk', { description: 'made by @alicloud/log' }, via)
    expect((await client.getProject('node-sdk', via)).description).toBe('made by @alicloud/log')
    expect(await refusal(() => client.createProject('node-sdk', { description: 'twice' }, via))).toBe('ProjectAlreadyExist')
    await client.createLogStore('node-sdk', 'events', { ttl: 3, shardCount: 2 }, via)
    const got = await client.getLogStore('node-sdk', 'events', via)
    expect([got.ttl, got.shardCount]).toEqual([3, 2])
    await client.updateLogStore('node-sdk', 'events', { ttl: 9, shardCount: 2 }, via)
    expect((await client.getLogStore('node-sdk', 'events', via)).ttl).toBe(9)
    expect((await client.listLogStore('node-sdk', {}, via)).logstores).toEqual(['events'])
    expect(await refusal(() => client.getIndexConfig('node-sdk', 'events', via))).toBe('IndexConfigNotExist')
    await client.createIndex('node-sdk', 'events', { line: { token: [' ', ','] }, keys: { n: { type: 'long' } } }, via)
    expect((await client.getIndexConfig('node-sdk', 'events', via)).keys.n.type).toBe('long')
    await client.deleteIndex('node-sdk', 'events', via)
    await client.deleteLogStore('node-sdk', 'events', via)
    expect(await refusal(() => client.getLogStore('node-sdk', 'events', via))).toBe('LogStoreNotExist')
    await client.deleteProject('node-sdk', via)
    expect(await refusal(() => client.getProject('node-sdk', via))).toBe('ProjectNotExist')
  })

  test('records written by loghose are found by getLogs and counted by getHistograms', async () => {
    await client.createLogStore('loghose', 'node-queried', { ttl: 30, shardCount: 2 }, via)
    await client.createIndex('loghose', 'node-queried', {
      line: { token: [' ', ',', ':'] },
      keys: { level: { type: 'text', token: [' '] }, status: { type: 'long' } },
    }, via)
    const producer = new lh.Producer(quickOptions(emu, { logstore: 'node-queried' }))
    const now = Math.floor(Date.now() / 1000)
    const rows = [['error', '503', 'payment declined'], ['info', '200', 'order paid'], ['error', '500', 'database timeout']]
    rows.forEach(([level, status, message], i) => producer.send({ level, status, message, n: String(i) }, { time: now - 5 + i }))
    await producer.close({ timeoutMs: 10000 })
    const from = new Date((now - 60) * 1000)
    const to = new Date((now + 60) * 1000)
    const found = async (query, more = {}) =>
      (await client.getLogs('loghose', 'node-queried', from, to, { query, ...more }, via)).map((log) => log.n)
    expect(await found('')).toEqual(['0', '1', '2'])
    expect(await found('level: error and status > 501')).toEqual(['0'])
    expect(await found('timeout or "order paid"', { reverse: true })).toEqual(['2', '1'])
    const first = (await client.getLogs('loghose', 'node-queried', from, to, { query: 'declined' }, via))[0]
    expect([first.__time__, first.message, first.level]).toEqual([now - 5, 'payment declined', 'error'])
    expect(await refusal(() => found('* | select count(*)'))).toBe('ParameterInvalid')
    const buckets = await client.getHistograms('loghose', 'node-queried', new Date((now - 5) * 1000), new Date((now - 2) * 1000), { query: 'level: error' }, via)
    expect(buckets.map((b) => [b.from, b.count])).toEqual([[now - 5, 1], [now - 4, 0], [now - 3, 1]])
  })
})
