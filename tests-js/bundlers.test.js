// Bundling a service that uses loghose, as the Node.js guide's "Bundlers" section (docs/guides/node.md) says: esbuild with
// the package left external (by name or --packages=external), esbuild with the addon copied
// beside the bundle (`--loader:.node=copy`, which runs with no node_modules at all), and
// webpack with loghose in `externals`. Each bundle is run and its record read back; the two
// ways that fail are checked to fail as the guide says, so the section stays true.
'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const esbuild = require('esbuild')
const webpack = require('webpack')
const lh = require('..')

jest.setTimeout(120000)

const APP = `
const { Producer } = require('loghose')
const p = new Producer({ endpoint: process.env.EP, project: 'proj', logstore: 'bundled', accessKeyId: process.env.KID, accessKeySecret: process.env.KS })
p.sendAsync({ bundle: process.env.BUNDLE }).then(() => p.close()).then(() => console.log('delivered'))
`

let work
let emu

beforeAll(() => {
  // A service's directory: its source, and loghose installed in its node_modules.
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-bundle-'))
  fs.writeFileSync(path.join(work, 'app.js'), APP)
  fs.mkdirSync(path.join(work, 'node_modules'))
  fs.symlinkSync(path.join(__dirname, '..'), path.join(work, 'node_modules', 'loghose'), 'dir')
  emu = new lh.Emulator()
})

afterAll(() => {
  emu.close()
  fs.rmSync(work, { recursive: true, force: true })
})

/** Runs a bundle from `cwd` and answers what it printed; its record must arrive. */
function runBundle(file, name, cwd = path.dirname(file)) {
  const env = { PATH: process.env.PATH, EP: emu.endpoint, KID: emu.accessKeyId, KS: emu.accessKeySecret, BUNDLE: name }
  const done = spawnSync(process.execPath, [file], { env, cwd, encoding: 'utf8', timeout: 60000 })
  expect(done.stderr).toBe('')
  expect(done.status).toBe(0)
  expect(done.stdout).toBe('delivered\n')
  const arrived = emu.logs('proj', 'bundled').filter((log) => Object.fromEntries(log.contents).bundle === name)
  expect(arrived).toHaveLength(1)
}

function bundleWithEsbuild(options) {
  return esbuild.build({ entryPoints: [path.join(work, 'app.js')], bundle: true, platform: 'node', logLevel: 'silent', ...options })
}

test.each([
  ['external', { external: ['loghose'] }],
  ['packages', { packages: 'external' }],
])('esbuild with loghose left to node_modules (%s) runs', async (name, options) => {
  const outfile = path.join(work, 'dist', `${name}.js`)
  await bundleWithEsbuild({ outfile, ...options })
  runBundle(outfile, `esbuild-${name}`)
})

test('esbuild with the addon copied beside the bundle runs with no node_modules', async () => {
  const alone = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-alone-'))
  try {
    await bundleWithEsbuild({ outdir: alone, loader: { '.node': 'copy' } })
    expect(fs.readdirSync(alone).some((f) => f.endsWith('.node'))).toBe(true)
    runBundle(path.join(alone, 'app.js'), 'esbuild-copy', alone)
  } finally {
    fs.rmSync(alone, { recursive: true, force: true })
  }
})

test('esbuild without a way for the addon stops at the .node file, as the guide says', async () => {
  await expect(bundleWithEsbuild({ outfile: path.join(work, 'dist', 'plain.js') })).rejects.toThrow(/No loader is configured for "\.node" files/)
})

function bundleWithWebpack(name, externals) {
  const config = { mode: 'production', target: 'node', entry: path.join(work, 'app.js'), output: { path: path.join(work, 'dist'), filename: `${name}.js` }, externals }
  return new Promise((resolve, reject) => webpack(config, (err, stats) => (err ? reject(err) : resolve(stats.toJson({ all: false, errors: true })))))
}

test('webpack with loghose in externals runs', async () => {
  const built = await bundleWithWebpack('webpack', { loghose: 'commonjs loghose' })
  expect(built.errors).toEqual([])
  runBundle(path.join(work, 'dist', 'webpack.js'), 'webpack')
})

test('webpack without externals stops at the addon, as the guide says', async () => {
  const built = await bundleWithWebpack('webpack-plain', undefined)
  expect(built.errors.map((e) => e.message).join('\n')).toMatch(/Module parse failed/)
})
