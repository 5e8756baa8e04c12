// Types of loghose/prometheus: a producer's metrics in a prom-client registry.
import type { MetricFamily, Producer } from './index'

export interface RegisterOptions {
  /** The registry (default: prom-client's global `register`). Anything with prom-client's
   *  `registerMetric` and `removeSingleMetric`. */
  registry?: { registerMetric(metric: any): void; removeSingleMetric(name: string): void }
  /** Labels added to every series, to tell several producers apart in one registry. */
  constLabels?: Record<string, string>
}

export interface Registration {
  /** The names registered (counters with `_total`). */
  names: string[]
  /** Removes them from the registry. */
  unregister(): void
}

/** Registers `producer`'s metrics: each scrape reads a snapshot from the engine. */
export function register(producer: Producer, options?: RegisterOptions): Registration

/** The engine's metric table, with the name each metric is registered under. */
export function metricTable(): Array<Omit<MetricFamily, 'samples'> & { registeredName: string }>
