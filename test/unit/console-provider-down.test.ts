// Whether a failed exchange with the identity provider was the provider away (a 503 to the person, not counted as a
// failed sign-in) or an answer that refused the sign-in: by the provider's own words too, in its token answer.
import * as oidc from 'openid-client';
import { describe, expect, it } from 'vitest';
import { providerUnavailable } from '../../api/console/sign-in.ts';

/** The token endpoint's error answer as openid-client throws it: a JSON body with `error`, and its status. */
const tokenAnswer = (status: number, error: string) =>
  new oidc.ResponseBodyError('server responded with an error in the response body', {
    cause: { error },
    response: new Response(JSON.stringify({ error }), { status }),
  });

describe('an identity provider that is down, told apart from one that refuses', () => {
  it('is down when it says so in its token answer (temporarily_unavailable, server_error), whatever the status', () => {
    expect(providerUnavailable(tokenAnswer(400, 'temporarily_unavailable'))).toBe(true);
    expect(providerUnavailable(tokenAnswer(400, 'server_error'))).toBe(true);
    expect(providerUnavailable(tokenAnswer(503, 'invalid_grant'))).toBe(true);
  });

  it('refuses the sign-in with any other error of a 4xx answer', () => {
    for (const error of ['invalid_grant', 'access_denied', 'invalid_client'])
      expect(providerUnavailable(tokenAnswer(400, error)), error).toBe(false);
  });
});
