// The typed client of walletflow's ops API, generated from its OpenAPI document
// (/docs/openapi.json) by scripts/generate-ops-client.ts: do not edit by hand; run
// `npm run client:generate` after changing the API (a unit test fails until you do).
// Self-contained (Node 20's or a browser's fetch, no imports), so partners may copy this file.
// Errors: a non-2xx answer throws OpsProblemError (RFC 9457 problem details with `code`); no
// answer at all, or an answer that broke off, throws OpsNetworkError. Neither ever carries the API key.

// ---- schemas (components/schemas) ------------------------------------------------------------

export interface CreateFunding {
  recipient: {
    type: "CODE";
    code: string;
  } | {
    type: "TOKEN";
    linkId: string;
  };
  amount: {
    /** an ISO 4217 code; walletflow moves PHP only (another is refused 422) */
    currency: string;
    /** a decimal string, 0.001 to 9999999999.99, with at most the currency's decimals (PHP 2): no sign, exponent or spaces */
    value: string;
  };
  source?: {
    type: "TREASURY";
  } | {
    type: "USER_BALANCE";
    partnerUserId: string;
  };
}

export interface ResolveFunding {
  outcome: "APPROVED" | "FAILED";
  note: string;
}

export interface CreateFundingBatch {
  name: string;
  source?: {
    type: "TREASURY";
  } | {
    type: "USER_BALANCE";
    partnerUserId: string;
  };
  items: unknown[];
}

export interface CreatePayment {
  linkId: string;
  amount: {
    /** an ISO 4217 code; walletflow moves PHP only (another is refused 422) */
    currency: string;
    /** a decimal string, 0.001 to 9999999999.99, with at most the currency's decimals (PHP 2): no sign, exponent or spaces */
    value: string;
  };
  purpose?: "PURCHASE" | "DEPOSIT";
}

export interface ResolvePayment {
  outcome: "SUCCEEDED" | "FAILED";
  note: string;
}

export interface LoginUrlRequest {
  partnerUserId: string;
  mobile?: string;
}

export interface CreateAdjustment {
  amount: {
    /** an ISO 4217 code; walletflow moves PHP only (another is refused 422) */
    currency: string;
    /** a signed decimal string: "-25.00" debits the account, "25.00" credits it */
    value: string;
  };
  reason: string;
}

export interface CreateWebhookEndpoint {
  url: string;
  events: ("funding.approved" | "funding.declined" | "funding.rejected" | "funding.failed" | "funding.needs_review" | "payment.succeeded" | "payment.failed" | "payment.needs_review" | "batch.completed" | "batch.cancelled")[];
}

export interface Funding {
  fundingId: string;
  status: "PENDING" | "CREATING" | "EXECUTING" | "RECONCILING" | "APPROVED" | "DECLINED" | "REJECTED" | "FAILED" | "NEEDS_REVIEW";
  recipient: {
    type: "CODE";
    masked: string;
  } | {
    type: "TOKEN";
    linkId: string;
  };
  amount: {
    currency: string;
    value: string;
  };
  source: {
    type: "TREASURY";
  } | {
    type: "USER_BALANCE";
    partnerUserId: string;
  };
  transferId: string | null;
  error: {
    code: string;
    message: string;
  } | null;
  review: {
    reason: string;
    attempts: {
      at: string;
      operation?: string;
      requestReferenceNo: string | null;
      httpStatus: number | null;
      code: string;
      outcome: string;
    }[];
    resolution: {
      outcome: "APPROVED" | "DECLINED" | "FAILED";
      note: string;
      by: string;
      at: string;
    } | null;
  } | null;
  carriedBy: {
    workflowId: string;
    runId: string;
  } | null;
  batchId: string | null;
  reference: string | null;
  createdAt: string;
  updatedAt: string;
  events: {
    at: string;
    status: "PENDING" | "CREATING" | "EXECUTING" | "RECONCILING" | "APPROVED" | "DECLINED" | "REJECTED" | "FAILED" | "NEEDS_REVIEW";
    requestReferenceNo: string | null;
    detail: string | null;
  }[];
}

export interface Problem {
  type: "about:blank";
  status: number;
  code: string;
  title: string;
  detail?: string;
  errors?: {
    path: string;
    message: string;
  }[];
}

export interface FundingPage {
  items: Funding[];
  nextCursor: string | null;
}

export interface FundingBatch {
  batchId: string;
  name: string;
  state: "AWAITING_APPROVAL" | "RUNNING" | "PAUSED" | "COMPLETED" | "CANCELLED" | "REJECTED";
  createdBy: string;
  approvedBy: string | null;
  source: {
    type: "TREASURY";
  } | {
    type: "USER_BALANCE";
    partnerUserId: string;
  };
  total: {
    count: number;
    amount: {
      currency: string;
      value: string;
    };
  };
  counts: {
    [key: string]: number;
  };
  amounts: {
    [key: string]: {
    currency: string;
    value: string;
  };
  };
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  itemsPerSecond: number | null;
  etaSeconds: number | null;
}

export interface FundingBatchPage {
  items: FundingBatch[];
  nextCursor: string | null;
}

export interface FundingBatchItemPage {
  items: {
    reference: string;
    fundingId: string;
    status: "PENDING" | "CREATING" | "EXECUTING" | "RECONCILING" | "APPROVED" | "DECLINED" | "REJECTED" | "FAILED" | "NEEDS_REVIEW" | "CANCELLED";
    errorCode: string | null;
    amount: {
      currency: string;
      value: string;
    };
  }[];
  nextCursor: string | null;
}

