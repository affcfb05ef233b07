// The bench's current figures: one generated markdown table (docs/generated/bench-figures.md) of
// the newest report of each measure in bench/results/, with the run's date, its machine and the
// ratios to the baseline it measured in the same run. `walletflow bench` writes it again after each
// run that reports into bench/results/ (`npm run bench:figures` writes it from the reports alone);
// docs link to it for today's figures instead of copying them, and
// test/unit/bench-figures.test.ts holds it to the reports. A report is read as it was written:
// reports from before a field existed simply lack that figure. The soak's reports (no `name`) are
// not the bench's and are left out.
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Where the reports are, and where their table goes, relative to the repository's root. */
export const benchResultsDir = 'bench/results';
export const benchFiguresFile = 'docs/generated/bench-figures.md';

/** One row: a measure, its newest run's figures, and that run. */
export interface BenchFigure {
  measure: string;
  /** Ordering of the measures in the table. */
  order: number;
  figures: string;
  /** The same run's baseline and the ratio to it; empty when the run measured none. */
  againstBaseline: string;
  date: string;
  machine: string;
  file: string;
}

// Reports are JSON as written by the bench's versions over time: read loosely.
type Json = Record<string, unknown>;
const object = (value: unknown): Json | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);
const at = (value: unknown, ...keys: string[]): unknown =>
  keys.reduce<unknown>((node, key) => object(node)?.[key], value);
const n = (value: unknown, ...keys: string[]) => num(at(value, ...keys));

/** A figure as the report has it, with thousands separated (`1,118`, `4,766.8`). */
function figure(value: number | undefined, unit = ''): string {
  if (value === undefined) return '–';
  const [whole, fraction] = String(value).split('.');
  return `${whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${fraction === undefined ? '' : `.${fraction}`}${unit}`;
}
const percent = (ratio: number | undefined) => (ratio === undefined ? '–' : `${Math.round(ratio * 1000) / 10}%`);
const times = (ratio: number | undefined) => (ratio === undefined ? '–' : `${ratio}×`);
const temporalName = (kind: unknown) => (kind === 'server' ? 'Temporal server' : 'dev server');

function machineOf(report: Json): string {
  const machine = object(report.machine);
  if (!machine) return '–';
  const memory = n(machine, 'memoryGiB');
  return `${n(machine, 'cpus') ?? '?'} cores (${String(machine.cpuModel ?? '?')}), ${memory === undefined ? '?' : `${memory} GiB`}, Node ${String(machine.node ?? '?')}`;
}

type Measure = Omit<BenchFigure, 'date' | 'machine' | 'file'>;

