// Custom search attributes walletflow registers in Temporal so the Temporal UI can find fundings
// and payments by state. Plain data: the dev server setup, the worker and workflows share it.
export const searchAttributes = {
  /** Funding or payment status, e.g. EXECUTING, APPROVED, NEEDS_REVIEW. */
  status: { name: 'WalletflowStatus', type: 'Keyword' },
  /** FUNDING or PAYMENT. */
  kind: { name: 'WalletflowKind', type: 'Keyword' },
  /** For fundings: CODE or TOKEN. */
  recipientType: { name: 'WalletflowRecipientType', type: 'Keyword' },
} as const;

export type SearchAttributeName = (typeof searchAttributes)[keyof typeof searchAttributes]['name'];
