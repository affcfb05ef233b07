// The deployment files, checked without Docker (no engine runs here): docker-compose.yml has its
// services, ports and a scalable worker running the compiled JavaScript (the names it passes are
// test/unit/configuration-names.test.ts's); the Dockerfile is multi-stage on Debian slim (no
// musl: Temporal's bridge) with Node.js of .nvmrc's major, and its runtime stage runs dist/ with
// production dependencies only; .nvmrc, the `node` devDependency and `engines` agree.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { environmentSchema } from '../../lib/config.ts';
import {
  apiEnvironment,
  apiNodeOptions,
  findJemalloc,
  jemallocCandidates,
  serviceEnvironment,
  serviceNodeOptions,
} from '../../stack/child-process.ts';

const root = path.resolve(import.meta.dirname, '../..');

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, unknown>;
  ports?: string[];
  profiles?: string[];
  container_name?: string;
  restart?: string;
  depends_on?: Record<string, unknown> | string[];
}

const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
};
const services = compose.services;

describe('docker-compose.yml', () => {
  it('has PostgreSQL, Temporal on it, the Temporal UI, migrations, the API, the worker and the sandbox', () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(['postgres', 'temporal', 'temporal-ui', 'migrate', 'api', 'worker', 'sandbox']),
    );
    expect(services.temporal?.environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgres' });
    expect(Number(services.temporal?.environment?.NUM_HISTORY_SHARDS)).toBeGreaterThan(1);
    expect(services.sandbox?.profiles).toEqual(['sandbox']);
  });

  it('publishes only the API on every interface; Temporal stays internal, the UI and the sandbox (under its profile) on loopback', () => {
    const published = Object.entries(services).flatMap(([name, service]) =>
      (service.ports ?? []).map((port) => [name, String(port)] as const),
    );
    const onEveryInterface = published.filter(([, port]) => !port.startsWith('127.0.0.1:'));
    expect(onEveryInterface).toEqual([['api', '3000:3000']]);
    expect(services.temporal?.ports).toBeUndefined();
    expect(services['temporal-ui']?.ports).toEqual(['127.0.0.1:8080:8080']);
    expect(services.sandbox?.ports).toEqual(['127.0.0.1:4010:4010']);
    expect(services.sandbox?.profiles).toEqual(['sandbox']);
    // The codec endpoint decrypts payloads: beside the UI, on loopback, under its own profile.
    expect(services['codec-server']?.ports).toEqual(['127.0.0.1:8081:8081']);
    expect(services['codec-server']?.profiles).toEqual(['codec']);
  });

  it('runs walletflow in production by default, with payload encryption and the production keys required', () => {
    for (const name of ['api', 'worker', 'worker-next', 'migrate']) {
      const environment = services[name]?.environment ?? {};
      expect(environment.NODE_ENV, name).toBe('${NODE_ENV:-production}');
      expect(String(environment.PAYLOAD_ENCRYPTION_KEYS), name).toMatch(/^\$\{PAYLOAD_ENCRYPTION_KEYS:\?/);
      expect(String(environment.IDEMPOTENCY_FINGERPRINT_KEY), name).toMatch(/^\$\{IDEMPOTENCY_FINGERPRINT_KEY:\?/);
      expect(String(environment.PUBLIC_URL), name).toMatch(/^\$\{PUBLIC_URL:\?/);
      // Plaintext to the internal Temporal is said out loud (production refuses it otherwise).
      expect(environment.TEMPORAL_TLS_DISABLED, name).toBe('${TEMPORAL_TLS_DISABLED:-true}');
    }
  });

  it('lets the worker scale (no fixed name, no published port)', () => {
    expect(services.worker?.container_name).toBeUndefined();
    expect(services.worker?.ports).toBeUndefined();
    // With the young generation capped as the stacks run their workers (stack/child-process.ts).
    expect(services.worker?.command).toEqual(['node', serviceNodeOptions, 'dist/worker/main.js']);
    // And on jemalloc, at the path the image links it to (the first place the stacks look).
    expect(services.worker?.environment?.LD_PRELOAD).toBe(jemallocCandidates[0]);
  });

  it('deploys a new build beside the running one: worker-next (profile deploy) joins the same deployment and takes nothing until promoted', () => {
    const worker = services.worker?.environment ?? {};
    const next = services['worker-next']?.environment ?? {};
    expect(services['worker-next']?.profiles).toEqual(['deploy']);
    expect(services['worker-next']?.command).toEqual(services.worker?.command);
    expect(services['worker-next']?.ports).toBeUndefined();
    expect(next.WORKER_DEPLOYMENT_NAME).toBe(worker.WORKER_DEPLOYMENT_NAME);
    expect(next.WORKER_PROMOTE).toBe('never');
    // The running workers promote only the deployment's first build: a restart or a scale never moves traffic.
    expect(worker.WORKER_PROMOTE).toBe('${WORKER_PROMOTE:-first-deploy}');
    for (const value of ['first-deploy', 'never']) {
      expect(environmentSchema.shape.WORKER_PROMOTE.safeParse(value).success, value).toBe(true);
    }
    // Each runs its own image tag: the old build keeps its workers while its pinned runs drain.
    expect(services.worker?.image).toMatch(/\$\{WORKER_VERSION:-latest\}/);
    expect(services['worker-next']?.image).toMatch(/\$\{WORKER_NEXT_VERSION:-next\}/);
    // Once promoted, worker-next is its build's only workers: one that exits comes back on its own, as the others do
    // (found by a read: none had a restart policy, and a plain `up -d` does not start the deploy profile).
    for (const name of ['postgres', 'temporal', 'api', 'worker', 'worker-next'])
      expect(services[name]?.restart, name).toBe('unless-stopped');
  });

  it('runs a deploy’s configuration check, migrations and deploy commands on the new build’s image, the check first, and rolls the API to it after the promotion (docs/running-at-scale.md)', () => {
    // migrate, api and codec-server share a tag a deploy moves; worker and worker-next have their own.
    for (const name of ['migrate', 'api', 'codec-server'])
      expect(services[name]?.image, name).toBe('walletflow:${WALLETFLOW_VERSION:-latest}');
    const doc = readFileSync(path.join(root, 'docs/running-at-scale.md'), 'utf8');
    const blocks = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
    const deploys = blocks.filter((block) => /deploy promote/.test(block));
    expect(deploys.length).toBeGreaterThanOrEqual(2);
    for (const block of deploys) {
      const lines = block.split('\n').filter((line) => /docker compose/.test(line));
      // Every compose command of the deploy names the new build's tag for the services it runs (a `run` of migrate or
      // api, or worker-next's `up`, whose start runs migrate first): the running release's image has the old
      // migrations, and a release from before Worker Versioning has no `deploy` command.
      for (const line of lines.filter((line) => /run --rm (--no-deps )?(migrate|api)|up -d .*worker-next/.test(line)))
        expect(line, line).toMatch(/WALLETFLOW_VERSION=2 /);
      // The new build's configuration check comes first: a setting it refuses stops the deploy before the migrations
      // (found by a read: the workers of a build whose production checks grew exited 78 after the schema changed).
      const checked = lines.findIndex((line) => /WALLETFLOW_VERSION=2 .*config check/.test(line));
      const migrated = lines.findIndex((line) => /run --rm (--no-deps )?migrate/.test(line));
      expect(checked, block).toBeGreaterThanOrEqual(0);
      expect(checked, block).toBeLessThan(migrated);
      // The API moves to the new build after the promotion, never before (the new API may start workflows the old
      // workers do not have).
      const promoted = lines.findIndex((line) => /deploy promote/.test(line));
      const rolled = lines.findIndex((line) => /WALLETFLOW_VERSION=2 docker compose up -d (--no-deps )?api/.test(line));
      expect(rolled, block).toBeGreaterThan(promoted);
      // No command of a deploy recreates what it did not name (found by a read: the new compose file's `postgres`
      // differs, and a `run` or an `up` without --no-deps restarted PostgreSQL under the running release).
      for (const line of lines.filter((line) => /docker compose .*\b(run|up)\b/.test(line)))
        expect(line, line).toMatch(/--no-deps/);
      // The new build's workers: as many copies as worker runs, as after the promotion they carry every new run, and
      // their tag kept in .env first, so one brought back later is of this build (found by a read: the first versioned
      // deploy started one copy, and a worker-next started again without the variable ran the `next` tag).
      const all = block.split('\n');
      const started = all.findIndex((line) => /up -d .*worker-next/.test(line));
      const kept = all.findIndex((line) => /^echo WORKER_NEXT_VERSION=2 >> \.env/.test(line));
      expect(all[started], block).toMatch(/--scale worker-next=\d+ worker-next/);
      expect(kept, block).toBeGreaterThanOrEqual(0);
      expect(kept, block).toBeLessThan(started);
    }
  });

  it('runs the compiled JavaScript of the image (no TypeScript compiled at start)', () => {
    expect(services.migrate?.command).toEqual(['node', 'dist/cli/main.js', 'migrate']);
    expect(services.sandbox?.command).toEqual(['node', 'dist/sandbox/main.js']);
    expect(services.api?.command).toBeUndefined(); // the image's CMD
    // The API on jemalloc, as the stacks run it (stack/child-process.ts); its CMD caps the old and young generations
    // (below).
    expect(services.api?.environment?.LD_PRELOAD).toBe(jemallocCandidates[0]);
    for (const [name, service] of Object.entries(services)) {
      expect(JSON.stringify(service.command ?? []), name).not.toMatch(/tsx|\.ts\b/);
    }
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  it('is multi-stage on Debian slim and runs as a non-root user', () => {
    const bases = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((match) => match[1]);
    expect(bases.length).toBeGreaterThanOrEqual(2);
    for (const base of bases.filter((image) => image?.startsWith('node:'))) expect(base).toMatch(/bookworm-slim$/);
    expect(bases.some((image) => /alpine/i.test(image ?? ''))).toBe(false);
    expect(dockerfile).toMatch(/^USER walletflow$/m);
    expect(dockerfile).toMatch(/WORKFLOW_BUNDLE_PATH=/);
  });

  const nvmrc = readFileSync(path.join(root, '.nvmrc'), 'utf8').trim();
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    engines: { node: string };
    devDependencies: Record<string, string>;
  };

  it('uses the Node.js major of .nvmrc, which the `node` devDependency pins and `engines` names', () => {
    const major = nvmrc.split('.')[0];
    expect(major).toBe('24');
    expect(manifest.devDependencies.node).toBe(nvmrc);
    expect(manifest.engines.node).toBe(`>=${major}`);
    const bases = [...dockerfile.matchAll(/^FROM\s+(node:\S+)/gm)].map((match) => match[1]);
    expect(bases.length).toBeGreaterThanOrEqual(2);
    for (const base of bases) expect(base).toBe(`node:${major}-bookworm-slim`);
  });

  it('builds dist/ in a build stage and runs it with production dependencies only', () => {
    const stages = dockerfile.split(/^(?=FROM )/m).filter((stage) => stage.startsWith('FROM '));
    const runtime = stages.at(-1)!;
    expect(dockerfile).toMatch(/^RUN npm run build$/m);
    // The build stage installs exactly the lockfile (no version drifts in at build time).
    expect(stages[0]).toMatch(/^RUN npm ci\b/m);
    expect(stages[0]).not.toMatch(/^RUN npm install\b/m);
    // The runtime's dependencies are exactly the lockfile's too.
    expect(dockerfile).toMatch(/^RUN npm ci --omit=dev --omit=optional --ignore-scripts\b/m);
    expect(dockerfile).not.toMatch(/^RUN npm install\b/m);
    expect(runtime).toMatch(/^COPY --from=build \/app\/dist dist$/m);
    expect(runtime).toMatch(/^COPY --from=production-deps \/app\/node_modules node_modules$/m);
    expect(runtime).toContain(`CMD ["node", "${apiNodeOptions}", "${serviceNodeOptions}", "dist/api/main.js"]`);
    // jemalloc installed and linked where compose's worker preloads it.
    expect(runtime).toMatch(/apt-get install -y --no-install-recommends libjemalloc2/);
    expect(runtime).toContain(`/usr/local/lib/libjemalloc.so.2`);
    expect(runtime).not.toMatch(/tsx|--import|npm install|\.ts\b/);
  });
});

describe("the stacks' API and worker environment", () => {
  it('preloads jemalloc where the machine has it, after any LD_PRELOAD already set, and only once', () => {
    const jemalloc = '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2';
    expect(serviceEnvironment({}, jemalloc)).toMatchObject({ LD_PRELOAD: jemalloc, NODE_OPTIONS: serviceNodeOptions });
    expect(serviceEnvironment({ LD_PRELOAD: '/opt/other.so' }, jemalloc).LD_PRELOAD).toBe(`/opt/other.so ${jemalloc}`);
    expect(serviceEnvironment({ LD_PRELOAD: jemalloc }, jemalloc).LD_PRELOAD).toBe(jemalloc);
    expect(findJemalloc((candidate) => candidate === jemalloc)).toBe(jemalloc);
    expect(findJemalloc(() => false)).toBeNull();
  });

  it("caps the API's old generation before the operator's NODE_OPTIONS (theirs wins), and not the worker's", () => {
    const jemalloc = '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2';
    expect(apiEnvironment({}, jemalloc)).toMatchObject({
      LD_PRELOAD: jemalloc,
      NODE_OPTIONS: `${apiNodeOptions} ${serviceNodeOptions}`,
    });
    expect(apiEnvironment({ NODE_OPTIONS: '--max-old-space-size=512' }, null).NODE_OPTIONS).toBe(
      `${apiNodeOptions} --max-old-space-size=512 ${serviceNodeOptions}`,
    );
    expect(serviceEnvironment({}, jemalloc).NODE_OPTIONS).toBe(serviceNodeOptions);
  });

  it('runs on glibc without the library, and leaves NODE_OPTIONS given to it in place', () => {
    const env = serviceEnvironment({ NODE_OPTIONS: '--enable-source-maps' }, null);
    expect(env.LD_PRELOAD).toBeUndefined();
    expect(env.NODE_OPTIONS).toBe(`--enable-source-maps ${serviceNodeOptions}`);
  });
});
