// The seed benchmark scenarios from Node, with their figures as data (see bench.js).

/** The seed scenarios (docs/scenarios.md): S1 the C producer's server benchmark, S1-R with
 *  varied access logs, S2 on a Pi's budget, S4 many open batches, S5 a gateway, S6 large records. */
export type Scenario = 's1' | 's1r' | 's2' | 's4' | 's5' | 's6'

/** What each scenario takes (every parameter has a default: {@link DEFAULTS}). */
export interface ScenarioParams {
  /** S1: the C producer's server benchmark. */
  s1: S1Params
  /** S1-R: S1's method with access logs varied as real ones are. */
  s1r: S1Params
  /** S2: S1 on a Raspberry Pi's budget. */
  s2: {
    /** Rates, logs per second. */
    rates?: number[]
    /** Seconds per rate. */
    seconds?: number
    /** The producer's preset. */
    preset?: 'server' | 'pi'
    /** The core the process is pinned to. */
    core?: number
  }
  /** S4: many open batches waiting for their linger. */
  s4: {
    /** Open batches at once, per case. */
    openBatches?: number[]
    /** Lingers, milliseconds, per case. */
    lingersMs?: number[]
    /** Seconds per case. */
    seconds?: number
  }
  /** S5: a gateway sending for many devices. */
  s5: {
    /** Devices sending in turn. */
    devices?: number
    /** Rates, logs per second. */
    rates?: number[]
    /** Seconds per rate. */
    seconds?: number
    /** What tells devices apart: a shard key each, or a source each. */
    key?: 'shardKey' | 'source'
    /** One record in this many is tracked for its latency. */
    sampleEvery?: number
    /** Logstores the devices are spread over. */
    tenants?: number
  }
  /** S6: add-to-delivery latency per record size. */
  s6: {
    /** Record sizes, bytes. */
    sizes?: number[]
    /** Records per size. */
    count?: number
    /** Codecs whose cost per size is measured. */
    codecs?: Array<'none' | 'lz4' | 'zstd' | 'deflate'>
    /** Rounds of each codec measurement. */
    codecRounds?: number
  }
}

/** What S1 and S1-R take. */
export interface S1Params {
  /** Rates, logs per second. */
  rates?: number[]
  /** Seconds per rate. */
  seconds?: number
  /** Seconds of the unthrottled run (0 skips it). */
  unthrottledSeconds?: number
  /** The producer's preset. */
  preset?: 'server' | 'pi'
  /** Records through `send` (default) or through senders of their keys (`Producer.sender`). */
  api?: 'send' | 'sender'
}

/** One row: a rate, case, size or codec of a scenario. Every row that counted logs has
 * `received`, `lost` and `duplicates`; the other fields depend on the scenario. */
export interface Row {
  /** The scenario the row is of. */
  scenario: Scenario
  /** Logs the emulator received. */
  received?: number
  /** Logs added and not received (0, or the scenario failed). */
  lost?: number
  /** Logs received more than once (0, or the scenario failed). */
  duplicates?: number
  /** Logs still pending at the end (0, or the scenario failed). */
  pending?: number
  [figure: string]: unknown
}

/** Runs `scenario` in a child process and resolves with its rows. */
export declare function run<S extends Scenario>(scenario: S, params?: ScenarioParams[S], options?: { progress?: boolean }): Promise<Row[]>
/** Whether a row's correctness check failed (a log lost, duplicated, refused or left pending). */
export declare function failed(row: Row): boolean
/** Every scenario's name. */
export declare const SCENARIOS: Scenario[]
/** Every scenario's parameters as they are when not given. */
export declare const DEFAULTS: { [S in Scenario]: Required<ScenarioParams[S]> }
