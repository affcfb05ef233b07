// `walletflow fundings list|get|cancel|resolve`: fundings through the ops API. `get` of an unknown
// funding exits 1; `resolve` resolves one parked in NEEDS_REVIEW (contract-decisions section 11).
import type { Funding } from '../client/ops-client.generated.ts';
import { exitCodes } from './exit-codes.ts';
import { findFunding } from './ops-client.ts';
import { amountText, printJson, printText, runOps, table, type OpsCommandOptions } from './output.ts';
import { listQuery, parseNote, parseOutcome, type ListOptions } from './ops-input.ts';

export function formatFunding(funding: Funding): string {
  const recipient =
    funding.recipient.type === 'CODE' ? `cash-in code ${funding.recipient.masked}` : `link ${funding.recipient.linkId}`;
  const fields = [
    ['funding', funding.fundingId],
    ['status', funding.status],
    ['recipient', recipient],
    ['amount', amountText(funding.amount)],
    ['source', funding.source.type === 'TREASURY' ? 'TREASURY' : `USER:${funding.source.partnerUserId}`],
    ['transfer', funding.transferId ?? '-'],
    ['error', funding.error ? `${funding.error.code}: ${funding.error.message}` : '-'],
    ...(funding.review
      ? [
          [
            'review',
            funding.review.resolution
              ? `resolved ${funding.review.resolution.outcome} by ${funding.review.resolution.by}: ${funding.review.resolution.note}`
              : funding.review.reason,
          ],
        ]
      : []),
    ['created', funding.createdAt],
    ['updated', funding.updatedAt],
  ];
  const timeline = [
    ['TIME', 'STATUS', 'REQUEST-REFERENCE-NO', 'DETAIL'],
    ...funding.events.map((event) => [event.at, event.status, event.requestReferenceNo ?? '-', event.detail ?? '']),
  ];
  return `${table(fields)}\n\n${table(timeline)}\n`;
}

const show = (options: OpsCommandOptions, funding: Funding) =>
  options.output === 'json' ? printJson(funding) : printText(formatFunding(funding));

export const runFundingsList = (options: OpsCommandOptions & ListOptions) =>
  runOps('fundings list', options, async (client) => {
    const { body } = await client.listFundings(listQuery(options) as Parameters<typeof client.listFundings>[0]);
    if (options.output === 'json') return printJson(body);
    const rows = [
      ['CREATED', 'FUNDING', 'STATUS', 'AMOUNT', 'RECIPIENT'],
      ...body.items.map((item) => [
        item.createdAt,
        item.fundingId,
        item.status,
        amountText(item.amount),
        item.recipient.type === 'CODE' ? item.recipient.masked : `link ${item.recipient.linkId}`,
      ]),
    ];
    printText(`${table(rows)}\n${body.nextCursor ? `next page: --cursor ${body.nextCursor}\n` : ''}`);
  });

export const runFundingsGet = (fundingId: string, options: OpsCommandOptions) =>
  runOps('fundings get', options, async (client) => {
    const funding = await findFunding(client, fundingId);
    if (!funding) {
      process.stderr.write(`walletflow fundings get: no funding ${fundingId}\n`);
      return exitCodes.failed;
    }
    show(options, funding);
  });

export const runFundingsCancel = (fundingId: string, options: OpsCommandOptions) =>
  runOps('fundings cancel', options, async (client) => show(options, (await client.cancelFunding({ fundingId })).body));

export const runFundingsResolve = (
  fundingId: string,
  options: OpsCommandOptions & { outcome: string; note: string; actor?: string },
) =>
  runOps('fundings resolve', options, async (client) => {
    const body = {
      outcome: parseOutcome(options.outcome, ['APPROVED', 'FAILED'] as const),
      note: parseNote(options.note),
    };
    show(
      options,
      (await client.resolveFunding({ fundingId, body, ...(options.actor ? { opsActor: options.actor } : {}) })).body,
    );
  });
