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

  it('is busy, not refusing, when it answers 429 (a burst of sign-ins at nine): with its error body or a plain one', () => {
    expect(providerUnavailable(tokenAnswer(429, 'too_many_requests'))).toBe(true);
    // As openid-client throws a status it does not expect with a body that is no OAuth error.
    const plain = Object.assign(
      new oidc.ClientError('unexpected HTTP response status code', {
        cause: new Response('slow down', { status: 429 }),
      }),
      { code: 'OAUTH_RESPONSE_IS_NOT_CONFORM' },
    );
    expect(providerUnavailable(plain)).toBe(true);
  });

  it('refuses the sign-in with any other error of a 4xx answer', () => {
    for (const error of ['invalid_grant', 'access_denied', 'invalid_client'])
      expect(providerUnavailable(tokenAnswer(400, error)), error).toBe(false);
  });
});
