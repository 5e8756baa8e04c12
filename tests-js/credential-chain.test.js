// The default credential chain from Node: a producer given no keys finds them the way the
// vendor's SDKs do (an OIDC role through the emulator's STS, the ECS metadata service), and with
// no source at all its constructor throws a ConfigError naming each one. Each case runs in a
// child process: the addon reads the real environment, which jest's copy of process.env is not.
'use strict'

const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const lh = require('..')

jest.setTimeout(60000)

const CHAIN = /^(ALIBABA_CLOUD_|LOGHOSE_STS_ENDPOINT|LOGHOSE_ECS_METADATA_ENDPOINT)/

/** Runs `script` in a child with the chain variables `vars` only, HOME `home`. */
function child(script, home, vars) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !CHAIN.test(k)))
  const out = spawnSync(process.execPath, ['-e', script], {
    cwd: path.join(__dirname, '..'), env: { ...env, HOME: home, ...vars }, timeout: 45000, encoding: 'utf8'
  })
  return { status: out.status, stderr: out.stderr, stdout: out.stdout }
}

const sendOne = (emu, via) => `
  const lh = require('.')
  let p
  try { p = new lh.Producer({ endpoint: ${JSON.stringify(emu.endpoint)}, project: 'loghose', logstore: 'chain', lingerMs: 10 }) }
  catch (e) { console.error(e.name + ': ' + e.message); process.exit(3) }
  p.sendAsync({ via: ${JSON.stringify(via)} }).then(async (r) => { await p.close(); process.exit(r.delivered ? 0 : 1) }, (e) => { console.error(e); process.exit(2) })
`

const closedPort = () => new Promise((resolve) => {
  const server = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address()
    server.close(() => resolve(port))
  })
})

describe('default credential chain', () => {
  let emu, home
  beforeEach(() => {
    emu = new lh.Emulator({ credentialsLifetimeSecs: 900 })
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-chain-'))
  })
  afterEach(() => {
    emu.close()
    fs.rmSync(home, { recursive: true, force: true })
  })

  test('an OIDC role from the environment is assumed through STS and signs the sends', () => {
    const token = path.join(home, 'token')
    fs.writeFileSync(token, 'eyJhbGciOiJSUzI1NiJ9.payload.signature')
    const out = child(sendOne(emu, 'oidc'), home, {
      ALIBABA_CLOUD_ROLE_ARN: 'acs:ram::1234:role/logger',
      ALIBABA_CLOUD_OIDC_PROVIDER_ARN: 'acs:ram::1234:oidc-provider/ack-rrsa',
      ALIBABA_CLOUD_OIDC_TOKEN_FILE: token,
      LOGHOSE_STS_ENDPOINT: emu.endpoint
    })
    expect(out).toMatchObject({ status: 0 })
    expect(emu.logs('loghose', 'chain').map((l) => l.contents)).toEqual([[['via', 'oidc']]])
    expect(emu.counters().credentialsIssued).toBe(1)
  })

  test('the ECS metadata service gives the instance role its keys', () => {
    const out = child(sendOne(emu, 'ecs'), home, { LOGHOSE_ECS_METADATA_ENDPOINT: emu.endpoint })
    expect(out).toMatchObject({ status: 0 })
    expect(emu.counters()).toMatchObject({ credentialsIssued: 1, logs: 1 })
  })

  test('no source at all is a ConfigError from the constructor naming each source', async () => {
    const out = child(sendOne(emu, 'none'), home, { LOGHOSE_ECS_METADATA_ENDPOINT: `http://127.0.0.1:${await closedPort()}` })
    expect(out.status).toBe(3)
    expect(out.stderr).toMatch(/^ConfigError: no credentials/)
    for (const needle of ['ALIBABA_CLOUD_ACCESS_KEY_ID', 'OIDC role', '.aliyun/config.json does not exist',
      'credentials.ini does not exist', 'ECS instance role: the ECS metadata service', 'ALIBABA_CLOUD_CREDENTIALS_URI is not set']) {
      expect(out.stderr).toContain(needle)
    }
    expect(emu.counters().requests).toBe(0)
  })
})
