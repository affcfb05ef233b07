// The bench's current figures are one generated table (docs/generated/bench-figures.md): what the
// reports in bench/results/ give, the newest run of each measure with its date, machine and the
// ratios to the baseline it measured in the same run; `walletflow bench` writes it after each run
// that reports there. The docs link to it for today's figures rather than copy them: the
// benchmarks' "Current figures" holds none of its own, and a throughput figure elsewhere is dated
// history (a date, or a link to a dated measurement) or the table's.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  benchFigures,
  benchFiguresFile,
  formatBenchFigures,
  measuresOf,
  readBenchReports,
} from '../../harness/bench-figures.ts';

const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

/** A funding-levels report as the bench writes it, with only what the table reads. */
const levelsReport = (date: string, perSecond: number) => ({
  name: `run-${date}`,
  date,
  machine: { cpus: 2, cpuModel: 'AMD EPYC', memoryGiB: 23.5, node: 'v24.21.0' },
  temporal: 'dev-server',
  workers: 1,
  levels: [
    {
      concurrency: 32,
      walletflow: { perSecond, latencyMs: { p50: 700, p99: 1900 }, cpuMsPerItem: 36 },
      baseline: { perSecond: 6000 },
      ratio: perSecond / 6000,
    },
  ],
});

describe("the bench's figures", () => {
  it('takes the newest run of each measure, with its date, machine and the ratio to its own baseline', () => {
    const rows = benchFigures([
      { file: 'bench/results/a.json', report: levelsReport('2026-11-24T10:00:00.000Z', 30) },
      { file: 'bench/results/b.json', report: levelsReport('2026-11-25T10:00:00.000Z', 36) },
      { file: 'bench/results/soak.json', report: { date: '2026-11-26T00:00:00.000Z', violations: [] } },
    ]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      measure: 'single fundings, dev server, 1 worker',
      date: '2026-11-25T10:00:00.000Z',
      file: 'bench/results/b.json',
      machine: '2 cores (AMD EPYC), 23.5 GiB, Node v24.21.0',
    });
    expect(rows[0]!.figures).toContain('**36 fundings/s**');
    expect(rows[0]!.againstBaseline).toBe('the wallet client alone: 6,000/s at 32 (0.6%)');
    // The soak's reports are not the bench's.
    expect(measuresOf({ date: '2026-11-26', violations: [] })).toEqual([]);
  });

  it('keeps a run with lanes off as a measure of its own: a comparison run never stands for the default', () => {
    const off = { ...levelsReport('2026-11-26T10:00:00.000Z', 9), options: { fundingLanes: 'off' } };
    const auto = { ...levelsReport('2026-11-25T10:00:00.000Z', 45), options: { fundingLanes: 'auto' } };
    const rows = benchFigures([
      { file: 'bench/results/auto.json', report: auto },
      { file: 'bench/results/off.json', report: off },
    ]);
    expect(rows.map((row) => [row.measure, row.file])).toEqual([
      ['single fundings, dev server, 1 worker', 'bench/results/auto.json'],
      ['single fundings, dev server, 1 worker, lanes off', 'bench/results/off.json'],
    ]);
  });

  it(`is what the reports in bench/results/ give (run npm run bench:figures when this fails): ${benchFiguresFile}`, () => {
    const generated = formatBenchFigures(benchFigures(readBenchReports(root)));
    expect(read(benchFiguresFile) === generated, `${benchFiguresFile} is stale: run npm run bench:figures`).toBe(true);
    // Every kind of run the bench has is in it.
    const measures = benchFigures(readBenchReports(root)).map((row) => row.measure);
    for (const measure of [
      'single fundings',
      "an approved funding's history",
      'a burst',
      'the session URL',
      "the worker's resident memory",
      'flat with data',
      'a funding batch',
      'TOKEN items',
      'storing a batch',
      "a day's settlement",
      "the ops console's pages",
    ]) {
      expect(
        measures.some((each) => each.includes(measure)),
        measure,
      ).toBe(true);
    }
  });

  it('is written by every run that reports into bench/results/', () => {
    const bench = read('harness/bench.ts');
    // Each report the bench writes, then the table.
    expect(bench.match(/await writeFile\(jsonPath/g)).toHaveLength(2);
    expect(bench.match(/await updateFigures\(settings\);/g)).toHaveLength(2);
  });

  it('is where the docs send a reader for current figures, and the only place they are', () => {
    const benchmarks = read('docs/benchmarks.md');
    const current = /## Current figures\n([\s\S]*?)\n## /.exec(benchmarks)?.[1] ?? '';
    expect(current).toContain('(generated/bench-figures.md)');
    // No figure of its own: no number but the link's.
    expect(current.replace(/\([^)]*\)/g, '').match(/\d/g)).toBeNull();
    const docs = ['README.md', ...readdirMarkdown('docs')].filter((file) => !file.startsWith('docs/generated/'));
    const wrong: string[] = [];
    for (const file of docs) {
      for (const paragraph of read(file).split(/\n\s*\n/)) {
        // Headings aside (the section's own title).
        const text = paragraph.replace(/^#+ [^\n]*\n?/gm, '').replace(/\s*\n\s*/g, ' ');
        // "the current figures": the generated table.
        if (/current figures/i.test(text) && !text.includes('bench-figures.md'))
          wrong.push(`${file}: "current figures" without the table: ${text.slice(0, 80)}…`);
        // A throughput figure outside benchmarks.md is dated history, or the table's.
        if (
          file !== 'docs/benchmarks.md' &&
          /\d[\d,.–]* (?:items|fundings|requests|calls|retrieves|sessions)?(?:\/s\b| a second| per second)/.test(
            text,
          ) &&
          !/20\d\d-\d\d-\d\d/.test(text)
        ) {
          wrong.push(`${file}: a rate with no date: ${text.slice(0, 80)}…`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});

function readdirMarkdown(dir: string): string[] {
  return readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md'))
    .map((file) => `${dir}/${file}`);
}
