// What the console's pages act through: the very services the ops API's routes use (built once in
// api/app.ts for both), so nothing the console does bypasses a scope, a limit, an idempotency key
// or an audit row. The pages reach the domain only through these.
import type { BatchService } from '../../fundings/batch-service.ts';
import type { CsvStreams } from '../http/csv-stream.ts';
import type { FundingService } from '../../fundings/funding-service.ts';
import type { AdjustAccount } from '../../ledger/adjustments.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import type { Database } from '../../lib/database.ts';
import type { TokenStore } from '../../links/token-store.ts';
import type { PaymentService } from '../../payments/payment-service.ts';
import type { WebhookStore } from '../../webhooks/webhook-store.ts';
import type { SettlementService } from '../ops/settlement-service.ts';
import type { LiveStreams } from './live-region.ts';

export interface ConsoleServices {
  database: Database;
  fundings: FundingService;
  payments: PaymentService;
  batches: BatchService;
  ledger: Ledger;
  /** An adjustment (POST /ops/accounts/{account}/adjustments's). */
  adjust: AdjustAccount;
  /** A day's settlement: its runs and stored reports (GET /ops/settlements/{date}'s). */
  settlements: SettlementService;
  webhooks: WebhookStore;
  /** How a report is streamed (the ops API's way: at the client's pace, stopped when it goes away). */
  csvStreams: CsvStreams;
  /** The process's live regions' streams: their slots, and each written at its client's pace. */
  liveStreams: LiveStreams;
  /** A link's tokens (an unlink revokes them). */
  tokens: TokenStore;
  /** SETTLEMENT_TZ: the day "today" is, and how times are shown. */
  timeZone: string;
  /** TEMPORAL_UI_URL and the namespace: where a workflow's link goes; absent: no link. */
  temporalUi?: { url: string; namespace: string } | undefined;
  now?: () => Date;
}
