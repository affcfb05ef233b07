// The on-call files under deploy/ use only series walletflow exports: every metric name in the
// Prometheus alert rules (deploy/prometheus/alerts.yml) and the Grafana dashboard
// (deploy/grafana/walletflow.json) is registered by lib/metrics.ts (with Node's default series) or
// lib/workload-gauges.ts, or is Prometheus's own `up`; every label they match on is one of that
// series' labels (or a target label); every rule links a runbook section that exists.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createMetrics } from '../../lib/metrics.ts';
import { registerWorkloadGauges, type Workload } from '../../lib/workload-gauges.ts';

const root = path.resolve(import.meta.dirname, '../..');

/** Series Prometheus makes itself, with their labels. */
const prometheusSeries: Record<string, string[]> = { up: [] };
/** Labels a scrape adds to every series. */
const targetLabels = ['job', 'instance'];

const promqlWords = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'count',
  'stddev',
  'stdvar',
  'topk',
  'bottomk',
  'quantile',
  'group',
  'count_values',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'rate',
  'irate',
  'increase',
  'delta',
  'idelta',
  'deriv',
  'histogram_quantile',
  'absent',
  'absent_over_time',
  'avg_over_time',
  'max_over_time',
  'min_over_time',
  'sum_over_time',
  'count_over_time',
  'clamp_min',
  'clamp_max',
  'abs',
  'ceil',
  'floor',
  'round',
  'time',
  'vector',
  'scalar',
  'label_replace',
  'label_join',
  'inf',
  'nan',
  'le',
]);

export interface SeriesUse {
  name: string;
  labels: string[];
}

