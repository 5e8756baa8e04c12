// Where the examples send: the service named by the environment, or an embedded emulator.
//
// Set LOGHOSE_ENDPOINT (and LOGHOSE_PROJECT, LOGHOSE_LOGSTORE, with keys in
// ALIBABA_CLOUD_ACCESS_KEY_ID / ALIBABA_CLOUD_ACCESS_KEY_SECRET or any source of the default
// credential chain) to send to your project; without it each example starts the embedded
// emulator and shows what arrived there.
'use strict'

const { Emulator } = require('loghose')

/** Producer options for `logstore`, and the emulator when there is no service (close it). */
function destination(logstore) {
  const endpoint = process.env.LOGHOSE_ENDPOINT
  if (endpoint) {
    const options = { endpoint, project: process.env.LOGHOSE_PROJECT || 'my-project', logstore: process.env.LOGHOSE_LOGSTORE || logstore }
    return { options, emu: null }
  }
  const emu = new Emulator()
  return { options: emu.producerOptions('examples', logstore), emu }
}

module.exports = { destination }
