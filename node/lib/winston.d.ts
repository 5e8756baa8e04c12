// Types of loghose/winston: the winston transport.
import TransportStream = require('winston-transport')
import type { Producer, ProducerOptions } from './index'

declare namespace LoghoseTransport {
  /** The producer's options (or a producer), the transport's own and winston's. */
  interface Options extends Partial<ProducerOptions>, TransportStream.TransportStreamOptions {
    /** An existing producer to send through (then the producer's options are not given). */
    producer?: Producer
    /** How long `close()` delivers what is pending (ms), when the transport built the producer. Default 10 000. */
    closeTimeoutMs?: number
  }
}

/** A winston transport: `level`, `message` and every metadata key become a log's fields. */
declare class LoghoseTransport extends TransportStream {
  /** A transport with its own producer (from the options), or sending through `options.producer`. */
  constructor(options: LoghoseTransport.Options)
  /** The producer records go to. */
  readonly producer: Producer
  /** Records that could not be sent (each also emitted as `warn`). */
  failures: number
  /** Sends one record (winston calls it). */
  log(info: Record<string | symbol, unknown>, callback: () => void): void
  /** Delivers what is pending (within `closeTimeoutMs`) and closes the producer if it built it; emits `closed`. */
  close(): void
}

export = LoghoseTransport
