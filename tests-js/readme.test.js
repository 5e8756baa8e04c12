// Every JavaScript code block of README.md runs as pasted (```js as CommonJS, ```mjs as an ES
// module), in a fresh process whose `loghose` is this package, and ends well.
'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

jest.setTimeout(120000)

const { ROOT } = require('./helpers.js')
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')
const BLOCKS = [...README.matchAll(/^```(js|mjs)\n([\s\S]*?)^```/gm)].map((m, i) => [`block ${i} (${m[1]})`, m[1], m[2]])

let dir
beforeAll(() => {
  // A project of its own that depends on this package, as a user's would (node_modules/loghose
  // is a link to the clone; pino, winston, OpenTelemetry and prom-client come from the clone's own node_modules).
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-readme-'))
  fs.mkdirSync(path.join(dir, 'node_modules'))
  fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'loghose'), 'dir')
  for (const name of ['pino', 'winston', '@opentelemetry', 'prom-client']) fs.symlinkSync(path.join(ROOT, 'node_modules', name), path.join(dir, 'node_modules', name), 'dir')
})
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

test('the README has CommonJS and ES module blocks', () => {
  expect(BLOCKS.map(([, kind]) => kind)).toEqual(expect.arrayContaining(['js', 'mjs']))
})

test.each(BLOCKS)('%s runs as pasted', (name, kind, code) => {
  const file = path.join(dir, `block.${kind}`)
  fs.writeFileSync(file, code)
  const out = execFileSync(process.execPath, [file], { cwd: dir, timeout: 60000, encoding: 'utf8', env: { ...process.env, NODE_PATH: '' } })
  expect(out.trim().length).toBeGreaterThan(0)
})