/** The fundings-per-second levels: each level's rate and p50, and the wallet client alone at the same level. */
function levelsMeasures(report: Json): Measure[] {
  const levels = (Array.isArray(report.levels) ? report.levels : [])
    .map(object)
    .filter((level): level is Json => level !== undefined);
  if (levels.length === 0) return [];
  // A run with lanes off or always is a comparison beside the default (auto, or no lanes before they came):
  // a measure of its own.
  const lanes = at(report, 'options', 'fundingLanes');
  const mode = typeof lanes === 'string' && lanes !== 'auto' ? `, lanes ${lanes}` : '';
  const where = `${temporalName(report.temporal)}, ${n(report, 'workers') ?? 1} worker${n(report, 'workers') === 1 ? '' : 's'}${mode}`;
  const measures: Measure[] = [];
  const last = levels.at(-1)!;
  const split = object(at(last, 'walletflow', 'cpuSplit', 'byProcess'));
  measures.push({
    measure: `single fundings, ${where}`,
    order: 10 + (report.temporal === 'server' ? 1 : 0) + (n(report, 'workers') ?? 1) / 10 + (mode ? 0.01 : 0),
    figures:
      levels
        .map(
          (level) =>
            `${n(level, 'concurrency')} in flight: **${figure(n(level, 'walletflow', 'perSecond'))} fundings/s**, p50 ${figure(n(level, 'walletflow', 'latencyMs', 'p50'), ' ms')}, p99 ${figure(n(level, 'walletflow', 'latencyMs', 'p99'), ' ms')}`,
        )
        .join('; ') +
      `; CPU ${figure(n(last, 'walletflow', 'cpuMsPerItem'), ' ms')} per funding at ${n(last, 'concurrency')}${
        split
          ? ` (${Object.entries(split)
              .map(([name, ms]) => `${name} ${figure(num(ms))}`)
              .join(' + ')})`
          : ''
      }`,
    againstBaseline: `the wallet client alone: ${levels.map((level) => `${figure(n(level, 'baseline', 'perSecond'))}/s at ${n(level, 'concurrency')} (${percent(n(level, 'ratio'))})`).join(', ')}`,
  });
  // A funding's own workflow, from the last level that sampled one (a level whose fundings lanes
  // carried has none to sample); every workflow together per funding, level by level.
  const sampledLevel = levels.filter((level) => (n(level, 'walletflow', 'history', 'sampled') ?? 1) > 0).at(-1);
  const history = object(at(sampledLevel ?? last, 'walletflow', 'history'));
  const lean = object(at(sampledLevel ?? last, 'lean', 'history'));
  const perFunding = levels
    .filter((level) => object(at(level, 'walletflow', 'historyPerFunding')))
    .map(
      (level) =>
        `${figure(n(level, 'walletflow', 'historyPerFunding', 'events'))} at ${n(level, 'concurrency')} in flight (${figure(n(level, 'walletflow', 'historyPerFunding', 'laneCarried'))} of ${figure(n(level, 'walletflow', 'completed'))} carried by lanes)`,
    );
  if (history) {
    const count = (h: Json, key: string, noun: string) => `${figure(n(h, key))} ${noun}${n(h, key) === 1 ? '' : 's'}`;
    const shape = (h: Json) =>
      [
        count(h, 'events', 'event'),
        count(h, 'workflowTasks', 'workflow task'),
        count(h, 'activityTasks', 'activity task'),
        count(h, 'markers', 'marker'),
      ].join(', ');
    measures.push({
      measure: `an approved funding's history${mode}`,
      order: 20 + (mode ? 0.01 : 0),
      figures: `its own workflow${sampledLevel ? ` at ${n(sampledLevel, 'concurrency')} in flight` : ''}: ${shape(history)}${perFunding.length > 0 ? `; every workflow's events per funding: ${perFunding.join(', ')}` : ''}`,
      againstBaseline: lean
        ? `the lean floor (the same two wallet calls as two activities, same Temporal): ${shape(lean)}; CPU ms per item, API + worker, ${figure(n(last, 'walletflow', 'cpuSplit', 'apiAndWorkers'))} against ${figure(n(last, 'lean', 'cpuSplit', 'apiAndWorkers'))} (${times(n(last, 'overheadRatio'))})`
        : '',
    });
  }
  const burst = object(report.burst);
  if (burst) {
    measures.push({
      measure: `a burst of ${figure(n(burst, 'requests'))} \`POST /ops/fundings\` across ${figure(n(burst, 'recipients'))} recipients`,
      order: 30,
      figures: `first answers ${Object.entries(object(burst.firstWave) ?? {})
        .map(([status, count]) => `${figure(num(count))} × ${status}`)
        .join(
          ', ',
        )}; ${figure(n(burst, 'serverErrors'))} 5xx; p99 ${figure(n(burst, 'latencyMs', 'p99'), ' ms')}; ${figure(n(burst, 'acceptedPerSecond'))} accepted/s`,
      againstBaseline: '',
    });
  }
  const session = object(report.session);
  if (session) {
    const landers = object(session.landers);
    const onboarding = object(report.onboarding);
    measures.push({
      measure: `the session URL, ${figure(n(session, 'connections'))} connections, ${temporalName(report.temporal)}`,
      order: 40 + (report.temporal === 'server' ? 1 : 0),
      figures:
        `**${figure(n(session, 'requestsPerSecond'))} requests/s**, p50 ${figure(n(session, 'latencyMs', 'p50'), ' ms')}, p99 ${figure(n(session, 'latencyMs', 'p99'), ' ms')}, ${figure(n(session, 'non2xx'))} non-2xx` +
        (landers
          ? `; ${figure(n(landers, 'users'))} users opening the landing page meanwhile: the money page p99 ${figure(n(landers, 'toMoneyPageMs', 'p99'), ' ms')} after the session URL`
          : '') +
        (onboarding ? `; the sessions onboarded at ${figure(n(onboarding, 'onboardedPerSecond'))}/s afterwards` : ''),
      againstBaseline: '',
    });
  }
  const after = object(report.workerRssMiBAfter);
  if (after) {
    const list = (rss: Json | undefined) =>
      Object.entries(rss ?? {})
        .map(([name, mib]) => `${name} ${figure(num(mib), ' MiB')}`)
        .join(', ');
    measures.push({
      measure: `the worker's resident memory, ${temporalName(report.temporal)}`,
      order: 50 + (report.temporal === 'server' ? 1 : 0),
      figures:
        `${list(after)} after the levels` +
        (report.workerRssMiBAfterSession
          ? `; ${list(object(report.workerRssMiBAfterSession))} while it onboards the session URL's sessions`
          : '') +
        (report.workerRssMiBAtRest ? `; ${list(object(report.workerRssMiBAtRest))} at rest after onboarding them` : ''),
      againstBaseline: '',
    });
  }
  const flat = object(report.flat);
  if (flat) {
    const lists = object(at(flat, 'ratio', 'listP99')) ?? {};
    measures.push({
      measure: `flat with data (${figure(n(flat, 'options', 'fundings'))} fundings, ${figure(n(flat, 'options', 'payments'))} payments preloaded)`,
      order: 60,
      figures: `\`POST /ops/fundings\` p50 ${figure(n(flat, 'preloaded', 'post', 'latencyMs', 'p50'), ' ms')}; \`GET /ops/fundings?status=…\` p99 ${Object.keys(
        lists,
      )
        .map((status) => `${status} ${figure(n(flat, 'preloaded', 'list', status, 'latencyMs', 'p99'), ' ms')}`)
        .join(', ')}`,
      againstBaseline: `the same on a small database: POST p50 × ${figure(n(flat, 'ratio', 'postP50'))}, lists' p99 × ${Object.values(
        lists,
      )
        .map((ratio) => figure(num(ratio)))
        .join(', ')}`,
    });
  }
  return measures;
}

