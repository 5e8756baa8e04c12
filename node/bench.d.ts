// The seed benchmark scenarios from Node, with their figures as data (see bench.js).

export type Scenario = 's1' | 's1r' | 's2' | 's4' | 's5' | 's6'

export interface ScenarioParams {
  /** `api`: records through `send` (default) or through senders of their keys (`Producer.sender`). */
  s1: { rates?: number[]; seconds?: number; unthrottledSeconds?: number; preset?: 'server' | 'pi'; api?: 'send' | 'sender' }
  s1r: { rates?: number[]; seconds?: number; unthrottledSeconds?: number; preset?: 'server' | 'pi'; api?: 'send' | 'sender' }
  s2: { rates?: number[]; seconds?: number; preset?: 'server' | 'pi'; core?: number }
  s4: { openBatches?: number[]; lingersMs?: number[]; seconds?: number }
  s5: { devices?: number; rates?: number[]; seconds?: number; key?: 'shardKey' | 'source'; sampleEvery?: number; tenants?: number }
  s6: { sizes?: number[]; count?: number; codecs?: Array<'none' | 'lz4' | 'zstd' | 'deflate'>; codecRounds?: number }
}

/** One row: a rate, case, size or codec of a scenario. Every row that counted logs has
 * `received`, `lost` and `duplicates`; the other fields depend on the scenario. */
export interface Row {
  scenario: Scenario
  received?: number
  lost?: number
  duplicates?: number
  pending?: number
  [figure: string]: unknown
}

/** Runs `scenario` in a child process and resolves with its rows. */
export declare function run<S extends Scenario>(scenario: S, params?: ScenarioParams[S], options?: { progress?: boolean }): Promise<Row[]>
/** Whether a row's correctness check failed (a log lost, duplicated, refused or left pending). */
export declare function failed(row: Row): boolean
export declare const SCENARIOS: Scenario[]
export declare const DEFAULTS: { [S in Scenario]: Required<ScenarioParams[S]> }
