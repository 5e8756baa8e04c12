// Every JavaScript code block of README.md and of the guides (docs/guides/*.md) runs as pasted
// (```js as CommonJS, ```mjs as an ES module), in a fresh process whose `loghose` is this
// package, and ends well. The blocks that send to the service read their endpoint and keys from
// the environment (`LOGHOSE_ENDPOINT`, `ALIBABA_CLOUD_ACCESS_KEY_ID`, ...): here it names an
// emulator.
'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

jest.setTimeout(120000)

const { ROOT } = require('./helpers.js')
const { Emulator } = require('..')
const GUIDES = path.join(ROOT, 'docs', 'guides')
const PAGES = ['README.md', ...fs.readdirSync(GUIDES).filter((f) => f.endsWith('.md')).sort().map((f) => path.join('docs', 'guides', f))]
const BLOCKS = PAGES.flatMap((page) =>
  [...fs.readFileSync(path.join(ROOT, page), 'utf8').matchAll(/^```(js|mjs)\n([\s\S]*?)^```/gm)].map((m, i) => [
    `${path.basename(page, '.md')} block ${i} (${m[1]})`,
    m[1],
    m[2],
  ]),
)

let emu
beforeAll(() => {
  emu = new Emulator()
})
afterAll(() => emu.close())

let dir
beforeAll(() => {
  // A project of its own that depends on this package, as a user's would (node_modules/loghose
  // is a link to the clone; pino, winston, OpenTelemetry and prom-client come from the clone's own node_modules).
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-readme-'))
  fs.mkdirSync(path.join(dir, 'node_modules'))
  // 'junction': a link to a directory that Windows makes without privileges (ignored elsewhere).
  fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'loghose'), 'junction')
  for (const name of ['pino', 'winston', '@opentelemetry', 'prom-client']) fs.symlinkSync(path.join(ROOT, 'node_modules', name), path.join(dir, 'node_modules', name), 'junction')
})
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

test('the README and the Node.js guide have CommonJS and ES module blocks', () => {
  expect(BLOCKS.map(([, kind]) => kind)).toEqual(expect.arrayContaining(['js', 'mjs']))
  expect(BLOCKS.filter(([name]) => name.startsWith('README')).length).toBeGreaterThanOrEqual(2)
  expect(BLOCKS.filter(([name]) => name.startsWith('node ')).length).toBeGreaterThanOrEqual(4)
})

test.each(BLOCKS)('%s runs as pasted', (name, kind, code) => {
  const file = path.join(dir, `block.${kind}`)
  fs.writeFileSync(file, code)
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(ALIBABA_CLOUD_|LOGHOSE_)/.test(k)))
  Object.assign(env, {
    NODE_PATH: '',
    LOGHOSE_ENDPOINT: emu.endpoint,
    ALIBABA_CLOUD_ACCESS_KEY_ID: emu.accessKeyId,
    ALIBABA_CLOUD_ACCESS_KEY_SECRET: emu.accessKeySecret,
  })
  const out = execFileSync(process.execPath, [file], { cwd: dir, timeout: 60000, encoding: 'utf8', env })
  expect(out.trim().length).toBeGreaterThan(0)
})