/** `--batch`: one batch against single fundings at 32 in flight, in the same run. */
function batchMeasures(report: Json): Measure[] {
  const batch = object(report.batch);
  const single = object(report.single);
  if (!batch || !single) return [];
  return [
    {
      measure: `a funding batch of ${figure(n(batch, 'items'))} items, ${temporalName(report.temporal)}`,
      order: 70 + (report.temporal === 'server' ? 1 : 0),
      figures: `**${figure(n(batch, 'itemsPerSecond'))} items/s**; CPU ${figure(n(batch, 'cpuMsPerItem'), ' ms')} per item; worker peak ${figure(n(batch, 'workerRssMiB', 'peak'), ' MiB')}; the runner's history at most ${figure(n(batch, 'history', 'largestRunEvents'))} events a run (${figure(n(batch, 'history', 'runs'))} runs); executed twice: ${figure(n(batch, 'executedTwice'))}`,
      againstBaseline: `single fundings at ${figure(n(single, 'concurrency'))} in flight: ${figure(n(single, 'perSecond'))}/s (the batch ${times(n(report, 'ratio'))})`,
    },
  ];
}

/** `--token-batch`: a batch of TOKEN items whose tokens all expired, against one of CODE items. */
function tokenBatchMeasures(report: Json): Measure[] {
  const code = object(at(report, 'code', 'batch'));
  const token = object(at(report, 'token', 'batch'));
  if (!code || !token) return [];
  return [
    {
      measure: `a batch of ${figure(n(report, 'items'))} TOKEN items whose access tokens all expired`,
      order: 80,
      figures: `**${figure(n(token, 'itemsPerSecond'))} items/s**; CPU ${figure(n(token, 'cpuMsPerItem'), ' ms')} per item; links refreshed once: ${figure(n(report, 'token', 'links', 'refreshedOnce'))}; single fundings beside it p99 ${figure(n(report, 'token', 'singles', 'latencyMs', 'p99'), ' ms')}`,
      againstBaseline: `a batch of as many CODE items: ${figure(n(code, 'itemsPerSecond'))} items/s (${times(n(report, 'ratio'))})`,
    },
  ];
}

/** `--batch-store`: a batch stored and cancelled, alone and beside single fundings. */
function batchStoreMeasures(report: Json): Measure[] {
  const store = object(report.store);
  if (!store) return [];
  const singles = (phase: string) => object(at(store, 'alongside', 'singles', phase));
  return [
    {
      measure: `storing a batch of ${figure(n(store, 'items'))} items`,
      order: 90,
      figures:
        `stored in **${figure(n(store, 'alone', 'createMs'))} ms** alone (${figure(n(store, 'alongside', 'createMs'))} ms beside single fundings), cancelled in ${figure(n(store, 'alone', 'cancelMs'))} ms; ` +
        `the API's resident memory ${figure(n(store, 'alone', 'apiRssMiB', 'before'))} → ${figure(n(store, 'alone', 'apiRssMiB', 'createPeak'), ' MiB')} during the store, ${figure(n(store, 'alone', 'apiRssMiB', 'cancelPeak'), ' MiB')} during the cancel; ` +
        `single fundings beside them: slowest ${figure(num(singles('create')?.maxMs), ' ms')} (store), ${figure(num(singles('cancel')?.maxMs), ' ms')} (cancel)`,
      againstBaseline: '',
    },
  ];
}