export interface Payment {
  id: string;
  paymentId: string | null;
  status: "PENDING" | "CREATING" | "EXECUTING" | "SUCCEEDED" | "FAILED" | "NEEDS_REVIEW";
  linkId: string;
  purpose: "PURCHASE" | "DEPOSIT";
  amount: {
    currency: string;
    value: string;
  };
  fee: {
    currency: string;
    value: string;
  } | null;
  error: {
    code: string;
    message: string;
  } | null;
  review: {
    reason: string;
    attempts: {
      at: string;
      operation?: string;
      requestReferenceNo: string | null;
      httpStatus: number | null;
      code: string;
      outcome: string;
    }[];
    resolution: {
      outcome: "SUCCEEDED" | "FAILED";
      note: string;
      by: string;
      at: string;
    } | null;
  } | null;
  createdAt: string;
  updatedAt: string;
  events: {
    at: string;
    status: "PENDING" | "CREATING" | "EXECUTING" | "SUCCEEDED" | "FAILED" | "NEEDS_REVIEW";
    requestReferenceNo: string | null;
    detail: string | null;
  }[];
}

export interface PaymentPage {
  items: Payment[];
  nextCursor: string | null;
}

export interface LoginUrl {
  url: string;
  expiresAt: string;
}

export interface LinkList {
  items: Link[];
}

export interface Link {
  linkId: string;
  partnerUserId: string;
  profileId: string;
  maskedUserId: string | null;
  kind: "STANDALONE" | "EMBEDDED";
  status: "ACTIVE" | "REAUTH_REQUIRED" | "UNLINKED";
  scopes: string[];
  tokens: {
    accessTokenExpiresAt: string;
    refreshTokenExpiresAt: string | null;
    version: number;
    refreshedAt: string | null;
  } | null;
  createdAt: string;
  updatedAt: string;
}

export interface LinkProfile {
  linkId: string;
  fetchedAt: string;
  requestReferenceNo: string;
  scopes: ("openid" | "profile" | "contact" | "address" | "workDetails" | "identity_document")[];
  documentUrlsExpireAt: string | null;
  profile: {
    openid: {
      id: string;
      profileId: string;
      kycStatus: "KYC0" | "KYC1";
    };
    profile?: {
      name?: {
        firstName: string;
        middleName: string | null;
        lastName: string;
        verificationStatus: ("PASS" | "FAILED") | null;
      };
      birthDetails?: {
        birthDate: string;
        city: string;
        nationality: string;
        country: string;
        verificationStatus: ("PASS" | "FAILED") | null;
      };
    };
    contact?: {
      contact: {
        type: "EMAIL" | "MSISDN" | "MSISD";
        subType: "PRIMARY" | "RECOVERY";
        value: string;
        verificationStatus: ("PASS" | "FAILED") | null;
      }[];
    };
    address?: {
      address: {
        type: "PRESENT" | "PERMANENT";
        line1: string;
        line2: string;
        locality: string;
        city: string;
        province: string;
        region: string;
        country: string;
        zipCode: string;
        verificationStatus: ("PASS" | "FAILED") | null;
      }[];
    };
    workDetails?: {
      workDetails: {
        natureOfWork: string;
        natureOfWorkDetails: string | null;
        sourceOfIncome: string;
        sourceOfIncomeDetails: string | null;
        verificationStatus: ("PASS" | "FAILED") | null;
      };
    };
    identity_document?: {
      identityDocument: {
        type: string;
        value: string | null;
        frontUrl: string | null;
        backUrl: string | null;
        expiryDate: string;
        verificationStatus: ("PASS" | "FAILED") | null;
      }[];
    };
  };
}

export interface Account {
  account: string;
  balance: {
    currency: string;
    value: string;
  };
  held: {
    currency: string;
    value: string;
  };
  available: {
    currency: string;
    value: string;
  };
}

export interface Adjustment {
  adjustmentId: string;
  account: string;
  counterAccount: string;
  amount: {
    currency: string;
    value: string;
  };
  reason: string;
  reference: string;
  createdAt: string;
}

export interface LedgerEntryPage {
  items: {
    entryId: string;
    transactionId: string;
    account: string;
    amount: {
      currency: string;
      value: string;
    };
    pending: boolean;
    reference: string;
    at: string;
  }[];
  nextCursor: string | null;
}

export interface Settlement {
  date: string;
  timeZone: string;
  runId: string;
  settledAt: string;
  complete: boolean;
  /** a report of the day so far (`complete: false`) covers the fundings and payments whose approval or success was stamped before this instant (ISO 8601): the database’s time when its run began less SETTLEMENT_GRACE_MS (2 minutes: an approval stamped later may still be committing), never before the day began; null for the whole day (and for runs begun before it was kept) */
  readUntil: string | null;
  fundings: {
    matched: number;
    missing: number;
    mismatched: number;
    total: {
      count: number;
      amount: {
        currency: string;
        value: string;
      };
    };
  };
  payments: {
    matched: number;
    missing: number;
    mismatched: number;
    total: {
      count: number;
      amount: {
        currency: string;
        value: string;
      };
    };
  };
  items: {
    kind: "funding" | "payment";
    id: string;
    walletId: string | null;
    result: "matched" | "missing" | "mismatched";
    amount: {
      currency: string;
      value: string;
    };
    walletAmount: {
      currency: string;
      value: string;
    } | null;
    walletStatus: string | null;
    ledgerAmount: {
      currency: string;
      value: string;
    } | null;
    detail: string | null;
  }[];
  nextCursor: string | null;
}

export interface SettlementProgress {
  date: string;
  state: "RUNNING";
  checked: number;
  total: number;
  runId: string;
  startedAt: string;
}

export interface WebhookEndpointCreated {
  id: string;
  secret: string;
  /** the address as sent, whole: shown this once (every later view masks its credentials) */
  url: string;
  events: ("funding.approved" | "funding.declined" | "funding.rejected" | "funding.failed" | "funding.needs_review" | "payment.succeeded" | "payment.failed" | "payment.needs_review" | "batch.completed" | "batch.cancelled")[];
  createdAt: string;
}

