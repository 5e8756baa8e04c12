// Types of loghose/pino: the pino transport (pino loads it in its worker thread by `target`).
import type { Transform } from 'node:stream'
import type { ProducerOptions } from './index'

declare namespace loghoseTransport {
  /** The producer's options, and the transport's own. */
  interface Options extends ProducerOptions {
    /** How long the worker delivers what is pending when pino ends the stream (ms). Default 10 000. */
    closeTimeoutMs?: number
  }
}

/** The transport pino builds in its worker thread (`pino.transport({ target: 'loghose/pino', options })`):
 *  each line pino writes becomes one log. */
declare function loghoseTransport(options: loghoseTransport.Options): Promise<Transform>
export = loghoseTransport
