// A function's freeze survived from Node: a child process plays a serverless handler (it sends,
// returns, and the platform freezes the instance: SIGSTOP), stays stopped longer than the
// request timeout (1 s) and than the clock skew the emulator allows (2 s), and is thawed
// (SIGCONT) for its next invocation. Nothing may be lost, no request refused for its date
// (requests are signed as they are sent), none sent twice, none retried in a burst after the
// thaw. With the end-of-invocation flush (the recipe for functions) everything went before
// each freeze and not one request is refused; without it, what was held goes after the thaw,
// and a freeze between a request's signature and its first byte may make the service refuse
// that one request for its date (signed again and delivered: at most one per freeze).
'use strict'

const { spawn } = require('node:child_process')
const readline = require('node:readline')
const { once } = require('node:events')
const lh = require('..')
const { ROOT, sleep } = require('./helpers.js')

jest.setTimeout(60000)

const INVOCATIONS = 2
const RECORDS = 100

const HANDLER = `
const lh = require(${JSON.stringify(ROOT)})
const [endpoint, accessKeyId, accessKeySecret, ending] = process.argv.slice(1)
const producer = new lh.Producer({ endpoint, project: 'proj', logstore: 'frozen', accessKeyId, accessKeySecret,
  lingerMs: 500, requestTimeoutMs: 1000 })
let invocation = 0
async function handler() {
  for (let i = 0; i < ${RECORDS}; i++) producer.send({ invocation: String(invocation), i: String(i) })
  invocation++
  // Before the platform freezes the instance.
  if (ending === 'flush' && (await producer.flush(10000)) !== 0) throw new Error('not flushed')
  return 'done'
}
const lines = require('node:readline').createInterface({ input: process.stdin })
lines.on('line', (line) => handler().then((answer) => console.log(answer)))
lines.on('close', async () => {
  const closed = await producer.close({ timeoutMs: 10000 })
  console.log(closed.undelivered === 0 ? 'closed' : 'lost ' + closed.undelivered)
})
`

test.each(['flush', 'no flush'])('a frozen handler (%s) loses nothing and sends nothing twice', async (ending) => {
  const emu = new lh.Emulator({ maxClockSkewSecs: 2 })
  const child = spawn(process.execPath, ['-e', HANDLER, emu.endpoint, emu.accessKeyId, emu.accessKeySecret, ending], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const answers = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const answer = async () => (await answers.next()).value
  try {
    const storedWhileFrozen = []
    for (let n = 0; n < INVOCATIONS; n++) {
      child.stdin.write('invoke\n')
      expect(await answer()).toBe('done')
      // The platform freezes the instance once the handler returned.
      process.kill(child.pid, 'SIGSTOP')
      await sleep(4000)
      storedWhileFrozen.push(emu.logs('proj', 'frozen').length)
      process.kill(child.pid, 'SIGCONT')
    }
    child.stdin.end()
    expect(await answer()).toBe('closed')
    const [code] = await once(child, 'exit')
    expect(code).toBe(0)

    const got = emu
      .logs('proj', 'frozen')
      .map((log) => Object.fromEntries(log.contents))
      .map((f) => [Number(f.invocation), Number(f.i)])
      .sort((a, b) => a[0] - b[0] || a[1] - b[1])
    const want = []
    for (let n = 0; n < INVOCATIONS; n++) for (let i = 0; i < RECORDS; i++) want.push([n, i])
    expect(got).toEqual(want)
    const counters = emu.counters()
    expect(counters.duplicateGroups).toBe(0)
    if (ending === 'flush') {
      expect(counters.rejected).toEqual({})
      expect(counters.putRequests).toBe(counters.acceptedRequests)
      expect(storedWhileFrozen).toEqual([RECORDS, 2 * RECORDS])
    } else {
      const refused = counters.rejected.RequestTimeExpired || 0
      expect(Object.keys(counters.rejected).filter((code) => code !== 'RequestTimeExpired')).toEqual([])
      expect(refused).toBeLessThanOrEqual(INVOCATIONS)
      expect(counters.putRequests).toBe(counters.acceptedRequests + refused)
    }
  } finally {
    if (child.exitCode === null) {
      process.kill(child.pid, 'SIGCONT')
      child.kill('SIGKILL')
    }
    emu.close()
  }
})