export interface WebhookEndpoint {
  id: string;
  /** the address, masked: a user name and a password as `***`, each query value as `…`, no fragment; scheme, host, port, path and query names as stored (`https://***:***@hooks.example.com/in?token=…`). Only the answer to the creation has it whole */
  url: string;
  events: ("funding.approved" | "funding.declined" | "funding.rejected" | "funding.failed" | "funding.needs_review" | "payment.succeeded" | "payment.failed" | "payment.needs_review" | "batch.completed" | "batch.cancelled")[];
  createdBy: string | null;
  createdAt: string;
}

export interface WebhookDeliveryPage {
  items: WebhookDelivery[];
  nextCursor: string | null;
}

export interface WebhookDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: "funding.approved" | "funding.declined" | "funding.rejected" | "funding.failed" | "funding.needs_review" | "payment.succeeded" | "payment.failed" | "payment.needs_review" | "batch.completed" | "batch.cancelled";
  status: "PENDING" | "SUCCEEDED" | "FAILED";
  attempts: number;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  /** who sent it again last: the ops key’s name (with its X-Ops-Actor note) or the console’s signed-in person; null until a redelivery */
  redeliveredBy: string | null;
  /** when it was last sent again; null until then */
  redeliveredAt: string | null;
  createdAt: string;
  updatedAt: string;
  /** every attempt on record since it was created, redeliveries included, counted to 1000 (a figure at it means at least that many) */
  logged: number;
  /** its latest attempts, oldest first: 10 in a list of deliveries, 100 in a redelivery's answer (logged counts them all) */
  log: {
    at: string;
    statusCode: number | null;
    error: string | null;
    durationMs: number;
  }[];
}

// ---- operations: parameters (path, query, headers, body) and answers (2xx) --------------------

export type ListFundingsParams = {
  /** only this status */
  status?: "PENDING" | "CREATING" | "EXECUTING" | "RECONCILING" | "APPROVED" | "DECLINED" | "REJECTED" | "FAILED" | "NEEDS_REVIEW";
  /** created at or after (ISO-8601 with an offset) */
  from?: string;
  /** created before (ISO-8601 with an offset) */
  to?: string;
  /** items per page (1 to 200, default 50) */
  limit?: number;
  /** the `nextCursor` of the previous page */
  cursor?: string;
};

export type CreateFundingParams = {
  /** Required. One business request: a repeated key with the same body answers 200 and the same record (nothing new starts); with another body 422 `IDEMPOTENCY_KEY_REUSED`. */
  idempotencyKey: string;
  body: CreateFunding;
};

export type GetFundingParams = {
  /** the funding’s id (not a UUID: 404) */
  fundingId: string;
};

export type CancelFundingParams = {
  /** the funding’s id (not a UUID: 404) */
  fundingId: string;
};

export type ResolveFundingParams = {
  /** the funding’s id (not a UUID: 404) */
  fundingId: string;
  /** who resolves (recorded with the key’s identity in `review.resolution.by`); ignored when malformed; kept as plain text: letters, digits, spaces and . ' - , @ _ (anything else, a parenthesis or a colon, becomes a space) */
  opsActor?: string;
  body: ResolveFunding;
};

export type ListFundingBatchesParams = {
  /** only batches in this state */
  state?: "AWAITING_APPROVAL" | "RUNNING" | "PAUSED" | "COMPLETED" | "CANCELLED" | "REJECTED";
  /** batches per page (1 to 200, default 50) */
  limit?: number;
  /** the nextCursor of the previous page */
  cursor?: string;
};

export type CreateFundingBatchParams = {
  /** the CSV form’s batch name */
  name?: string;
  /** the CSV form’s source: TREASURY (the default) or USER_BALANCE (with partnerUserId) */
  source?: "TREASURY" | "USER_BALANCE";
  /** the CSV form’s USER_BALANCE source: this partner user’s balance (alone, it means source=USER_BALANCE; not with source=TREASURY) */
  partnerUserId?: string;
  /** Required. One business request: a repeated key with the same body answers 200 and the same record (nothing new starts); with another body 422 `IDEMPOTENCY_KEY_REUSED`. */
  idempotencyKey: string;
  body: CreateFundingBatch;
};

export type GetFundingBatchParams = {
  /** the batch’s id (not a UUID: 404) */
  batchId: string;
};

export type ListFundingBatchItemsParams = {
  /** the batch’s id (not a UUID: 404) */
  batchId: string;
  /** only items in this state (CANCELLED: cancelled before they started) */
  status?: "PENDING" | "CREATING" | "EXECUTING" | "RECONCILING" | "APPROVED" | "DECLINED" | "REJECTED" | "FAILED" | "NEEDS_REVIEW" | "CANCELLED";
  /** items per page (1 to 1000, default 100) */
  limit?: number;
  /** the nextCursor of the previous page */
  cursor?: string;
};

export type GetFundingBatchReportParams = {
  /** the batch’s id (not a UUID: 404) */
  batchId: string;
  /** csv (the only format) */
  format?: "csv";
};

export type ApproveFundingBatchParams = {
  /** the batch’s id (not a UUID: 404) */
  batchId: string;
};

export type RejectFundingBatchParams = {
  /** the batch’s id (not a UUID: 404) */
  batchId: string;
};

export type PauseFundingBatchParams = {
  /** the batch’s id (not a UUID: 404) */
  batchId: string;
};

export type ResumeFundingBatchParams = {
  /** the batch’s id (not a UUID: 404) */
  batchId: string;
};

export type CancelFundingBatchParams = {
  /** the batch’s id (not a UUID: 404) */
  batchId: string;
};

export type ListPaymentsParams = {
  /** only this status */
  status?: "PENDING" | "CREATING" | "EXECUTING" | "SUCCEEDED" | "FAILED" | "NEEDS_REVIEW";
  /** created at or after (ISO-8601 with an offset) */
  from?: string;
  /** created before (ISO-8601 with an offset) */
  to?: string;
  /** items per page (1 to 200, default 50) */
  limit?: number;
  /** the `nextCursor` of the previous page */
  cursor?: string;
};

