export * from './backoff.ts';
export * from './consumers.ts';
export * from './dead-letter.ts';
export * from './errors.ts';
export * from './handler-runtime.ts';
export * from './partition.ts';
export * from './shutdown.ts';
