// The bench's report: its JSON shape (zod, so a test and a later comparison read it back), the
// text table the command prints (also the README's), and an SVG chart of throughput and p99
// latency per concurrency level, walletflow against the baseline.
import { z } from 'zod';
import { flatReportSchema, formatFlatTable } from './bench-flat.ts';

const percentilesSchema = z.object({ p50: z.number(), p95: z.number(), p99: z.number() });
const usageSchema = z.object({ cpuPercent: z.number(), cpuSeconds: z.number(), peakRssMiB: z.number() });
const levelRunSchema = z.object({
  completed: z.number().int(),
  seconds: z.number(),
  perSecond: z.number(),
  latencyMs: percentilesSchema,
  failed: z.number().int(),
  ranOutOfCodes: z.boolean(),
  /** CPU (% of one core) and peak memory of each process during the level. */
  processes: z.record(z.string(), usageSchema),
  /**
   * CPU time spent per completed item, ms: walletflow's API, worker(s) and Temporal (PostgreSQL not
   * counted); for the baseline, the bench process (client and sandbox). Steadier than rates on a
   * shared machine, where a starved process is slow but not more costly.
   */
  cpuMsPerItem: z.number(),
});

const historyShapeSchema = z.object({
  sampled: z.number().int(),
  events: z.number(),
  workflowTasks: z.number(),
  activityTasks: z.number(),
  markers: z.number(),
  timers: z.number(),
  searchAttributeUpserts: z.number(),
});

/**
 * CPU ms per completed item (the level's CPU time over its items): walletflow's own processes (API
 * and workers; the lean floor's worker), Temporal's, and each process's.
 */
const cpuSplitSchema = z.object({
  apiAndWorkers: z.number(),
  temporal: z.number(),
  byProcess: z.record(z.string(), z.number()).optional(),
});

export const benchReportSchema = z.object({
  name: z.string(),
  date: z.string(),
  machine: z.object({
    cpus: z.number().int(),
    cpuModel: z.string(),
    memoryGiB: z.number(),
    node: z.string(),
    platform: z.string(),
  }),
  temporal: z.enum(['dev-server', 'server']),
  workers: z.number().int().min(1),
  options: z.object({
    levels: z.array(z.number().int()),
    seconds: z.number(),
    sessionSeconds: z.number(),
    sessionConnections: z.number().int(),
    /** Seconds of quiet before each resident-memory reading; absent in reports from before it was an option: 10. */
    quietSeconds: z.number().int().optional(),
    /** FUNDING_LANES of the stack measured; absent in reports from before lanes (each funding had its own workflow). */
    fundingLanes: z.enum(['auto', 'always', 'off']).optional(),
  }),
  /** `--preload` (flat with data): the ops API on a next-to-empty database against the same after a preload. */
  flat: flatReportSchema.optional(),
  levels: z.array(
    z.object({
      concurrency: z.number().int(),
      walletflow: levelRunSchema.extend({
        retries: z.number().int(),
        stages: z.object({
          accept: z.number(),
          toCreating: z.number(),
          toExecuting: z.number(),
          toFinal: z.number(),
          walletCreate: z.number(),
          walletExecute: z.number(),
        }),
        /** The funding's own state transitions (timeline events) per approved funding. */
        transitionsPerItem: z.number().optional(),
        history: historyShapeSchema.optional(),
        /**
         * Temporal history events per approved funding, whichever run carried it (harness/bench-history.ts); absent
         * in reports from before lanes.
         */
        historyPerFunding: z
          .object({ events: z.number(), laneCarried: z.number().int(), ownWorkflows: z.number().int() })
          .optional(),
        cpuSplit: cpuSplitSchema.optional(),
      }),
      /**
       * The lean floor (harness/lean-floor/): a minimal workflow with the same two wallet calls as
       * two default activities, on the same Temporal, measured in the same run. Absent in reports
       * from before it was measured.
       */
      lean: levelRunSchema.extend({ history: historyShapeSchema, cpuSplit: cpuSplitSchema }).optional(),
      /** walletflow's API + worker CPU per funding over the lean worker's CPU per item. */
      overheadRatio: z.number().optional(),
      baseline: levelRunSchema,
      /** walletflow's fundings per second over the baseline's. */
      ratio: z.number(),
    }),
  ),
  session: z
    .object({
      connections: z.number().int(),
      seconds: z.number(),
      requestsPerSecond: z.number(),
      latencyMs: z.object({ p50: z.number(), p99: z.number() }),
      non2xx: z.number().int(),
      errors: z.number().int(),
      processes: z.record(z.string(), usageSchema),
      /** Users who opened the landing page during the run (a session storm): session URL call to money page. */
      landers: z
        .object({
          users: z.number().int(),
          toMoneyPageMs: z.object({ p50: z.number(), p99: z.number(), max: z.number() }),
          notReached: z.number().int(),
        })
        .optional(),
    })
    .nullable(),
  durationSeconds: z.number(),
  /** The burst: 1000 POST /ops/fundings at once across 100 recipients (harness/bench-burst.ts). */
  burst: z
    .object({
      requests: z.number().int(),
      recipients: z.number().int(),
      firstWave: z.record(z.string(), z.number().int()),
      serverErrors: z.number().int(),
      latencyMs: z.object({ p50: z.number(), p95: z.number(), p99: z.number() }),
      retryRounds: z.number().int(),
      accepted: z.number().int(),
      acceptedPerSecond: z.number(),
      seconds: z.number(),
    })
    .optional(),
  /** How the API and workers ran: compiled JavaScript (as in production) or the sources through tsx. */
  code: z.enum(['compiled', 'source (tsx)']).optional(),
  /**
   * Resident memory of each worker process after the quiet (options.quietSeconds) once the funding levels are done, MiB
   * (peaks: per level).
   */
  workerRssMiBAfter: z.record(z.string(), z.number()).optional(),
  /**
   * The same after the quiet once the session URL's run is done, MiB: the sessions it stored (hundreds a second) are
   * onboarded by the worker for minutes after it, so this is memory under that work, not at rest.
   */
  workerRssMiBAfterSession: z.record(z.string(), z.number()).optional(),
  /** At rest: the quiet after the worker has onboarded every session the session URL's run stored, MiB. */
  workerRssMiBAtRest: z.record(z.string(), z.number()).optional(),
  /**
   * The worker onboarding the sessions the session URL's run stored, from the quiet after the run (waitForOnboardings).
   */
  onboarding: z.object({ seconds: z.number(), pending: z.number().int(), onboardedPerSecond: z.number() }).optional(),
  /** The machine's 1-minute load average before the run and after it (the machine may be shared). */
  loadAverage: z.object({ before: z.number(), after: z.number() }).optional(),
});
export type BenchReport = z.infer<typeof benchReportSchema>;

