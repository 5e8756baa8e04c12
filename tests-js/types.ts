// Compiled with `tsc --noEmit` only: checks that the facade's types describe real usage.
import { Emulator, Producer, DeliveryError, type DeliveryReport } from '..'

async function main(): Promise<void> {
  const emu = new Emulator({ shardCount: 2 })
  const producer = new Producer({ ...emu.producerOptions('proj', 'logs'), lingerMs: 10, tags: { env: 'dev' }, compression: 'zstd' })
  producer.on('delivery', (reports: DeliveryReport[]) => reports.length)
  producer.send({ level: 'INFO', n: 1, ok: true, raw: Buffer.from('x') }, { topic: 't', shardKey: 'ff' })
  producer.send([['k', 'v']])
  const report: DeliveryReport = await producer.sendAsync({ k: 'v' })
  const left: number = await producer.flush(1000)
  const closed = await producer.close({ timeoutMs: 1000 })
  const undelivered: number = closed.undelivered
  const err = new DeliveryError('x')
  void [report, left, undelivered, err.code, producer.stats().delivered]
  emu.close()
}

void main

import pino from 'pino'
import winston from 'winston'
import LoghoseTransport = require('../node/lib/winston')
import { pinoDestination } from '..'

export function integrations(options: ConstructorParameters<typeof Producer>[0]): void {
  const transport = pino.transport({ target: 'loghose/pino', options })
  pino(transport).info({ a: { b: 1 } }, 'msg')
  const destination = pinoDestination(options)
  pino(destination).info('main thread')
  void destination.flush()
  const logger = winston.createLogger({ transports: [new LoghoseTransport({ ...options, level: 'info' })] })
  logger.info('hello', { n: 1 })
  const withProvider = new Producer({ ...options, credentialsProvider: { getCredentials: async () => ({ accessKeyId: 'a', accessKeySecret: 'b' }) }, default: String })
  withProvider.send({ when: new Date(), nested: { a: [1] }, big: 1n, none: null })
}

// loghose/otel: the processor and the exporter fit @opentelemetry/sdk-logs' own interfaces.
import { LoggerProvider, BatchLogRecordProcessor, type LogRecordProcessor } from '@opentelemetry/sdk-logs'
import { LoghoseLogRecordProcessor, LoghoseLogExporter } from '../node/lib/otel'
export async function otel(options: ConstructorParameters<typeof Producer>[0]): Promise<number> {
  const processor: LogRecordProcessor = new LoghoseLogRecordProcessor({ ...options, closeTimeoutMs: 5000 })
  const batched = new BatchLogRecordProcessor({ exporter: new LoghoseLogExporter(options) })
  const provider = new LoggerProvider({ processors: [processor, batched] })
  provider.getLogger('shop').emit({ body: 'paid', attributes: { cents: 1250 } })
  await provider.shutdown()
  // @ts-expect-error: closeTimeoutMs is a number
  void new LoghoseLogExporter({ closeTimeoutMs: 'soon' })
  return new LoghoseLogRecordProcessor(options).failures
}
