// Waiting for a condition in a test: the local stack's own poll (`src/local-cluster/wait.ts`), so a
// test waits, times out and names what it waited for as the stack's start-up does.
export { waitFor } from '../../src/local-cluster/wait.ts';
