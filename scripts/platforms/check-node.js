'use strict'
// The npm packages as installed on another platform (run by scripts/platforms/test.sh under
// qemu-user with that platform's Node.js, `loghose` and its platform package unpacked into
// node_modules, no toolchain): each value of the table shared with the other tests stored as
// it says, whichever way it is sent; sendMany; a delivery report awaited from a Promise; the
// pino transport in pino's worker thread. Against the emulator the addon carries. Prints one
// line per check and exits non-zero at the first that fails.
//
//   node check-node.js VALUES_JSON

const assert = require('node:assert/strict')
const { once } = require('node:events')
const fs = require('node:fs')
const lh = require('loghose')

const { values } = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))

async function check(name, body) {
  const started = Date.now()
  await body()
  console.log(`ok ${name} (${Date.now() - started} ms)`)
}

async function main() {
  const emu = new lh.Emulator()
  const options = (logstore) => ({ ...emu.producerOptions('loghose', logstore), lingerMs: 20 })
  const stored = (logstore) => emu.logs('loghose', logstore).map((log) => Object.fromEntries(log.contents))
  try {
    await check(`the ${values.length} values of the shared table, each way a record is sent`, async () => {
      const p = new lh.Producer(options('values'))
      const viaSender = p.sender(['row', 'way', 'v'])
      values.forEach((row, n) => {
        const value = new Function(`return (${row.js})`)()
        p.send({ row: String(n), way: 'object', v: value })
        p.send([['row', String(n)], ['way', 'pairs'], ['v', value]])
        p.send({ row: String(n), way: 'options', v: value }, { topic: 't' })
        p.sendMany([{ row: String(n), way: 'many', v: value }])
        viaSender(String(n), 'sender', value)
      })
      // After the first, 'object' records crossed as values of a registered key list.
      assert.equal(p._shapes.get('row').group.length, 1)
      assert.equal(await p.flush(60000), 0)
      await p.close()
      const got = stored('values')
      assert.equal(got.length, values.length * 5)
      for (const log of got) assert.equal(log.v, values[Number(log.row)].stored, `${values[Number(log.row)].name} sent as ${log.way}`)
    })

    await check('sendMany queues every record, or none', async () => {
      const p = new lh.Producer(options('many'))
      assert.equal(p.sendMany(Array.from({ length: 1000 }, (_, i) => ({ i: String(i) }))), 1000)
      assert.throws(() => p.sendMany([{ ok: '1' }, { __time__: 'reserved' }]), lh.InvalidRecordError)
      assert.equal(await p.flush(60000), 0)
      await p.close()
      assert.equal(stored('many').length, 1000)
    })

    await check('a delivery report awaited from a Promise', async () => {
      const p = new lh.Producer(options('awaited'))
      const report = await p.sendAsync({ msg: 'tracked' })
      assert.equal(report.delivered, true)
      assert.equal(report.records, 1)
      await p.close()
    })

    await check('the pino transport, in pino worker thread', async () => {
      const pino = require('pino')
      const transport = pino.transport({ target: 'loghose/pino', options: options('pino') })
      const logger = pino(transport)
      for (let i = 0; i < 100; i++) logger.info({ i }, 'from pino')
      transport.end()
      await once(transport, 'close')
      const got = stored('pino')
      assert.equal(got.length, 100)
      assert.equal(got[0].msg, 'from pino')
    })
  } finally {
    emu.close()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