const cpu = (usage: { cpuPercent: number } | undefined) => (usage ? `${Math.round(usage.cpuPercent)}%` : '-');
const mem = (usage: { peakRssMiB: number } | undefined) => (usage ? `${Math.round(usage.peakRssMiB)}` : '-');

/** A Markdown table: one row per level, then the session URL line and the stage medians. */
export function formatBenchTable(report: BenchReport): string {
  const workerNames = Object.keys(report.levels[0]?.walletflow.processes ?? {}).filter((name) =>
    name.startsWith('worker'),
  );
  const lines = [
    `| concurrency | walletflow fundings/s | p50 / p95 / p99 ms | baseline calls/s | baseline p50 / p99 ms | ratio | API CPU / MiB | ${workerNames.map((name) => `${name} CPU / MiB`).join(' | ')} | Temporal CPU | CPU ms per funding |`,
    `|---:|---:|---:|---:|---:|---:|---:|${workerNames.map(() => '---:|').join('')}---:|---:|`,
  ];
  for (const level of report.levels) {
    const { walletflow: w, baseline: b } = level;
    lines.push(
      `| ${level.concurrency} | ${w.perSecond}${w.failed ? ` (${w.failed} failed)` : ''} | ${w.latencyMs.p50} / ${w.latencyMs.p95} / ${w.latencyMs.p99} | ${b.perSecond} | ${b.latencyMs.p50} / ${b.latencyMs.p99} | ${(level.ratio * 100).toFixed(1)}% | ` +
        `${cpu(w.processes.api)} / ${mem(w.processes.api)} | ${workerNames.map((name) => `${cpu(w.processes[name])} / ${mem(w.processes[name])}`).join(' | ')} | ${cpu(w.processes.temporal)} | ${w.cpuMsPerItem} |`,
    );
  }
  const out = [lines.join('\n')];
  if (report.levels.some((level) => level.lean)) {
    const leanLines = [
      '| concurrency | walletflow fundings/s, p50 ms | lean floor items/s, p50 ms | CPU ms per item, API + worker: walletflow / lean (ratio) | walletflow CPU ms per funding by process | Temporal CPU ms per item: walletflow / lean | history events, workflow tasks, activity tasks, markers: walletflow / lean |',
      '|---:|---:|---:|---:|---:|---:|---:|',
    ];
    for (const level of report.levels) {
      const { walletflow: w, lean } = level;
      if (!lean) continue;
      const shape = (h: z.infer<typeof historyShapeSchema> | undefined) =>
        h ? `${h.events}, ${h.workflowTasks}, ${h.activityTasks}, ${h.markers}` : '-';
      leanLines.push(
        `| ${level.concurrency} | ${w.perSecond}, ${w.latencyMs.p50} | ${lean.perSecond}, ${lean.latencyMs.p50} | ${w.cpuSplit?.apiAndWorkers ?? '-'} / ${lean.cpuSplit.apiAndWorkers} (${level.overheadRatio ?? '-'}) | ` +
          `${
            Object.entries(w.cpuSplit?.byProcess ?? {})
              .map(([name, ms]) => `${name} ${ms}`)
              .join(', ') || '-'
          } | ` +
          `${w.cpuSplit?.temporal ?? '-'} / ${lean.cpuSplit.temporal} | ${shape(w.history)} / ${shape(lean.history)} |`,
      );
    }
    out.push(
      `Against the lean floor (a minimal workflow with the same two wallet calls, same Temporal, same run):\n\n${leanLines.join('\n')}`,
    );
  }
  if (report.workerRssMiBAfter) {
    const list = (rss: Record<string, number>) =>
      Object.entries(rss)
        .map(([name, mib]) => `${name} ${mib} MiB`)
        .join(', ');
    const quiet = `${report.options.quietSeconds ?? 10} s`;
    out.push(
      `Worker resident memory ${quiet} after the funding levels: ${list(report.workerRssMiBAfter)}` +
        `${report.workerRssMiBAfterSession ? `; ${quiet} after the session URL's run, while it onboards the sessions that run stored: ${list(report.workerRssMiBAfterSession)}` : ''}` +
        `${report.workerRssMiBAtRest ? `; at rest, ${quiet} after it onboarded them all: ${list(report.workerRssMiBAtRest)}` : ''}.`,
    );
  }
  if (report.onboarding) {
    const { onboardedPerSecond, seconds, pending } = report.onboarding;
    out.push(
      `The worker onboarded the session URL's sessions at ${onboardedPerSecond}/s over ${seconds} s after the run${pending ? `; ${pending} were still pending when the bench stopped waiting` : ', all of them'}.`,
    );
  }
  if (report.loadAverage)
    out.push(`Load average (1 min): ${report.loadAverage.before} before, ${report.loadAverage.after} after.`);
  if (report.session) {
    const s = report.session;
    out.push(
      `Session URL (POST /embedded/session), ${s.connections} connections for ${s.seconds} s: ${s.requestsPerSecond} requests/s, p50 ${s.latencyMs.p50} ms, p99 ${s.latencyMs.p99} ms` +
        `${s.non2xx || s.errors ? `, ${s.non2xx} non-2xx, ${s.errors} errors` : ''}; API CPU ${cpu(s.processes.api)}.`,
    );
  }
  out.push(
    'Where a funding’s time goes (medians, ms; request → stored → CREATING → EXECUTING → final; wallet = the sandbox’s own time per call):',
    report.levels
      .map((level) => {
        const st = level.walletflow.stages;
        return `  c=${level.concurrency}: accept ${st.accept}, → creating ${st.toCreating}, → executing ${st.toExecuting} (wallet create ${st.walletCreate}), → final ${st.toFinal} (wallet execute ${st.walletExecute})`;
      })
      .join('\n'),
  );
  if (report.flat) out.push(formatFlatTable(report.flat));
  return out.join('\n\n');
}

