// Types of loghose/prometheus: a producer's metrics in a prom-client registry.
import type { MetricFamily, Producer } from './index'

/** Where and how {@link register} registers. */
export interface RegisterOptions {
  /** The registry (default: prom-client's global `register`). Anything with prom-client's
   *  `registerMetric` and `removeSingleMetric`. */
  registry?: {
    /** Adds a metric to the registry. */
    registerMetric(metric: any): void
    /** Removes a metric by name. */
    removeSingleMetric(name: string): void
  }
  /** Labels added to every series, to tell several producers apart in one registry. */
  constLabels?: Record<string, string>
}

/** What {@link register} registered. */
export interface Registration {
  /** The names registered (counters with `_total`). */
  names: string[]
  /** Removes them from the registry. */
  unregister(): void
}

/** Registers `producer`'s metrics: each scrape reads a snapshot from the engine. */
export function register(producer: Producer, options?: RegisterOptions): Registration

/** The engine's metric table, with the name each metric is registered under. */
export function metricTable(): Array<Omit<MetricFamily, 'samples'> & {
  /** The name prom-client knows it by (counters with `_total`). */
  registeredName: string
}>