export type CreatePaymentParams = {
  /** Required. One business request: a repeated key with the same body answers 200 and the same record (nothing new starts); with another body 422 `IDEMPOTENCY_KEY_REUSED`. */
  idempotencyKey: string;
  body: CreatePayment;
};

export type GetPaymentParams = {
  /** walletflow’s id of the payment (`id`), or the wallet’s payment id (`walletPaymentId`) */
  paymentId: string;
};

export type ResolvePaymentParams = {
  /** walletflow’s id of the payment (`id`), or the wallet’s payment id (`walletPaymentId`) */
  paymentId: string;
  /** who resolves (recorded with the key’s fingerprint in `review.resolution.by`); ignored when malformed; kept as plain text: letters, digits, spaces and . ' - , @ _ (anything else, a parenthesis or a colon, becomes a space) */
  opsActor?: string;
  body: ResolvePayment;
};

export type CreateLoginUrlParams = {
  body: LoginUrlRequest;
};

export type FindLinksParams = {
  partnerUserId?: string;
  profileId?: string;
};

export type GetLinkParams = {
  /** the link’s id (not a UUID: 400 `INVALID_LINK_ID`) */
  linkId: string;
};

export type UnlinkParams = {
  /** the link’s id (not a UUID: 400 `INVALID_LINK_ID`) */
  linkId: string;
};

export type GetLinkProfileParams = {
  /** the link’s id (not a UUID: 400 `INVALID_LINK_ID`) */
  linkId: string;
};

export type GetAccountParams = {
  /** `TREASURY` (or another system account: `IN_FLIGHT`, `WALLET_CLEARING`, `MERCHANT_REVENUE`, `CAPITAL`), else a partner user id */
  account: ("TREASURY" | "IN_FLIGHT" | "WALLET_CLEARING" | "MERCHANT_REVENUE" | "CAPITAL") | string;
  currency?: "PHP" | "USD" | "EUR" | "JPY";
};

export type AdjustAccountParams = {
  /** `TREASURY` (or another system account: `IN_FLIGHT`, `WALLET_CLEARING`, `MERCHANT_REVENUE`, `CAPITAL`), else a partner user id */
  account: ("TREASURY" | "IN_FLIGHT" | "WALLET_CLEARING" | "MERCHANT_REVENUE" | "CAPITAL") | string;
  /** Required. One business request: a repeated key with the same body answers 200 and the same record (nothing new starts); with another body 422 `IDEMPOTENCY_KEY_REUSED`. */
  idempotencyKey: string;
  body: CreateAdjustment;
};

export type ListLedgerEntriesParams = {
  account?: ("TREASURY" | "IN_FLIGHT" | "WALLET_CLEARING" | "MERCHANT_REVENUE" | "CAPITAL") | string;
  limit?: number;
  cursor?: string;
};

export type GetSettlementParams = {
  /** the day, YYYY-MM-DD, in SETTLEMENT_TZ */
  date: string;
  format?: "json" | "csv";
  limit?: number;
  cursor?: string;
};

export type StartSettlementRunParams = {
  /** the day, YYYY-MM-DD, in SETTLEMENT_TZ */
  date: string;
};

export type CreateWebhookEndpointParams = {
  body: CreateWebhookEndpoint;
};

export type GetWebhookEndpointParams = {
  /** the endpoint’s id */
  endpointId: string;
};

export type DeleteWebhookEndpointParams = {
  /** the endpoint’s id */
  endpointId: string;
  /** who deletes it (stored after the key’s name as the endpoint’s `deletedBy`); ignored when malformed; kept as plain text: letters, digits, spaces and . ' - , @ _ (anything else, a parenthesis or a colon, becomes a space) */
  opsActor?: string;
};

export type ListWebhookDeliveriesParams = {
  /** only this status */
  status?: "PENDING" | "SUCCEEDED" | "FAILED";
  /** created at or after (ISO-8601 with an offset) */
  from?: string;
  /** created before (ISO-8601 with an offset) */
  to?: string;
  /** items per page (1 to 200, default 50) */
  limit?: number;
  /** the `nextCursor` of the previous page */
  cursor?: string;
  /** only this endpoint’s deliveries */
  endpointId?: string;
};

export type RedeliverWebhookParams = {
  /** the delivery’s id */
  deliveryId: string;
  /** who sends it again (stored after the key’s name as the delivery’s `redeliveredBy`); ignored when malformed; kept as plain text: letters, digits, spaces and . ' - , @ _ (anything else, a parenthesis or a colon, becomes a space) */
  opsActor?: string;
};

export type ListFundingsAnswer = { status: 200; body: FundingPage };
export type CreateFundingAnswer = { status: 200; body: Funding } | { status: 202; body: Funding };
export type GetFundingAnswer = { status: 200; body: Funding };
export type CancelFundingAnswer = { status: 200; body: Funding };
export type ResolveFundingAnswer = { status: 200; body: Funding };
export type ListFundingBatchesAnswer = { status: 200; body: FundingBatchPage };
export type CreateFundingBatchAnswer = { status: 200; body: FundingBatch } | { status: 202; body: FundingBatch };
export type GetFundingBatchAnswer = { status: 200; body: FundingBatch };
export type ListFundingBatchItemsAnswer = { status: 200; body: FundingBatchItemPage };
export type GetFundingBatchReportAnswer = { status: 200; body: string };
export type ApproveFundingBatchAnswer = { status: 200; body: FundingBatch };
export type RejectFundingBatchAnswer = { status: 200; body: FundingBatch };
export type PauseFundingBatchAnswer = { status: 200; body: FundingBatch };
export type ResumeFundingBatchAnswer = { status: 200; body: FundingBatch };
export type CancelFundingBatchAnswer = { status: 200; body: FundingBatch };
export type ListPaymentsAnswer = { status: 200; body: PaymentPage };
export type CreatePaymentAnswer = { status: 200; body: Payment } | { status: 202; body: Payment };
export type GetPaymentAnswer = { status: 200; body: Payment };
export type ResolvePaymentAnswer = { status: 200; body: Payment };
export type CreateLoginUrlAnswer = { status: 201; body: LoginUrl };
export type FindLinksAnswer = { status: 200; body: LinkList };
export type GetLinkAnswer = { status: 200; body: Link };
export type UnlinkAnswer = { status: 200; body: Link };
export type GetLinkProfileAnswer = { status: 200; body: LinkProfile };
export type GetAccountAnswer = { status: 200; body: Account };
export type AdjustAccountAnswer = { status: 200; body: Adjustment } | { status: 201; body: Adjustment };
export type ListLedgerEntriesAnswer = { status: 200; body: LedgerEntryPage };
export type GetSettlementAnswer = { status: 200; body: Settlement | string } | { status: 202; body: SettlementProgress };
export type StartSettlementRunAnswer = { status: 202; body: SettlementProgress };
export type CreateWebhookEndpointAnswer = { status: 201; body: WebhookEndpointCreated };
export type GetWebhookEndpointAnswer = { status: 200; body: WebhookEndpoint };
export type DeleteWebhookEndpointAnswer = { status: 204; body: undefined };
export type ListWebhookDeliveriesAnswer = { status: 200; body: WebhookDeliveryPage };
export type RedeliverWebhookAnswer = { status: 202; body: WebhookDelivery };

