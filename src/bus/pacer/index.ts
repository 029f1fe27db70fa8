export * from './pacer.ts';
export * from './slot-claimer.ts';
export * from './slots.ts';
