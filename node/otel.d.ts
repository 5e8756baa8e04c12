// Types of loghose/otel: an OpenTelemetry log record processor and exporter (@opentelemetry/sdk-logs).
import type { MeterProvider } from '@opentelemetry/api'
import type { ExportResult } from '@opentelemetry/core'
import type { LogRecordExporter, LogRecordProcessor, ReadableLogRecord, SdkLogRecord } from '@opentelemetry/sdk-logs'
import type { Producer, ProducerOptions } from './index'

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
  host: string
  service: string
  resource: string
  'otlp.name': string
  'otlp.version': string
  timeUnixNano: string
  severityNumber: string
  severityText: string
  attribute: string
  content: string
  flags: string
  traceID: string
  spanID: string
}

declare class OtelSink {
  constructor(options: LoghoseOtelOptions)
  /** The producer records go to. */
  readonly producer: Producer
  /** Whether `shutdown()` closes the producer (it built it). */
  readonly ownsProducer: boolean
  closeTimeoutMs: number
  /** Records that could not be sent (the first of each error name also emitted as a process warning). */
  failures: number
  forceFlush(): Promise<void>
  shutdown(): Promise<void>
}

/** Sends each OTel log record to Log Service as it is emitted (use it in place of BatchLogRecordProcessor). */
export declare class LoghoseLogRecordProcessor extends OtelSink implements LogRecordProcessor {
  onEmit(logRecord: SdkLogRecord): void
}

/** An OTel log exporter to Log Service, for BatchLogRecordProcessor or SimpleLogRecordProcessor. */
export declare class LoghoseLogExporter extends OtelSink implements LogRecordExporter {
  export(logs: ReadableLogRecord[], resultCallback: (result: ExportResult) => void): void
}

/** The fields and time (Unix seconds) a record is stored with. */
export declare function layout(record: ReadableLogRecord): { fields: LoghoseOtelFields; time: number }