export interface OpsClient {
  /** GET /ops/fundings: Fundings, newest first, a page at a time */
  listFundings(params?: ListFundingsParams, options?: CallOptions): Promise<ListFundingsAnswer>;
  /** POST /ops/fundings: Fund a wallet: by cash-in code or to a linked wallet */
  createFunding(params: CreateFundingParams, options?: CallOptions): Promise<CreateFundingAnswer>;
  /** GET /ops/fundings/{fundingId}: A funding and its timeline */
  getFunding(params: GetFundingParams, options?: CallOptions): Promise<GetFundingAnswer>;
  /** POST /ops/fundings/{fundingId}/cancel: Cancel a funding that has not started executing (it ends FAILED, code CANCELLED) */
  cancelFunding(params: CancelFundingParams, options?: CallOptions): Promise<CancelFundingAnswer>;
  /** POST /ops/fundings/{fundingId}/resolve: Resolve a funding parked in NEEDS_REVIEW (contract section 11), after checking with the wallet operator: APPROVED posts it, FAILED means nothing was executed */
  resolveFunding(params: ResolveFundingParams, options?: CallOptions): Promise<ResolveFundingAnswer>;
  /** GET /ops/funding-batches: Funding batches, newest first, a page at a time */
  listFundingBatches(params?: ListFundingBatchesParams, options?: CallOptions): Promise<ListFundingBatchesAnswer>;
  /** POST /ops/funding-batches: Fund many wallets from one request: a JSON body, or a CSV file (reference,recipient_type,recipient,amount) with ?name= */
  createFundingBatch(params: CreateFundingBatchParams, options?: CallOptions): Promise<CreateFundingBatchAnswer>;
  /** GET /ops/funding-batches/{batchId}: A batch: its state, its items counted and summed by state, its rate and ETA */
  getFundingBatch(params: GetFundingBatchParams, options?: CallOptions): Promise<GetFundingBatchAnswer>;
  /** GET /ops/funding-batches/{batchId}/items: A batch’s items in reference order, a page at a time */
  listFundingBatchItems(params: ListFundingBatchItemsParams, options?: CallOptions): Promise<ListFundingBatchItemsAnswer>;
  /** GET /ops/funding-batches/{batchId}/report: A batch’s report: one CSV row per item (reference, funding id, status, error code, currency, amount), streamed at the client’s pace (a client that reads nothing for 2 minutes is cut off) */
  getFundingBatchReport(params: GetFundingBatchReportParams, options?: CallOptions): Promise<GetFundingBatchReportAnswer>;
  /** POST /ops/funding-batches/{batchId}/approve: Approve a batch AWAITING_APPROVAL (a key other than its creator’s): it runs */
  approveFundingBatch(params: ApproveFundingBatchParams, options?: CallOptions): Promise<ApproveFundingBatchAnswer>;
  /** POST /ops/funding-batches/{batchId}/reject: Reject a batch AWAITING_APPROVAL: no item starts, its holds are released */
  rejectFundingBatch(params: RejectFundingBatchParams, options?: CallOptions): Promise<RejectFundingBatchAnswer>;
  /** POST /ops/funding-batches/{batchId}/pause: Pause a RUNNING batch: no new item starts; started items finish */
  pauseFundingBatch(params: PauseFundingBatchParams, options?: CallOptions): Promise<PauseFundingBatchAnswer>;
  /** POST /ops/funding-batches/{batchId}/resume: Resume a PAUSED batch */
  resumeFundingBatch(params: ResumeFundingBatchParams, options?: CallOptions): Promise<ResumeFundingBatchAnswer>;
  /** POST /ops/funding-batches/{batchId}/cancel: Cancel a batch: items not yet started end CANCELLED and release their share; started items finish */
  cancelFundingBatch(params: CancelFundingBatchParams, options?: CallOptions): Promise<CancelFundingBatchAnswer>;
  /** GET /ops/payments: Payments, newest first, a page at a time */
  listPayments(params?: ListPaymentsParams, options?: CallOptions): Promise<ListPaymentsAnswer>;
  /** POST /ops/payments: Take a merchant payment from a linked wallet */
  createPayment(params: CreatePaymentParams, options?: CallOptions): Promise<CreatePaymentAnswer>;
  /** GET /ops/payments/{paymentId}: A payment, its timeline and any review */
  getPayment(params: GetPaymentParams, options?: CallOptions): Promise<GetPaymentAnswer>;
  /** POST /ops/payments/{paymentId}/resolve: Resolve a payment parked in NEEDS_REVIEW, after checking with the wallet operator */
  resolvePayment(params: ResolvePaymentParams, options?: CallOptions): Promise<ResolvePaymentAnswer>;
  /** POST /ops/links/login-urls: A login URL for a partner user: single use, valid 10 minutes (scope accounts; the key’s name is recorded) */
  createLoginUrl(params: CreateLoginUrlParams, options?: CallOptions): Promise<CreateLoginUrlAnswer>;
  /** GET /ops/links: A user’s links, by partner user id or by wallet profile id (exactly one) */
  findLinks(params?: FindLinksParams, options?: CallOptions): Promise<FindLinksAnswer>;
  /** GET /ops/links/{linkId}: A link: status, kind, scopes and token expiry (never a token) */
  getLink(params: GetLinkParams, options?: CallOptions): Promise<GetLinkAnswer>;
  /** DELETE /ops/links/{linkId}: Unlink: the tokens are deleted; the link stays, UNLINKED, with its history */
  unlink(params: UnlinkParams, options?: CallOptions): Promise<UnlinkAnswer>;
  /** GET /ops/links/{linkId}/profile: The user’s wallet profile by scope, fetched and decrypted on every request (never stored or cached) */
  getLinkProfile(params: GetLinkProfileParams, options?: CallOptions): Promise<GetLinkProfileAnswer>;
  /** GET /ops/accounts/{account}: An account of the partner’s ledger: balance (posted), held (pending fundings), available */
  getAccount(params: GetAccountParams, options?: CallOptions): Promise<GetAccountAnswer>;
  /** POST /ops/accounts/{account}/adjustments: Adjust a partner user’s account (the other leg is TREASURY) or the treasury (the other leg is CAPITAL; scope admin too) */
  adjustAccount(params: AdjustAccountParams, options?: CallOptions): Promise<AdjustAccountAnswer>;
  /** GET /ops/ledger/entries: Ledger entries, newest first, a page at a time (pending: a hold or its reversal). Ids are drawn at write, not at commit: a reader that stops at the last id it saw can miss entries committed later (docs/ledger.md) */
  listLedgerEntries(params?: ListLedgerEntriesParams, options?: CallOptions): Promise<ListLedgerEntriesAnswer>;
  /** GET /ops/settlements/{date}: A day’s (SETTLEMENT_TZ) approved fundings and succeeded payments against the wallet’s records and the ledger */
  getSettlement(params: GetSettlementParams, options?: CallOptions): Promise<GetSettlementAnswer>;
  /** POST /ops/settlements/{date}/runs: Settle a day again: a fresh run; the report before it is served until it has finished */
  startSettlementRun(params: StartSettlementRunParams, options?: CallOptions): Promise<StartSettlementRunAnswer>;
  /** POST /ops/webhooks/endpoints: Register an endpoint for some events (scope admin). Each event is POSTed as a `WebhookEvent` body signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>` under the secret), retried with backoff for at least 24 hours; receivers dedupe on `webhook-id` */
  createWebhookEndpoint(params: CreateWebhookEndpointParams, options?: CallOptions): Promise<CreateWebhookEndpointAnswer>;
  /** GET /ops/webhooks/endpoints/{endpointId}: An endpoint (never its secret; its address with any user name, password, query values and fragment masked) */
  getWebhookEndpoint(params: GetWebhookEndpointParams, options?: CallOptions): Promise<GetWebhookEndpointAnswer>;
  /** DELETE /ops/webhooks/endpoints/{endpointId}: Delete an endpoint (scope admin): no new deliveries, its pending ones end FAILED; its deliveries stay listed */
  deleteWebhookEndpoint(params: DeleteWebhookEndpointParams, options?: CallOptions): Promise<DeleteWebhookEndpointAnswer>;
  /** GET /ops/webhooks/deliveries: Deliveries, newest first, a page at a time, each with its latest attempts (status code or error, and when) and how many it has had */
  listWebhookDeliveries(params?: ListWebhookDeliveriesParams, options?: CallOptions): Promise<ListWebhookDeliveriesAnswer>;
  /** POST /ops/webhooks/deliveries/{deliveryId}/redeliver: Send a FAILED (dead-lettered) or delivered delivery again, now, with a new retry window (scope admin); the same `webhook-id` */
  redeliverWebhook(params: RedeliverWebhookParams, options?: CallOptions): Promise<RedeliverWebhookAnswer>;
}

