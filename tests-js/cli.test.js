// The command line refuses what it does not know, with its usage, instead of ignoring it.
'use strict'

const path = require('node:path')
const { spawnSync } = require('node:child_process')
const os = require('node:os')
const fs = require('node:fs')
const { Emulator } = require('../node/lib/index.js')

const { CLI } = require('./helpers.js')
const run = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30000 })

test.each([
  [['no-such-command'], /^usage: loghose send/],
  [['bench'], /^usage: loghose send/],
])('%j is refused with the usage', (args, message) => {
  const done = run(...args)
  expect(done.status).toBe(2)
  expect(done.stderr).toMatch(message)
  expect(done.stderr).toMatch(/loghose emulator/)
  expect(done.stdout).toBe('')
})

test.each([
  [['pipe', '--help'], /--follow/],
])('%j prints the command\'s help and exits 0', (args, help) => {
  const done = run(...args)
  expect(done.status).toBe(0)
  expect(done.stdout).toMatch(help)
  expect(done.stderr).toBe('')
})

// The engine's command (send, pipe) from the npm package's `loghose`, against the emulator.
test('send and pipe reach the emulator; the exit status says whether they were delivered', () => {
  const emu = new Emulator()
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-cli-'))
  try {
    const env = {
      PATH: process.env.PATH,
      HOME: home,
      LOGHOSE_ENDPOINT: emu.endpoint,
      LOGHOSE_PROJECT: 'loghose',
      LOGHOSE_LOGSTORE: 'cli',
      ALIBABA_CLOUD_ACCESS_KEY_ID: emu.accessKeyId,
      ALIBABA_CLOUD_ACCESS_KEY_SECRET: emu.accessKeySecret,
    }
    const opts = { encoding: 'utf8', timeout: 60000, env }
    const sent = spawnSync(process.execPath, [CLI, 'send', 'k=v'], opts)
    expect(sent.stderr).toBe('')
    expect(sent.status).toBe(0)
    const piped = spawnSync(process.execPath, [CLI, 'pipe', '--json'], { ...opts, input: '{"a":1}\n{"a":2}\nnot json\n' })
    expect(piped.status).toBe(1)
    expect(piped.stderr).toMatch(/line 3 not sent/)
    const contents = emu.logs('loghose', 'cli').map((l) => Object.fromEntries(l.contents))
    expect(contents).toContainEqual({ k: 'v' })
    expect(contents.filter((c) => c.a).map((c) => c.a).sort()).toEqual(['1', '2'])
    const usage = spawnSync(process.execPath, [CLI, 'send', 'no-equals'], opts)
    expect(usage.status).toBe(2)
  } finally {
    emu.close()
    fs.rmSync(home, { recursive: true, force: true })
  }
})

test('the emulator command serves until SIGTERM, which Node keeps and passes on', async () => {
  const { spawn } = require('node:child_process')
  const child = spawn(process.execPath, [CLI, 'emulator', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] })
  try {
    const first = await new Promise((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (d) => {
        out += d
        if (out.includes('\n')) resolve(out.split('\n')[0])
      })
      child.on('exit', () => reject(new Error(`exited early: ${out}`)))
    })
    expect(first).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const health = await fetch(`${first}/_emulator/health`)
    expect(await health.json()).toEqual({ ok: true })
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
    child.kill('SIGTERM')
    expect(await exited).toEqual({ code: 0, signal: null })
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL')
  }
}, 30000)

test('started by npx, `pipe --follow` ends with the shell npm ran it in, delivering what it read', async () => {
  // npm exec runs the command in a shell and, stopped by SIGTERM, ends itself and that shell
  // but not the command; the shell killed here stands for both.
  const { spawn } = require('node:child_process')
  const emu = new Emulator()
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'loghose-npx-'))
  const file = path.join(home, 'app.log')
  fs.writeFileSync(file, '')
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    npm_command: 'exec',
    LOGHOSE_ENDPOINT: emu.endpoint,
    LOGHOSE_PROJECT: 'loghose',
    LOGHOSE_LOGSTORE: 'followed',
    ALIBABA_CLOUD_ACCESS_KEY_ID: emu.accessKeyId,
    ALIBABA_CLOUD_ACCESS_KEY_SECRET: emu.accessKeySecret,
  }
  const shell = spawn('sh', ['-c', `"${process.execPath}" "${CLI}" pipe --follow "${file}"; echo ended`], { env, stdio: 'ignore' })
  try {
    await new Promise((resolve) => setTimeout(resolve, 1000))
    fs.appendFileSync(file, 'first line\nsecond line\n')
    await new Promise((resolve) => setTimeout(resolve, 500))
    shell.kill('SIGKILL')
    // The command gets SIGTERM from the kernel as its parent ends, delivers and exits.
    const running = () => spawnSync('pgrep', ['-f', `${CLI} pipe --follow ${file}`], { encoding: 'utf8' }).stdout.trim()
    const deadline = Date.now() + 15000
    while (Date.now() < deadline && running() !== '') await new Promise((resolve) => setTimeout(resolve, 100))
    expect(running()).toBe('')
    expect(emu.totals('loghose', 'followed').logs).toBe(2)
  } finally {
    spawnSync('pkill', ['-f', `${CLI} pipe --follow ${file}`])
    emu.close()
    fs.rmSync(home, { recursive: true, force: true })
  }
}, 30000)
