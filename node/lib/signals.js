'use strict'
// Delivery on SIGTERM and SIGINT, then the signal's usual course.
//
// Without a listener, SIGTERM (docker stop, Kubernetes) and SIGINT (Ctrl-C) end a Node process
// at once and what a producer held was lost. The first producer with `closeOnSignalMs > 0`
// (the default, 5000) puts one listener on each signal for the whole process. Node's signal
// listeners never keep the event loop alive, so a process that would have exited still does.
//
// On a signal, on the main thread:
// - if no other listener is registered for it (the process would have ended), every live
//   producer is closed synchronously, blocking the event loop up to the bound so that nothing
//   else runs (as if the process had ended at the signal), then the listener is removed and
//   the signal raised again: the process ends by it, exactly as it would have;
// - otherwise the application's listeners decide; the producers send what they hold at once
//   (without waiting), and if the application then calls `process.exit()`, the `exit` event
//   closes them synchronously within the bound.
// A second signal while the first is handled cannot arrive (the loop is blocked); a signal
// the application handles arrives as usual every time.
//
// In a worker thread (signals reach the main thread only), the `exit` event alone: when the
// worker ends, its producers are closed within the bound and what they could not deliver is
// said on stderr, as on the main thread.
//
// Producers are held weakly (a WeakRef each), so this registry never keeps one alive.

const producers = new Set()
let installed = false

function live() {
  const found = []
  for (const ref of producers) {
    const producer = ref.deref()
    if (producer === undefined || producer.closed) producers.delete(ref)
    else found.push(producer)
  }
  return found
}

function boundMs(list) {
  return list.reduce((most, p) => Math.max(most, p._closeOnSignalMs), 0)
}

function onSignal(signal) {
  const list = live()
  const others = process.listenerCount(signal) - 1
  if (others > 0) {
    for (const producer of list) producer._seal()
    return
  }
  const deadline = Date.now() + boundMs(list)
  for (const producer of list) producer._seal()
  for (const producer of list) producer._closeSync(Math.max(0, deadline - Date.now()))
  uninstall()
  process.kill(process.pid, signal)
}

function onExit() {
  const list = live()
  const deadline = Date.now() + boundMs(list)
  for (const producer of list) producer._seal()
  for (const producer of list) producer._closeSync(Math.max(0, deadline - Date.now()))
}

function uninstall() {
  process.removeListener('SIGTERM', onSignal)
  process.removeListener('SIGINT', onSignal)
  process.removeListener('exit', onExit)
  installed = false
}

/** Registers a producer whose `_closeOnSignalMs` is above 0; installs the listeners once
 * (the signals' only on the main thread). */
function register(producer, mainThread) {
  producers.add(new WeakRef(producer))
  if (installed) return
  installed = true
  if (mainThread) {
    process.on('SIGTERM', onSignal)
    process.on('SIGINT', onSignal)
  }
  process.on('exit', onExit)
}

module.exports = { register }
