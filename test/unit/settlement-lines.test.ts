// ledger/settlement.ts fundingLine and paymentLine: a funding against the wallet's record of its transfer and the
// ledger's posting; a payment against the audit's successful execute and the ledger's posting.
import { describe, expect, it } from 'vitest';
import { paymentReference, postReference } from '../../ledger/ledger.ts';
import { dayEndsAt, fundingLine, lastWholeDay, paymentLine, settlementDayOf } from '../../ledger/settlement.ts';

const funding = { id: 'f-1', transferId: 't-1', amount: 100_000n, currency: 'PHP' };
const posted = new Map([[postReference('f-1'), 100_000n]]);

describe('a settlement line of a funding', () => {
  it('matches the wallet’s record of the same status, amount and currency, and the ledger’s post', () => {
    const line = fundingLine(funding, { status: 'APPROVED', amount: { currency: 'PHP', value: '100.00' } }, posted);
    expect(line).toMatchObject({ result: 'matched', walletAmount: { currency: 'PHP', value: '100.00' }, detail: null });
  });

  it('is mismatched when the wallet names another currency, however equal the figure: that figure in its detail only', () => {
    for (const currency of ['USD', 'JPY']) {
      const line = fundingLine(funding, { status: 'APPROVED', amount: { currency, value: '100' } }, posted);
      expect(line, currency).toMatchObject({
        result: 'mismatched',
        amount: { currency: 'PHP', value: '100.00' },
        walletAmount: null,
        detail: expect.stringContaining(`${currency} 100`),
      });
    }
  });

  it('is mismatched, saying why, when the wallet’s record could not be read or holds an amount no line can store', () => {
    for (const wallet of [
      { unreadable: 'HTTP_4XX (400)' },
      { status: 'APPROVED', amount: { currency: 'PHP', value: '10000000000000.00' } },
    ]) {
      expect(fundingLine(funding, wallet, posted), JSON.stringify(wallet)).toMatchObject({
        result: 'mismatched',
        walletAmount: null,
        walletStatus: null,
        detail: expect.stringContaining("the wallet's record could not be read"),
      });
    }
  });
});

describe('a settlement line of a payment', () => {
  it('shows no wallet figure: the interface has no payment retrieve, so no amount of the wallet’s was read', () => {
    const payment = {
      id: 'p-1',
      walletPaymentId: 'w-1',
      amount: 25_000n,
      currency: 'PHP',
      resolvedBy: null,
      succeededBy: null,
    };
    const line = paymentLine(payment, new Set(['w-1']), new Map([[paymentReference('p-1'), 25_000n]]));
    expect(line).toMatchObject({
      result: 'matched',
      amount: { currency: 'PHP', value: '25.00' },
      walletStatus: 'EXECUTED',
      walletAmount: null,
      ledgerAmount: { currency: 'PHP', value: '25.00' },
    });
  });
});

describe('the last whole day', () => {
  it('is the calendar day before today in SETTLEMENT_TZ, not the day 24 hours ago, across a clock put forward', () => {
    // New York's 2026-03-08 had 23 hours: at 00:30 on the 9th, 24 hours ago was the 7th.
    expect(lastWholeDay(new Date('2026-03-09T04:30:00Z'), 'America/New_York')).toBe('2026-03-08');
    // And the 25-hour day (a clock put back), a year's and a month's first day, Manila's 8 hours ahead.
    expect(lastWholeDay(new Date('2026-11-02T05:30:00Z'), 'America/New_York')).toBe('2026-11-01');
    expect(lastWholeDay(new Date('2026-01-01T00:30:00+08:00'), 'Asia/Manila')).toBe('2025-12-31');
    expect(lastWholeDay(new Date('2026-03-01T12:00:00Z'), 'Asia/Manila')).toBe('2026-02-28');
  });
});

describe('the instant a day ends', () => {
  it('is the first millisecond of a later day in SETTLEMENT_TZ, across clocks put forward and back', () => {
    expect(dayEndsAt('2026-12-04', 'Asia/Manila').toISOString()).toBe('2026-12-04T16:00:00.000Z');
    // New York's 23-hour and 25-hour days.
    expect(dayEndsAt('2026-03-08', 'America/New_York').toISOString()).toBe('2026-03-09T04:00:00.000Z');
    expect(dayEndsAt('2026-11-01', 'America/New_York').toISOString()).toBe('2026-11-02T05:00:00.000Z');
    // Every day of a year in zones whose clocks change at midnight or near it, ahead of UTC and behind it.
    for (const timeZone of ['Asia/Beirut', 'America/Santiago', 'America/Havana', 'Pacific/Kiritimati', 'UTC']) {
      for (let day = 0; day < 366; day += 1) {
        const date = new Date(Date.UTC(2026, 0, 1 + day)).toISOString().slice(0, 10);
        const end = dayEndsAt(date, timeZone).getTime();
        expect([settlementDayOf(new Date(end - 1), timeZone).date, timeZone]).toEqual([date, timeZone]);
        expect(settlementDayOf(new Date(end), timeZone).date > date, `${timeZone} ${date}`).toBe(true);
      }
    }
  });
});
