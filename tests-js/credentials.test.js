// Credentials from Node: the standard environment variables, and a provider with an async
// getCredentials() (the shape @alicloud/log uses) asked before every attempt, so an STS token
// rotated while a batch is retried is picked up.
'use strict'

const path = require('node:path')
const { execFileSync } = require('node:child_process')
const lh = require('..')

jest.setTimeout(60000)

const OLD = { id: 'STS.old', secret: 'old-secret', token: 'old-token' }
const NEW = { id: 'STS.new', secret: 'new-secret', token: 'new-token' }
const ENV = ['ALIBABA_CLOUD_ACCESS_KEY_ID', 'ALIBABA_CLOUD_ACCESS_KEY_SECRET', 'ALIBABA_CLOUD_SECURITY_TOKEN']

const place = (emu, logstore = 'logs') => ({ endpoint: emu.endpoint, project: 'loghose', logstore, lingerMs: 10, backoffBaseMs: 50 })
const { stored } = require('./helpers.js')

describe('credentials', () => {
  let emu
  const saved = {}
  beforeEach(() => {
    emu = new lh.Emulator({ stsKeys: [OLD] })
    for (const name of ENV) {
      saved[name] = process.env[name]
      delete process.env[name]
    }
  })
  afterEach(() => {
    emu.close()
    for (const name of ENV) {
      if (saved[name] === undefined) delete process.env[name]
      else process.env[name] = saved[name]
    }
  })

  test('the environment supplies the keys when none are given', () => {
    // In a child process: jest gives each test file a copy of process.env, which the addon,
    // reading the real environment, never sees.
    const script = `
      const lh = require('.')
      const p = new lh.Producer(${JSON.stringify(place(emu))})
      p.sendAsync({ via: 'env' }).then(async (r) => { await p.close(); process.exit(r.delivered ? 0 : 1) }, () => process.exit(2))
    `
    const env = { ...process.env, ALIBABA_CLOUD_ACCESS_KEY_ID: OLD.id, ALIBABA_CLOUD_ACCESS_KEY_SECRET: OLD.secret, ALIBABA_CLOUD_SECURITY_TOKEN: OLD.token }
    execFileSync(process.execPath, ['-e', script], { cwd: path.join(__dirname, '..'), env, timeout: 30000, stdio: 'inherit' })
    expect(stored(emu)).toEqual([{ via: 'env' }])
  })

  test('an async provider signs requests, and a token rotated after a 401 is used by the retry', async () => {
    let key = OLD
    let calls = 0
    const provider = {
      async getCredentials() {
        calls += 1
        await new Promise((resolve) => setTimeout(resolve, 5))
        return { accessKeyId: key.id, accessKeySecret: key.secret, securityToken: key.token }
      },
    }
    const p = new lh.Producer({ ...place(emu), credentialsProvider: provider })
    const first = await p.sendAsync({ n: 'before' })
    expect(first.attempts).toBe(1)
    // The service expires the old token; the provider hands out the new one from now on, but
    // the producer still holds the old answer for the next attempt (refused with 401).
    emu.replaceStsKeys([NEW])
    key = NEW
    const callsBefore = calls
    const report = await p.sendAsync({ n: 'after' })
    expect(report.delivered).toBe(true)
    expect(report.attempts).toBe(2)
    expect(calls).toBeGreaterThan(callsBefore)
    await p.close()
    expect(stored(emu).map((l) => l.n).sort()).toEqual(['after', 'before'])
    expect(emu.counters().rejected.Unauthorized).toBeGreaterThanOrEqual(1)
  })

  test('a provider that rejects fails the batch with its error', async () => {
    const provider = { getCredentials: () => Promise.reject(new Error('metadata service unreachable')) }
    const p = new lh.Producer({ ...place(emu), credentialsProvider: provider, unauthorizedAttempts: 1 })
    const failure = await p.sendAsync({ n: '1' }).catch((err) => err)
    expect(failure).toBeInstanceOf(lh.DeliveryError)
    expect(failure.code).toBe('CredentialsUnavailable')
    expect(failure.message).toMatch(/metadata service unreachable/)
    await p.close()
    expect(stored(emu)).toEqual([])
  })

  test('a provider answer without keys fails the batch', async () => {
    const p = new lh.Producer({ ...place(emu), credentialsProvider: { getCredentials: async () => ({ id: 'x' }) }, unauthorizedAttempts: 0 })
    const failure = await p.sendAsync({ n: '1' }).catch((err) => err)
    expect(failure.code).toBe('CredentialsUnavailable')
    expect(failure.message).toMatch(/accessKeyId and accessKeySecret/)
    await p.close()
  })

  test('something that is no provider is refused at once', () => {
    expect(() => new lh.Producer({ ...place(emu), credentialsProvider: () => ({}) })).toThrow(/credentialsProvider must have a getCredentials\(\) method/)
  })
})
