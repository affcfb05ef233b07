// The console's home page says how much the treasury may still pay out where it has a floor
// (TREASURY_LIMIT): a negative available balance above the floor is room, not a deficit.
import { describe, expect, it } from 'vitest';
import { treasuryRoom } from '../../api/console/home-page.ts';

describe('the treasury card', () => {
  it('says what may still be paid out down to the floor, in exact decimals', () => {
    expect(treasuryRoom({ available: { currency: 'PHP', value: '-160.75' }, floor: '-1000.00' })).toContain(
      'It may go down to -1000.00 PHP: 839.25 PHP more can be paid out.',
    );
    expect(treasuryRoom({ available: { currency: 'PHP', value: '0.10' }, floor: '-0.20' })).toContain(
      '0.30 PHP more can be paid out',
    );
  });

  it('says nothing more without a floor', () => {
    expect(treasuryRoom({ available: { currency: 'PHP', value: '-160.75' }, floor: null })).toBe('');
  });
});
