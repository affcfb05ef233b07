// Where walletflow's files are, whether it runs from its TypeScript sources (tsx) or compiled to
// JavaScript under dist/ (`npm run build`, the production image): the project root (package.json,
// prisma/, .walletflow/) and the root of the running code (the project root, or dist/).
import { cpSync, existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** True when this code runs compiled (dist/…/*.js), false when it runs from its .ts sources. */
export const runsCompiled = import.meta.url.endsWith('.js');

/** The root of the running code: the project root for sources, dist/ for compiled code. */
export const codeRoot = path.resolve(here, '..');

/** The project root: the nearest folder above this file that holds package.json. */
export const projectRoot = findProjectRoot(codeRoot);

function findProjectRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return start;
  }
}

/**
 * The Node.js arguments that run one of walletflow's entry points (`worker/main.ts`), as this code
 * runs: its compiled file under dist/, or its source through tsx's loader.
 */
export function entryArgs(entry: string): string[] {
  return runsCompiled
    ? [path.join(codeRoot, entry.replace(/\.ts$/, '.js'))]
    : ['--import', 'tsx', path.join(codeRoot, entry)];
}

/**
 * Copies the browser assets the API serves from beside its modules (every `api/<area>/assets/`
 * folder: the docs viewer's, the landing pages', the console's) into compiled code at `outDir`,
 * which tsc does not: one list for `npm run build` and the bench's build, found, not written down.
 */
export function copyBrowserAssets(outDir: string): string[] {
  const areas = readdirSync(path.join(projectRoot, 'api'), { withFileTypes: true }).filter(
    (entry) => entry.isDirectory() && existsSync(path.join(projectRoot, 'api', entry.name, 'assets')),
  );
  return areas.map((area) => {
    const folder = path.join('api', area.name, 'assets');
    cpSync(path.join(projectRoot, folder), path.join(outDir, folder), { recursive: true });
    return folder;
  });
}
