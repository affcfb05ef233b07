// A review as the console shows it (contract-decisions section 11), on the review queue and on a
// funding's or a payment's page: why the outcome is unknown, every wallet call behind the doubt,
// how it was resolved; and the resolve form (the `resolve` scope), whose note is required.
import type { WalletCallEvidence } from '../../domain/review.ts';
import { csrfField, escapeHtml, idCell, table, when, type SignedInPerson } from './console-layout.ts';
import { facts } from './page-pieces.ts';

export interface ReviewShown {
  reason: string;
  attempts: WalletCallEvidence[];
  resolution: { outcome: string; note: string; by: string; at: string } | null;
}

/** The evidence: each wallet call behind the doubt, as the record kept it. */
export function evidenceTable(review: ReviewShown, timeZone: string): string {
  return table(
    'Wallet calls behind the doubt',
    ['When', 'Operation', 'Request-Reference-No', 'HTTP status', 'Code', 'Outcome'],
    review.attempts.map((attempt) => [
      when(attempt.at, timeZone),
      escapeHtml(attempt.operation ?? ''),
      attempt.requestReferenceNo
        ? idCell(attempt.requestReferenceNo, 'Request-Reference-No')
        : '<span class="muted">none</span>',
      attempt.httpStatus === null ? '<span class="muted">no answer</span>' : String(attempt.httpStatus),
      escapeHtml(attempt.code),
      escapeHtml(attempt.outcome),
    ]),
  );
}

/** The review's reason, evidence and resolution. */
export function reviewDetails(review: ReviewShown, timeZone: string): string {
  const resolution = review.resolution
    ? facts([
        ['Resolved', escapeHtml(review.resolution.outcome)],
        ['By', escapeHtml(review.resolution.by)],
        ['When', when(review.resolution.at, timeZone)],
        ['Note', escapeHtml(review.resolution.note)],
      ])
    : '';
  return `<p><strong>Why:</strong> ${escapeHtml(review.reason)}</p>${evidenceTable(review, timeZone)}${resolution}`;
}

/**
 * The resolve form of a record in NEEDS_REVIEW: the outcome and a note saying why (required here
 * and by the server, which refuses a blank one). `returnTo`: the page to go back to once resolved.
 */
export function resolveForm(
  person: SignedInPerson,
  target: { action: string; id: string; outcomes: readonly string[]; returnTo: 'review' | 'record' },
): string {
  const key = target.id.replace(/[^A-Za-z0-9-]/g, '');
  return `<form method="post" action="${escapeHtml(target.action)}" class="resolve" data-confirm="Resolve this for good? It cannot be undone.">
${csrfField(person)}<input type="hidden" name="return" value="${target.returnTo}">
<label for="outcome-${key}">Outcome</label>
<select id="outcome-${key}" name="outcome">${target.outcomes.map((outcome) => `<option value="${escapeHtml(outcome)}">${escapeHtml(outcome)}</option>`).join('')}</select>
<label for="note-${key}">Note: why (what the wallet operator confirmed)</label>
<textarea id="note-${key}" name="note" maxlength="500" required></textarea>
<div class="actions"><button type="submit">Resolve</button></div>
</form>`;
}