const operations: Record<keyof OpsClient, OperationSpec> = {
  listFundings: { method: 'GET', path: "/ops/fundings", pathParams: [], query: ["status","from","to","limit","cursor"], headers: {}, body: false },
  createFunding: { method: 'POST', path: "/ops/fundings", pathParams: [], query: [], headers: {"idempotencyKey":"Idempotency-Key"}, body: true },
  getFunding: { method: 'GET', path: "/ops/fundings/{fundingId}", pathParams: ["fundingId"], query: [], headers: {}, body: false },
  cancelFunding: { method: 'POST', path: "/ops/fundings/{fundingId}/cancel", pathParams: ["fundingId"], query: [], headers: {}, body: false },
  resolveFunding: { method: 'POST', path: "/ops/fundings/{fundingId}/resolve", pathParams: ["fundingId"], query: [], headers: {"opsActor":"X-Ops-Actor"}, body: true },
  listFundingBatches: { method: 'GET', path: "/ops/funding-batches", pathParams: [], query: ["state","limit","cursor"], headers: {}, body: false },
  createFundingBatch: { method: 'POST', path: "/ops/funding-batches", pathParams: [], query: ["name","source","partnerUserId"], headers: {"idempotencyKey":"Idempotency-Key"}, body: true },
  getFundingBatch: { method: 'GET', path: "/ops/funding-batches/{batchId}", pathParams: ["batchId"], query: [], headers: {}, body: false },
  listFundingBatchItems: { method: 'GET', path: "/ops/funding-batches/{batchId}/items", pathParams: ["batchId"], query: ["status","limit","cursor"], headers: {}, body: false },
  getFundingBatchReport: { method: 'GET', path: "/ops/funding-batches/{batchId}/report", pathParams: ["batchId"], query: ["format"], headers: {}, body: false },
  approveFundingBatch: { method: 'POST', path: "/ops/funding-batches/{batchId}/approve", pathParams: ["batchId"], query: [], headers: {}, body: false },
  rejectFundingBatch: { method: 'POST', path: "/ops/funding-batches/{batchId}/reject", pathParams: ["batchId"], query: [], headers: {}, body: false },
  pauseFundingBatch: { method: 'POST', path: "/ops/funding-batches/{batchId}/pause", pathParams: ["batchId"], query: [], headers: {}, body: false },
  resumeFundingBatch: { method: 'POST', path: "/ops/funding-batches/{batchId}/resume", pathParams: ["batchId"], query: [], headers: {}, body: false },
  cancelFundingBatch: { method: 'POST', path: "/ops/funding-batches/{batchId}/cancel", pathParams: ["batchId"], query: [], headers: {}, body: false },
  listPayments: { method: 'GET', path: "/ops/payments", pathParams: [], query: ["status","from","to","limit","cursor"], headers: {}, body: false },
  createPayment: { method: 'POST', path: "/ops/payments", pathParams: [], query: [], headers: {"idempotencyKey":"Idempotency-Key"}, body: true },
  getPayment: { method: 'GET', path: "/ops/payments/{paymentId}", pathParams: ["paymentId"], query: [], headers: {}, body: false },
  resolvePayment: { method: 'POST', path: "/ops/payments/{paymentId}/resolve", pathParams: ["paymentId"], query: [], headers: {"opsActor":"X-Ops-Actor"}, body: true },
  createLoginUrl: { method: 'POST', path: "/ops/links/login-urls", pathParams: [], query: [], headers: {}, body: true },
  findLinks: { method: 'GET', path: "/ops/links", pathParams: [], query: ["partnerUserId","profileId"], headers: {}, body: false },
  getLink: { method: 'GET', path: "/ops/links/{linkId}", pathParams: ["linkId"], query: [], headers: {}, body: false },
  unlink: { method: 'DELETE', path: "/ops/links/{linkId}", pathParams: ["linkId"], query: [], headers: {}, body: false },
  getLinkProfile: { method: 'GET', path: "/ops/links/{linkId}/profile", pathParams: ["linkId"], query: [], headers: {}, body: false },
  getAccount: { method: 'GET', path: "/ops/accounts/{account}", pathParams: ["account"], query: ["currency"], headers: {}, body: false },
  adjustAccount: { method: 'POST', path: "/ops/accounts/{account}/adjustments", pathParams: ["account"], query: [], headers: {"idempotencyKey":"Idempotency-Key"}, body: true },
  listLedgerEntries: { method: 'GET', path: "/ops/ledger/entries", pathParams: [], query: ["account","limit","cursor"], headers: {}, body: false },
  getSettlement: { method: 'GET', path: "/ops/settlements/{date}", pathParams: ["date"], query: ["format","limit","cursor"], headers: {}, body: false },
  startSettlementRun: { method: 'POST', path: "/ops/settlements/{date}/runs", pathParams: ["date"], query: [], headers: {}, body: false },
  createWebhookEndpoint: { method: 'POST', path: "/ops/webhooks/endpoints", pathParams: [], query: [], headers: {}, body: true },
  getWebhookEndpoint: { method: 'GET', path: "/ops/webhooks/endpoints/{endpointId}", pathParams: ["endpointId"], query: [], headers: {}, body: false },
  deleteWebhookEndpoint: { method: 'DELETE', path: "/ops/webhooks/endpoints/{endpointId}", pathParams: ["endpointId"], query: [], headers: {"opsActor":"X-Ops-Actor"}, body: false },
  listWebhookDeliveries: { method: 'GET', path: "/ops/webhooks/deliveries", pathParams: [], query: ["status","from","to","limit","cursor","endpointId"], headers: {}, body: false },
  redeliverWebhook: { method: 'POST', path: "/ops/webhooks/deliveries/{deliveryId}/redeliver", pathParams: ["deliveryId"], query: [], headers: {"opsActor":"X-Ops-Actor"}, body: false },
};

