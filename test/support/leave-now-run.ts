// A run as the soak and the bench make one (harness/cleanup.ts), for test/integration/leave-now.test.ts: it
// answers stop signals as they do and supervises one child, in a process group of its own, that
// ignores SIGTERM; it prints the child's pid once the child is up.
import { createWriteStream } from 'node:fs';
import { createCleanup, exitOnStopSignals } from '../../harness/cleanup.ts';
import { supervise } from '../../harness/local-stack.ts';

const log = (line: string) => process.stdout.write(`${line}\n`);
const cleanup = createCleanup(log);
exitOnStopSignals(cleanup, log, 'soak');
const child = supervise(
  'stubborn',
  ['-e', "process.on('SIGTERM', () => {}); console.log('up'); setInterval(() => {}, 1000);"],
  { env: process.env, logFile: createWriteStream('/dev/null'), log, closing: () => false, cleanup },
);
child.start();
await child.waitForOutput(/up/, 30_000);
log(`child ${child.pid()}`);
setInterval(() => undefined, 1000);
