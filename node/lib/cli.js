#!/usr/bin/env node
'use strict'
// `npx loghose`: `send`, `pipe`, `otlp` and `emulator` are the engine's command, run on a pool thread.
// (The benchmark commands are the lab's: `node lab/node/bench-cli.js` in a checkout.)

const USAGE =
  'usage: loghose send [options] KEY=VALUE...   one record, waited for\n' +
  '       loghose pipe [options]                  a record per line of stdin (or --follow FILE)\n' +
  '       loghose otlp [options]                  receive OpenTelemetry logs (OTLP :4318 HTTP, :4317 gRPC)\n' +
  '       loghose emulator [--port N]             the local emulator, until interrupted\n' +
  '(loghose COMMAND --help for the options of each command)'

const ENGINE_COMMANDS = ['send', 'pipe', 'otlp', 'emulator', 'help', '--help', '-h', '--version', '-V']
const [command] = process.argv.slice(2)
if (ENGINE_COMMANDS.includes(command)) {
  // The engine's command runs on a pool thread; SIGINT and SIGTERM stay Node's, and stop it
  // as they would the command alone (what it holds is delivered first).
  const native = require('./native.js')
  const stop = () => native.cliStop()
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
  // Under npx (npm exec), a SIGTERM (docker stop) ends npm and the shell it started, not this
  // command, which would run on orphaned: it ends with its parent instead (Linux).
  if (process.env.npm_command === 'exec') native.cliStopWithParent()
  native.cliMain(['loghose', ...process.argv.slice(2)]).then((code) => {
    process.removeListener('SIGINT', stop)
    process.removeListener('SIGTERM', stop)
    process.exitCode = code
    // A reader still blocked on standard input would keep the process alive.
    process.exit(code)
  })
} else {
  console.error(USAGE)
  process.exitCode = 2
}