export interface ChartSeries {
  label: string;
  color: string;
  dashed?: boolean;
  points: Array<{ concurrency: number; perSecond: number; p99: number }>;
}

/** The report's own series: walletflow and the baseline (and more, e.g. an earlier run, when given). */
export function seriesOf(report: BenchReport, label = 'walletflow', color = '#1f6feb'): ChartSeries[] {
  return [
    {
      label,
      color,
      points: report.levels.map((level) => ({
        concurrency: level.concurrency,
        perSecond: level.walletflow.perSecond,
        p99: level.walletflow.latencyMs.p99,
      })),
    },
    {
      label: 'baseline (wallet client alone)',
      color: '#8a8f98',
      dashed: true,
      points: report.levels.map((level) => ({
        concurrency: level.concurrency,
        perSecond: level.baseline.perSecond,
        p99: level.baseline.latencyMs.p99,
      })),
    },
  ];
}

const escapeXml = (text: string) =>
  text.replace(/[<>&"]/g, (char) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[char]!);

/** Two panels (fundings/s and p99 ms, both on log scales) over the concurrency levels. */
export function renderChart(title: string, series: ChartSeries[]): string {
  const width = 960;
  const height = 420;
  const panelWidth = 400;
  const panelHeight = 280;
  const top = 70;
  const levels = [...new Set(series.flatMap((each) => each.points.map((point) => point.concurrency)))].sort(
    (a, b) => a - b,
  );
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  const panel = (left: number, heading: string, value: (point: ChartSeries['points'][number]) => number) => {
    const values = series.flatMap((each) => each.points.map(value)).filter((v) => v > 0);
    const low = 10 ** Math.floor(Math.log10(Math.min(...values, 1)));
    const high = 10 ** Math.ceil(Math.log10(Math.max(...values, 10)));
    const y = (v: number) =>
      top +
      panelHeight -
      ((Math.log10(Math.max(v, low)) - Math.log10(low)) / (Math.log10(high) - Math.log10(low))) * panelHeight;
    const x = (concurrency: number) =>
      left +
      (levels.length === 1
        ? panelWidth / 2
        : (levels.indexOf(concurrency) / (levels.length - 1)) * (panelWidth - 40) + 20);
    parts.push(
      `<text x="${left + panelWidth / 2}" y="${top - 12}" text-anchor="middle" font-weight="bold">${escapeXml(heading)}</text>`,
    );
    parts.push(
      `<rect x="${left}" y="${top}" width="${panelWidth}" height="${panelHeight}" fill="none" stroke="#d0d7de"/>`,
    );
    for (let tick = low; tick <= high; tick *= 10) {
      parts.push(
        `<line x1="${left}" x2="${left + panelWidth}" y1="${y(tick).toFixed(1)}" y2="${y(tick).toFixed(1)}" stroke="#eef1f4"/>`,
      );
      parts.push(
        `<text x="${left - 6}" y="${(y(tick) + 4).toFixed(1)}" text-anchor="end" fill="#57606a">${tick >= 1 ? tick : tick.toPrecision(1)}</text>`,
      );
    }
    for (const concurrency of levels) {
      parts.push(
        `<text x="${x(concurrency).toFixed(1)}" y="${top + panelHeight + 18}" text-anchor="middle" fill="#57606a">${concurrency}</text>`,
      );
    }
    parts.push(
      `<text x="${left + panelWidth / 2}" y="${top + panelHeight + 36}" text-anchor="middle" fill="#57606a">concurrency (requests in flight)</text>`,
    );
    for (const each of series) {
      const points = each.points
        .filter((point) => value(point) > 0)
        .map((point) => ({ x: x(point.concurrency), y: y(value(point)), v: value(point) }));
      if (points.length === 0) continue;
      parts.push(
        `<polyline fill="none" stroke="${each.color}" stroke-width="2"${each.dashed ? ' stroke-dasharray="6 4"' : ''} points="${points.map((p) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ')}"/>`,
      );
      for (const p of points) {
        parts.push(`<circle cx="${p.x.toFixed(1)}" cy="${p.y.toFixed(1)}" r="3.5" fill="${each.color}"/>`);
        parts.push(
          `<text x="${(p.x + 6).toFixed(1)}" y="${(p.y - 6).toFixed(1)}" fill="${each.color}" font-size="10">${p.v >= 100 ? Math.round(p.v) : p.v}</text>`,
        );
      }
    }
  };
  panel(70, 'throughput (per second, log scale)', (point) => point.perSecond);
  panel(540, 'p99 latency to final state (ms, log scale)', (point) => point.p99);
  series.forEach((each, index) => {
    const lx = 70 + index * 230;
    const ly = height - 22;
    parts.push(
      `<line x1="${lx}" x2="${lx + 28}" y1="${ly}" y2="${ly}" stroke="${each.color}" stroke-width="2"${each.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
    );
    parts.push(`<text x="${lx + 34}" y="${ly + 4}">${escapeXml(each.label)}</text>`);
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
