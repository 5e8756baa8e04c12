// Types of loghose/pino: the pino transport (pino loads it in its worker thread by `target`).
import type { Transform } from 'node:stream'
import type { ProducerOptions } from './index'

declare namespace loghoseTransport {
  interface Options extends ProducerOptions {
    /** How long the worker delivers what is pending when pino ends the stream (ms). Default 10 000. */
    closeTimeoutMs?: number
  }
}

declare function loghoseTransport(options: loghoseTransport.Options): Promise<Transform>
export = loghoseTransport
