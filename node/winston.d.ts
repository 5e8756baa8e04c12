// Types of loghose/winston: the winston transport.
import TransportStream = require('winston-transport')
import type { Producer, ProducerOptions } from './index'

declare namespace LoghoseTransport {
  interface Options extends Partial<ProducerOptions>, TransportStream.TransportStreamOptions {
    /** An existing producer to send through (then the producer's options are not given). */
    producer?: Producer
    /** How long `close()` delivers what is pending (ms), when the transport built the producer. Default 10 000. */
    closeTimeoutMs?: number
  }
}

declare class LoghoseTransport extends TransportStream {
  constructor(options: LoghoseTransport.Options)
  /** The producer records go to. */
  readonly producer: Producer
  /** Records that could not be sent (each also emitted as `warn`). */
  failures: number
  log(info: Record<string | symbol, unknown>, callback: () => void): void
  close(): void
}

export = LoghoseTransport
