// pino and winston into the emulator: the pino transport (pino's worker thread) and the
// main-thread destination, the winston transport; fields, levels, nested values, time, and
// delivery when the stream ends, the logger closes or the process exits.
'use strict'

const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { once } = require('node:events')
const pino = require('pino')
const winston = require('winston')
const lh = require('..')
const LoghoseTransport = require('../node/lib/winston.js')

jest.setTimeout(60000)

const { ROOT } = require('./helpers.js')
// In the order logged (the logs' times; pino's are whole milliseconds, so the pino tests keep
// their records in one batch): records of one producer may arrive in different batches.
const stored = (emu, logstore) =>
  emu
    .logs('loghose', logstore)
    .map((l) => ({ ...Object.fromEntries(l.contents), __time__: l.time, __time_ns__: l.timeNs ?? 0 }))
    .sort((a, b) => a.__time__ - b.__time__ || a.__time_ns__ - b.__time_ns__)

describe('pino and winston', () => {
  let emu
  beforeEach(() => {
    emu = new lh.Emulator()
  })
  afterEach(() => emu.close())

  test('the pino transport sends from its worker: levels, bindings, nested values, time', async () => {
    const transport = pino.transport({ target: 'loghose/pino', options: { ...emu.producerOptions('loghose', 'pino-transport'), lingerMs: 60000 } })
    const logger = pino({ base: { service: 'shop' } }, transport)
    const before = Date.now()
    logger.info({ order: { id: 17, items: ['tea', 'cake'] }, paid: true, amount: 12.5 }, 'order %s paid', 'A-17')
    logger.child({ requestId: 'r-1' }).warn('slow')
    logger.error(new Error('it broke'))
    logger.debug('below the level')
    transport.end()
    await once(transport, 'close')
    const logs = stored(emu, 'pino-transport')
    expect(logs.map((l) => l.level)).toEqual(['info', 'warn', 'error'])
    const [paid, slow, broke] = logs
    expect(paid).toMatchObject({ msg: 'order A-17 paid', service: 'shop', order: '{"id":17,"items":["tea","cake"]}', paid: 'true', amount: '12.5' })
    expect(paid.pid).toBeUndefined() // base replaces pino's pid and hostname
    expect(paid.time).toBeUndefined()
    const ms = paid.__time__ * 1000 + paid.__time_ns__ / 1e6
    expect(ms).toBeGreaterThanOrEqual(before - 1)
    expect(ms).toBeLessThan(before + 5000)
    expect(slow).toMatchObject({ msg: 'slow', requestId: 'r-1' })
    expect(JSON.parse(broke.err)).toMatchObject({ type: 'Error', message: 'it broke' })
    expect(broke.msg).toBe('it broke')
  })

  test('the pino destination sends from the main thread and delivers on flush', async () => {
    const destination = lh.pinoDestination({ ...emu.producerOptions('loghose', 'pino-destination'), lingerMs: 60000 })
    const logger = pino({ level: 'trace', timestamp: pino.stdTimeFunctions.isoTime }, destination)
    expect(pino(destination).constructor).toBe(logger.constructor) // a lone argument is taken as the destination
    for (let i = 0; i < 100; i += 1) logger.trace({ i }, 'n')
    logger.fatal({ custom: null }, 'last')
    expect(await destination.flush()).toBe(0)
    const logs = stored(emu, 'pino-destination')
    expect(logs).toHaveLength(101)
    expect(logs[0]).toMatchObject({ level: 'trace', i: '0', msg: 'n' })
    // An ISO time from a custom time function stays a field.
    expect(logs[0].time).toMatch(/^\d{4}-\d\d-\d\dT/)
    expect(logs[100]).toMatchObject({ level: 'fatal', custom: 'null', msg: 'last' })
    await destination.end()
    expect(destination.producer.closed).toBe(true)
  })

  test('a line that is not JSON is counted, and the rest goes on', async () => {
    const destination = lh.pinoDestination({ ...emu.producerOptions('loghose', 'pino-bad'), lingerMs: 20 })
    destination.write('not json\n{"level":30,"time":1,"msg":"fine"}\n')
    destination.write('{"level":30,"msg":"also fine","__source__":"reserved"}\n')
    await destination.end()
    expect(stored(emu, 'pino-bad').map((l) => l.msg)).toEqual(['fine'])
    expect(destination.producer.stats().invalid).toBe(2)
    expect(destination.failures).toBe(2)
  })

  test('a script logging through the pino transport loses nothing when it ends', () => {
    const script = `
      const pino = require('pino')
      const logger = pino(pino.transport({ target: ${JSON.stringify(path.join(ROOT, 'node', 'lib', 'pino.js'))}, options: ${JSON.stringify({ ...emu.producerOptions('loghose', 'pino-exit'), lingerMs: 60000 })} }))
      for (let i = 0; i < 500; i += 1) logger.info({ i }, 'line')
    `
    execFileSync(process.execPath, ['-e', script], { cwd: ROOT, timeout: 30000, stdio: 'inherit' })
    expect(emu.totals('loghose', 'pino-exit').logs).toBe(500)
  })

  test('the winston transport maps levels and metadata and delivers on close', async () => {
    const transport = new LoghoseTransport({ ...emu.producerOptions('loghose', 'winston'), lingerMs: 60000 })
    const logger = winston.createLogger({
      level: 'info',
      format: winston.format.combine(winston.format.errors({ stack: true }), winston.format.timestamp(), winston.format.json()),
      defaultMeta: { service: 'shop' },
      transports: [transport],
    })
    logger.info('order paid', { order: { id: 17 }, amount: 12.5 })
    logger.warn('slow', { ms: 1200 })
    logger.error(new Error('it broke'))
    logger.debug('below the level')
    const closed = once(transport, 'closed')
    logger.close()
    await closed
    expect(transport.producer.closed).toBe(true)
    const logs = stored(emu, 'winston')
    expect(logs.map((l) => l.level)).toEqual(['info', 'warn', 'error'])
    expect(logs[0]).toMatchObject({ message: 'order paid', service: 'shop', order: '{"id":17}', amount: '12.5' })
    expect(logs[0].timestamp).toMatch(/^\d{4}-\d\d-\d\dT/)
    expect(logs[2].message).toBe('it broke')
    expect(logs[2].stack).toMatch(/^Error: it broke\n/)
    expect(transport.failures).toBe(0)
  })

  test('a winston record that cannot be sent is counted and emitted as warn, never thrown', async () => {
    const transport = new LoghoseTransport({ ...emu.producerOptions('loghose', 'winston-bad'), lingerMs: 20 })
    const warned = []
    transport.on('warn', (err) => warned.push(err))
    const logger = winston.createLogger({ transports: [transport] })
    logger.info('bad', { __source__: 'reserved' })
    logger.info('fine')
    const closed = once(transport, 'closed')
    logger.close()
    await closed
    expect(transport.failures).toBe(1)
    expect(warned[0]).toBeInstanceOf(lh.InvalidRecordError)
    expect(stored(emu, 'winston-bad').map((l) => l.message)).toEqual(['fine'])
  })
})