// ---- runtime ---------------------------------------------------------------------------------

interface OperationSpec {
  method: string;
  path: string;
  pathParams: string[];
  query: string[];
  headers: Record<string, string>;
  body: boolean;
}

export interface OpsClientOptions {
  /** The API's base URL, e.g. http://127.0.0.1:3000 (no trailing /ops). */
  baseUrl: string;
  /** One of the API's OPS_API_KEYS; sent as `Authorization: Bearer …`, never in an error. */
  key: string;
  /**
   * How long to wait for the answer's headers, and then for each part of its body, in milliseconds (default 15 000): a
   * long report that keeps coming is read whole, one that stalls is not.
   */
  timeoutMs?: number;
  /** Another fetch (tests, proxies); default the global one. */
  fetch?: typeof fetch;
}

export interface CallOptions {
  /**
   * The caller's abort: before the answer's headers, the call rejects with its reason, as fetch does; while a 2xx
   * answer's body is read, with OpsNetworkError (`brokenOff`, reason "stopped by the caller"), which keeps a write's
   * Idempotency-Key; an error status stands.
   */
  signal?: AbortSignal;
  /** Extra headers for this call (e.g. X-Request-Id). */
  headers?: Record<string, string>;
}

/** The API answered with an error status: its problem document, when it sent one. */
export class OpsProblemError extends Error {
  readonly code: string;
  readonly detail: string;
  constructor(
    readonly status: number,
    readonly problem: Problem | undefined,
    readonly operation: string,
    readonly method = 'GET',
    readonly idempotencyKey?: string,
  ) {
    const code = problem?.code ?? `HTTP_${status}`;
    const detail = problem ? (problem.detail ?? problem.title) : 'the answer is not a problem document: is this walletflow’s API?';
    super(`${operation}: ${status} ${code}: ${detail}`);
    this.name = 'OpsProblemError';
    this.code = code;
    this.detail = detail;
  }
  /** Worth another try later: the server or something in between failed, or a rate limit. */
  get transient(): boolean {
    return this.status >= 500 || this.status === 429;
  }
}