/** Metric names (with the labels matched on each) in a PromQL expression. */
export function seriesIn(expression: string): SeriesUse[] {
  const uses: SeriesUse[] = [];
  // No strings (label values), no ranges or offsets' durations, no grouping clauses' label lists.
  const text = expression
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  for (const match of text.matchAll(/([A-Za-z_:][\w:]*)\s*(\{[^}]*\})?\s*(\()?/g)) {
    const [, name = '', matchers, call] = match;
    if (call && !matchers) continue; // a function or an aggregation
    if (promqlWords.has(name) || /^\d/.test(name)) continue;
    const before = text.slice(0, match.index);
    if (/[\d.]$/.test(before)) continue; // 6e3, 1.5
    const labels = matchers ? [...matchers.matchAll(/([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((label) => label[1]!) : [];
    uses.push({ name, labels });
  }
  return uses;
}

/** Every series name a scrape of `registry` shows (histograms: _bucket, _sum, _count), with its labels. */
async function exported(registry: Registry): Promise<Map<string, string[]>> {
  const names = new Map<string, string[]>(Object.entries(prometheusSeries));
  for (const metric of await registry.getMetricsAsJSON()) {
    const labels = (registry.getSingleMetric(metric.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
    const type = String(metric.type);
    if (type === 'histogram') {
      names.set(`${metric.name}_bucket`, [...labels, 'le']);
      names.set(`${metric.name}_sum`, labels);
      names.set(`${metric.name}_count`, labels);
    } else if (type === 'summary') {
      names.set(metric.name, [...labels, 'quantile']);
      names.set(`${metric.name}_sum`, labels);
      names.set(`${metric.name}_count`, labels);
    } else {
      names.set(metric.name, labels);
    }
  }
  return names;
}

async function walletflowSeries(): Promise<Map<string, string[]>> {
  const metrics = createMetrics({ defaultMetrics: true });
  const empty = { byStatus: {}, oldestCreatedAt: null };
  registerWorkloadGauges(metrics.registry, async (): Promise<Workload> => ({
    funding: empty,
    payment: empty,
    onboarding: { pending: 0, oldestCreatedAt: null },
    settlements: { running: 0, oldestCreatedAt: null },
  }));
  return exported(metrics.registry);
}

function problemsOf(expressions: { where: string; expr: string }[], known: Map<string, string[]>): string[] {
  const problems: string[] = [];
  for (const { where, expr } of expressions) {
    const uses = seriesIn(expr);
    if (uses.length === 0) problems.push(`${where}: no series found in ${expr}`);
    for (const use of uses) {
      const labels = known.get(use.name);
      if (!labels) {
        problems.push(`${where}: ${use.name} is not exported`);
        continue;
      }
      for (const label of use.labels)
        if (!labels.includes(label) && !targetLabels.includes(label))
          problems.push(`${where}: ${use.name} has no label ${label}`);
    }
  }
  return problems;
}

interface Rule {
  alert: string;
  expr: string;
  annotations?: { runbook?: string; summary?: string };
}

const rules = (
  parse(readFileSync(path.join(root, 'deploy/prometheus/alerts.yml'), 'utf8')) as { groups: { rules: Rule[] }[] }
).groups.flatMap((group) => group.rules);

interface Panel {
  title: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}

const dashboard = JSON.parse(readFileSync(path.join(root, 'deploy/grafana/walletflow.json'), 'utf8')) as {
  uid: string;
  panels: Panel[];
};
const panels = (list: Panel[]): Panel[] => list.flatMap((panel) => [panel, ...panels(panel.panels ?? [])]);

describe('the PromQL series extractor', () => {
  it('finds names and matched labels, not functions, keywords, label values or durations', () => {
    expect(
      seriesIn('sum by (kind) (rate(walletflow_x_total{http_status="429", outcome=~"a|b"}[5m])) / max(up) > 6 * 3600'),
    ).toEqual([
      { name: 'walletflow_x_total', labels: ['http_status', 'outcome'] },
      { name: 'up', labels: [] },
    ]);
    expect(seriesIn('histogram_quantile(0.95, sum by (le, route) (rate(a_bucket[$__rate_interval])))')).toEqual([
      { name: 'a_bucket', labels: [] },
    ]);
    expect(seriesIn('absent(b) or c offset 5m')).toEqual([
      { name: 'b', labels: [] },
      { name: 'c', labels: [] },
    ]);
  });

  it('reports a series or a label that is not exported', async () => {
    const known = await walletflowSeries();
    expect(problemsOf([{ where: 'x', expr: 'rate(walletflow_no_such_total[5m])' }], known)).toEqual([
      'x: walletflow_no_such_total is not exported',
    ]);
    expect(problemsOf([{ where: 'x', expr: 'walletflow_fundings_in_review{kind="funding"}' }], known)).toEqual([
      'x: walletflow_fundings_in_review has no label kind',
    ]);
  });
});

describe('deploy/prometheus/alerts.yml', () => {
  it('uses only exported series and their labels', async () => {
    expect(rules.length).toBeGreaterThanOrEqual(8);
    expect(
      problemsOf(
        rules.map((rule) => ({ where: rule.alert, expr: rule.expr })),
        await walletflowSeries(),
      ),
    ).toEqual([]);
  });

  it('alerts on review, reconciliation, the oldest unfinished item, 429s and re-authorizations', () => {
    const used = new Set(rules.flatMap((rule) => seriesIn(rule.expr).map((use) => use.name)));
    for (const name of [
      'walletflow_fundings_in_review',
      'walletflow_payments_in_review',
      'walletflow_fundings_reconciling',
      'walletflow_oldest_unfinished_age_seconds',
      'walletflow_wallet_calls_total',
      'walletflow_token_refreshes_total',
    ]) {
      expect(used, name).toContain(name);
    }
  });

  it('gives every rule a summary and a runbook section of docs/runbook.md', () => {
    const runbook = readFileSync(path.join(root, 'docs/runbook.md'), 'utf8');
    const anchors = new Set(
      [...runbook.matchAll(/^#{2,3} (.+)$/gm)].map((heading) =>
        heading[1]!
          .toLowerCase()
          .replace(/[^\w\s-]/g, '')
          .replace(/\s/g, '-'),
      ),
    );
    for (const rule of rules) {
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      const [file, anchor] = (rule.annotations?.runbook ?? '').split('#');
      expect(file, rule.alert).toBe('docs/runbook.md');
      expect(anchors, `${rule.alert}: #${anchor}`).toContain(anchor);
    }
  });
});

describe('deploy/grafana/walletflow.json', () => {
  it('uses only exported series and their labels', async () => {
    const expressions = panels(dashboard.panels).flatMap((panel) =>
      (panel.targets ?? []).map((target) => ({ where: panel.title, expr: target.expr })),
    );
    expect(expressions.length).toBeGreaterThanOrEqual(10);
    expect(problemsOf(expressions, await walletflowSeries())).toEqual([]);
  });

  it('has unique panel ids and a stable uid', () => {
    const ids = panels(dashboard.panels).map((panel) => (panel as Panel & { id: number }).id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(dashboard.uid).toBe('walletflow');
  });
});
