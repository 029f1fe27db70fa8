// The heap a bench process holds, measured after two full collections (needs `node --expose-gc`).
export function heapAfterGc(): number {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) throw new Error('run with --expose-gc');
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}
