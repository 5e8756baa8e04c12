// Types of loghose/otel: an OpenTelemetry log record processor and exporter (@opentelemetry/sdk-logs).
import type { MeterProvider } from '@opentelemetry/api'
import type { ExportResult } from '@opentelemetry/core'
import type { LogRecordExporter, LogRecordProcessor, ReadableLogRecord, SdkLogRecord } from '@opentelemetry/sdk-logs'
import type { Producer, ProducerOptions } from './index'

/** The producer's options (or a producer), and the processor's or exporter's own. */
export interface LoghoseOtelOptions extends Partial<ProducerOptions> {
  /** An existing producer to send through (then the producer's options are not given); `shutdown` leaves it open. */
  producer?: Producer
  /** How long `shutdown()` delivers what is pending (ms), and `forceFlush()` waits. Default 10 000. */
  closeTimeoutMs?: number
  /** Where the `otel.sdk.*` log-pipeline metrics go; default the global one of @opentelemetry/api. */
  meterProvider?: MeterProvider
}

/** The fields one OTel log record is stored with (the Collector's Log Service exporter's layout). */
export interface LoghoseOtelFields {
  /** The resource's `host.name`. */
  host: string
  /** The resource's `service.name`. */
  service: string
  /** The resource's attributes, as JSON. */
  resource: string
  /** The instrumentation scope's name. */
  'otlp.name': string
  /** The instrumentation scope's version. */
  'otlp.version': string
  /** The record's time, nanoseconds since the Unix epoch. */
  timeUnixNano: string
  /** The OpenTelemetry severity number. */
  severityNumber: string
  /** The severity text (`INFO`, `WARN`...). */
  severityText: string
  /** The record's attributes, as JSON. */
  attribute: string
  /** The record's body. */
  content: string
  /** The trace flags. */
  flags: string
  /** The trace id, hex. */
  traceID: string
  /** The span id, hex. */
  spanID: string
}

/** What the processor and the exporter share: a producer, its close, its failures. */
declare class OtelSink {
  /** Builds the producer from the options, or sends through `options.producer`. */
  constructor(options: LoghoseOtelOptions)
  /** The producer records go to. */
  readonly producer: Producer
  /** Whether `shutdown()` closes the producer (it built it). */
  readonly ownsProducer: boolean
  /** How long `shutdown()` delivers what is pending, and `forceFlush()` waits (ms). */
  closeTimeoutMs: number
  /** Records that could not be sent (the first of each error name also emitted as a process warning). */
  failures: number
  /** Delivers what is pending, waiting up to `closeTimeoutMs`. */
  forceFlush(): Promise<void>
  /** Delivers what is pending and closes the producer if it built it. */
  shutdown(): Promise<void>
}

/** Sends each OTel log record to Log Service as it is emitted (use it in place of BatchLogRecordProcessor). */
export declare class LoghoseLogRecordProcessor extends OtelSink implements LogRecordProcessor {
  /** Sends one record as it is emitted (the SDK calls it). */
  onEmit(logRecord: SdkLogRecord): void
}

/** An OTel log exporter to Log Service, for BatchLogRecordProcessor or SimpleLogRecordProcessor. */
export declare class LoghoseLogExporter extends OtelSink implements LogRecordExporter {
  /** Sends a batch of records (the SDK's batch processor calls it); the callback says once they are queued. */
  export(logs: ReadableLogRecord[], resultCallback: (result: ExportResult) => void): void
}

/** The fields and time (Unix seconds) a record is stored with. */
export declare function layout(record: ReadableLogRecord): {
  /** The fields. */
  fields: LoghoseOtelFields
  /** The time, Unix seconds. */
  time: number
}