/**
 * No answer (nothing listens at the URL, DNS failed, the connection broke or timed out), or
 * `brokenOff`: a 2xx answer that broke off or timed out while its body was read, or whose JSON
 * is not whole. Nothing of such an answer is returned: half a report never passes for a whole one.
 * A write answered so (`method` other than GET) was applied: only its answer was lost; sent again
 * with the same `idempotencyKey`, it is answered again, applied once.
 */
export class OpsNetworkError extends Error {
  constructor(
    readonly baseUrl: string,
    readonly reason: string,
    readonly brokenOff = false,
    readonly method = 'GET',
    readonly idempotencyKey?: string,
  ) {
    super(brokenOff ? `the ops API's answer from ${baseUrl} broke off (${reason})` : `the ops API is not reachable at ${baseUrl} (${reason})`);
    this.name = 'OpsNetworkError';
  }
}

function networkReason(error: unknown): string | null {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'no answer in time';
  if (!(error instanceof TypeError)) return null;
  const cause = (error as TypeError & { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  return typeof cause?.message === 'string' ? cause.message : error.message;
}

/** An abort after `ms` of silence: restarted each time a part of the answer arrives. */
function idleTimeout(ms: number): { signal: AbortSignal; restart(): void; clear(): void } {
  const controller = new AbortController();
  const fire = () => controller.abort(new DOMException('no answer in time', 'TimeoutError'));
  let timer = setTimeout(fire, ms);
  return {
    signal: controller.signal,
    restart() {
      clearTimeout(timer);
      timer = setTimeout(fire, ms);
    },
    clear: () => clearTimeout(timer),
  };
}

/** The body as text, each part that arrives restarting `idle`. */
async function readText(response: Response, idle: { restart(): void }): Promise<string> {
  if (!response.body) return '';
  const decoder = new TextDecoder();
  let text = '';
  const reader = response.body.getReader();
  for (;;) {
    const part = await reader.read();
    if (part.done) break;
    idle.restart();
    text += decoder.decode(part.value, { stream: true });
  }
  return text + decoder.decode();
}

function isProblem(value: unknown): value is Problem {
  return typeof value === 'object' && value !== null && typeof (value as { code?: unknown }).code === 'string' && typeof (value as { title?: unknown }).title === 'string';
}

async function call(options: OpsClientOptions, id: string, spec: OperationSpec, params: Record<string, unknown>, callOptions: CallOptions): Promise<{ status: number; body: unknown }> {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  let path = spec.path;
  for (const name of spec.pathParams) path = path.replace(`{${name}}`, encodeURIComponent(String(params[name])));
  const query = new URLSearchParams();
  for (const name of spec.query) if (params[name] !== undefined) query.set(name, String(params[name]));
  const headers: Record<string, string> = { accept: 'application/json, application/problem+json, text/csv', authorization: `Bearer ${options.key}`, ...callOptions.headers };
  for (const [name, header] of Object.entries(spec.headers)) if (params[name] !== undefined) headers[header] = String(params[name]);
  if (spec.body && params.body !== undefined) headers['content-type'] = 'application/json';
  const idle = idleTimeout(options.timeoutMs ?? 15_000);
  const signal = callOptions.signal ? AbortSignal.any([idle.signal, callOptions.signal]) : idle.signal;
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(`${baseUrl}${path}${query.size > 0 ? `?${query.toString()}` : ''}`, {
      method: spec.method,
      headers,
      ...(spec.body && params.body !== undefined ? { body: JSON.stringify(params.body) } : {}),
      signal,
    });
  } catch (error) {
    idle.clear();
    // The caller's own abort is theirs to read, never "no answer in time".
    if (callOptions.signal?.aborted) throw callOptions.signal.reason;
    const reason = networkReason(error);
    if (reason !== null) throw new OpsNetworkError(baseUrl, reason, false, spec.method, headers['Idempotency-Key']);
    throw error;
  }
  const ok = response.status >= 200 && response.status <= 299;
  let text = '';
  try {
    idle.restart();
    text = await readText(response, idle);
  } catch (error) {
    // An error status stands without its body; a 2xx without its whole body is no answer (a write's: applied, its key
    // answers it again), the caller's own stop as well.
    if (ok && callOptions.signal?.aborted)
      throw new OpsNetworkError(baseUrl, 'stopped by the caller', true, spec.method, headers['Idempotency-Key']);
    if (ok) throw new OpsNetworkError(baseUrl, networkReason(error) ?? (error as Error).message, true, spec.method, headers['Idempotency-Key']);
  } finally {
    idle.clear();
  }
  const json = /json/.test(response.headers.get('content-type') ?? '');
  let body: unknown = text === '' ? undefined : text;
  if (json && text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      if (ok) throw new OpsNetworkError(baseUrl, 'its JSON is not whole', true, spec.method, headers['Idempotency-Key']);
      body = undefined;
    }
  }
  if (!ok) throw new OpsProblemError(response.status, isProblem(body) ? body : undefined, id, spec.method, headers['Idempotency-Key']);
  return { status: response.status, body };
}

/** The client: one method per operation, each resolving to `{ status, body }` on a 2xx. */
export function createOpsClient(options: OpsClientOptions): OpsClient {
  const client: Record<string, (params?: Record<string, unknown>, callOptions?: CallOptions) => Promise<{ status: number; body: unknown }>> = {};
  for (const [id, spec] of Object.entries(operations)) {
    client[id] = (params = {}, callOptions = {}) => call(options, id, spec, params, callOptions);
  }
  return client as unknown as OpsClient;
}