/** `--settlement`: a day settled, against the wallet client retrieving the same transfers alone. */
function settlementMeasures(report: Json): Measure[] {
  const run = object(report.run);
  const settlement = object(run?.settlement);
  if (!run || !settlement) return [];
  return [
    {
      measure: `a day's settlement, ${figure(n(run, 'items'))} approved fundings`,
      order: 100,
      figures: `**${figure(n(settlement, 'seconds'), ' s')}** (${figure(n(settlement, 'itemsPerSecond'))} items/s); API peak ${figure(n(settlement, 'apiPeakRssMiB'), ' MiB')}, worker peak ${figure(n(settlement, 'workerPeakRssMiB'), ' MiB')}; its CSV in ${figure(n(run, 'csv', 'seconds'), ' s')}; ${figure(n(run, 'singles', 'approved'))} of ${figure(n(run, 'singles', 'sent'))} single fundings beside it approved, the slowest answered in ${figure(n(run, 'singles', 'maxMs'), ' ms')}`,
      againstBaseline: `the wallet client alone retrieving them: ${figure(n(run, 'baseline', 'perSecond'))} retrieves/s (${times(n(run, 'ratio'))})`,
    },
  ];
}

/** `--console`: each page's p95 with the preload, against the same page on a small database. */
function consoleMeasures(report: Json): Measure[] {
  const preloaded = object(at(report, 'preloaded', 'pages'));
  const ratios = object(report.ratioP95);
  if (!preloaded || !ratios) return [];
  const p95 = Object.values(preloaded)
    .map((page) => n(page, 'latencyMs', 'p95'))
    .filter((value): value is number => value !== undefined);
  const ratioValues = Object.values(ratios)
    .map(num)
    .filter((value): value is number => value !== undefined);
  const missed = Array.isArray(report.missed) ? report.missed.length : undefined;
  return [
    {
      measure: `the ops console's pages, ${figure(n(report, 'options', 'fundings'))} fundings stored`,
      order: 110,
      figures: `p95 ${figure(Math.min(...p95), ' ms')} to ${figure(Math.max(...p95), ' ms')} over ${p95.length} pages; ${missed === 0 ? 'every page within its target' : `${figure(missed)} pages past their target`}`,
      againstBaseline: `each page's p95 on a small database: × ${figure(Math.min(...ratioValues))} to × ${figure(Math.max(...ratioValues))}`,
    },
  ];
}

/** The measures one report gives. */
export function measuresOf(report: Json): Measure[] {
  if (typeof report.name !== 'string' || typeof report.date !== 'string') return [];
  return [
    ...levelsMeasures(report),
    ...batchMeasures(report),
    ...tokenBatchMeasures(report),
    ...batchStoreMeasures(report),
    ...settlementMeasures(report),
    ...consoleMeasures(report),
  ];
}

/** The newest run of each measure among these reports (`file` as the table links it). */
export function benchFigures(reports: ReadonlyArray<{ file: string; report: unknown }>): BenchFigure[] {
  const newest = new Map<string, BenchFigure>();
  for (const { file, report } of reports) {
    const json = object(report);
    if (!json) continue;
    for (const measure of measuresOf(json)) {
      const row: BenchFigure = { ...measure, date: String(json.date), machine: machineOf(json), file };
      const known = newest.get(measure.measure);
      if (!known || known.date < row.date) newest.set(measure.measure, row);
    }
  }
  return [...newest.values()].sort((a, b) => a.order - b.order || a.measure.localeCompare(b.measure));
}

/** The generated table, as docs/generated/bench-figures.md holds it. */
export function formatBenchFigures(rows: readonly BenchFigure[]): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|') || '–';
  return [
    '<!-- Generated from bench/results/ by harness/bench-figures.ts (walletflow bench writes it after each run; npm run bench:figures from the reports alone). Do not edit: test/unit/bench-figures.test.ts compares it with the reports. -->',
    '',
    '# Bench figures',
    '',
    'The newest run of each measure `walletflow bench` reports, as written in `bench/results/`: its figures, against the baseline',
    'the same run measured, the day it ran and the machine. The machine is shared with other engineers’ runs, so rates move with',
    'its load from day to day; the ratios to the same run’s baseline, and CPU per item, move least. How each is measured, and',
    'every earlier measurement with what changed because of it, are in [benchmarks.md](../benchmarks.md).',
    '',
    '| measure | figures | against the same run’s baseline | run | machine | report |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (row) =>
        `| ${cell(row.measure)} | ${cell(row.figures)} | ${cell(row.againstBaseline)} | ${row.date.slice(0, 10)} | ${cell(row.machine)} | [${path.basename(row.file)}](../../${row.file}) |`,
    ),
    '',
  ].join('\n');
}

/** The reports of a results folder, as `bench/results/<file>` paths with their JSON. */
export function readBenchReports(root: string): Array<{ file: string; report: unknown }> {
  const dir = path.join(root, benchResultsDir);
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({
      file: `${benchResultsDir}/${file}`,
      report: JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as unknown,
    }));
}

/** Writes docs/generated/bench-figures.md from the repository's bench/results/; answers the file written. */
export async function writeBenchFigures(root: string): Promise<string> {
  const file = path.join(root, benchFiguresFile);
  await writeFile(file, formatBenchFigures(benchFigures(readBenchReports(root))));
  return file;
}
