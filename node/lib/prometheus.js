'use strict'
// The producer's metrics in a prom-client registry (prom-client is an optional peer):
//
//   const client = require('prom-client')
//   require('loghose/prometheus').register(producer, { registry: client.register })
//
// Each metric of the engine's table becomes one registry entry whose `get()` reads a snapshot
// from the engine at scrape time (`producer.metrics()`, once per scrape for all of them): the
// counters `stats()` reads and the per-destination meters the I/O threads keep, so nothing is
// counted twice and nothing runs on the send path. Names, help texts, types and labels are the
// engine's: `loghose_records_delivered_total{project,logstore}`,
// `loghose_request_duration_seconds`..., the same the Python collector and the command's
// `--metrics-addr` expose. The entries hold the producer weakly: a producer that is gone
// scrapes as no samples. `constLabels` tells several producers apart in one registry.

const native = require('./binding')

const TABLE = JSON.parse(native.metricTableJson())

/** The name prom-client registers a metric under: counters carry `_total`, as its own do. */
function registeredName(spec) {
  return spec.type === 'counter' ? `${spec.name}_total` : spec.name
}

function register(producer, options = {}) {
  const registry = options.registry ?? require('prom-client').register
  const constLabels = options.constLabels ?? {}
  const ref = new WeakRef(producer)
  // One snapshot serves every entry of the same scrape: prom-client calls each `get()` in the
  // same tick, so the snapshot is kept until the next tick.
  let snapshot = null
  const current = () => {
    if (snapshot === null) {
      const p = ref.deref()
      const families = p ? p.metrics() : []
      snapshot = new Map(families.map(f => [f.name, f]))
      queueMicrotask(() => { snapshot = null })
    }
    return snapshot
  }
  const entries = TABLE.map(spec => {
    const name = registeredName(spec)
    return {
      name,
      help: spec.help,
      type: spec.type,
      aggregator: 'sum',
      labelNames: [...Object.keys(constLabels), ...spec.labels],
      async get() {
        // `this.name`: prom-client renames counters in OpenMetrics mode (without `_total`).
        const base = this.name
        const family = current().get(spec.name)
        const values = []
        for (const sample of family ? family.samples : []) {
          const labels = { ...constLabels, ...sample.labels }
          const h = sample.histogram
          if (!h) {
            values.push({ labels, value: sample.value })
            continue
          }
          h.bounds.forEach((bound, i) => {
            values.push({ labels: { ...labels, le: String(bound) }, value: h.cumulative[i], metricName: `${base}_bucket` })
          })
          values.push({ labels: { ...labels, le: '+Inf' }, value: h.count, metricName: `${base}_bucket` })
          values.push({ labels, value: h.sum, metricName: `${base}_sum` })
          values.push({ labels, value: h.count, metricName: `${base}_count` })
        }
        return { name: base, help: spec.help, type: spec.type, values, aggregator: 'sum' }
      },
      reset() {},
    }
  })
  for (const entry of entries) {
    registry.registerMetric(entry)
  }
  return {
    names: entries.map(e => e.name),
    unregister() {
      for (const entry of entries) registry.removeSingleMetric(entry.name)
    },
  }
}

module.exports = { register, metricTable: () => TABLE.map(spec => ({ ...spec, registeredName: registeredName(spec) })) }
