// The command line refuses what it does not know, with its usage, instead of ignoring it.
'use strict'

const path = require('node:path')
const { spawnSync } = require('node:child_process')

const CLI = path.join(__dirname, '..', 'node', 'cli.js')
const run = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30000 })

test.each([
  [['bench', '--secnds', '5'], /Unknown option '--secnds'/],
  [['bench', '--seconds', 'five'], /--seconds must be a number, not "five"/],
  [['bench', '--preset', 'laptop'], /--preset must be server or pi, not "laptop"/],
  [['middleware', '--rates', '1000'], /Unknown option '--rates'/],
  [['bench', 'extra'], /Unexpected argument 'extra'/],
  [['no-such-command'], /^usage: loghose bench/],
])('%j is refused with the usage', (args, message) => {
  const done = run(...args)
  expect(done.status).toBe(2)
  expect(done.stderr).toMatch(message)
  expect(done.stderr).toMatch(/usage: loghose bench/)
  expect(done.stdout).toBe('')
})
