// Where a person lands after signing in (`return`): only one of the console's own pages, never the sign-in machinery.
import { describe, expect, it } from 'vitest';
import { safeReturn } from '../../api/console/sign-in.ts';

describe('the page to return to after signing in', () => {
  it('is one of the console’s own pages, as asked', () => {
    for (const page of ['/console', '/console?did=x', '/console/fundings', '/console/batches/1?tab=items'])
      expect(safeReturn(page), page).toBe(page);
  });

  it('is Home for anything else: another site, odd characters, and the sign-in machinery, however it is written', () => {
    // Found by a read: a return to the provider's callback counted a failed sign-in against the office's address,
    // audited under the person who had just signed in; to /console/sign-in/oidc it ended the session just made.
    for (const elsewhere of [
      undefined,
      'https://example.com/console',
      '//example.com/console',
      '/console/',
      '/consoles',
      '/console/fundings\u0000x',
      '/console\\fundings',
      '/console/oidc/callback',
      '/console/oidc/callback?code=x&state=y',
      '/console/OIDC/Callback',
      '/console/oidc/callback/',
      '/console/%6Fidc/callback',
      '/console/sign-in',
      '/console/sign-in?return=/console',
      '/console/sign-in/oidc',
      '/console/Sign-In/oidc',
      '/console/sign-out',
      '/console/live/home',
      '/console/%E0%A4%A',
      // Dot segments, which a browser resolves before it asks (found by a second read).
      '/console/fundings/../oidc/callback',
      '/console/x/%2e%2e/sign-in/oidc',
      '/console/x/%2E%2E/sign-out',
      '/console/./live/home',
      '/console/fundings/..',
    ])
      expect(safeReturn(elsewhere), String(elsewhere)).toBe('/console');
  });
});
