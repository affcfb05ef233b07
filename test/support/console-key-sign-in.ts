// A console session signed in with an ops key, as the sign-in page's form does (its form first, for the CSRF cookie):
// for a test that needs a session and is not about signing in.
import { expect } from 'vitest';

/** Signs in at `base` with `key`; answers the session cookie as a browser sends it back (`name=value`). */
export async function consoleSessionWithKey(base: string, key: string): Promise<string> {
  const form = await fetch(`${base}/console/sign-in`);
  await form.arrayBuffer();
  const pre = form.headers
    .getSetCookie()
    .find((cookie) => cookie.startsWith('walletflow_console_pre='))!
    .split(';')[0]!;
  const signedIn = await fetch(`${base}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: pre, 'content-type': 'application/x-www-form-urlencoded', origin: base },
    body: `_csrf=${pre.split('=')[1]}&return=%2Fconsole&key=${encodeURIComponent(key)}`,
  });
  await signedIn.arrayBuffer();
  expect(signedIn.status).toBe(200);
  return signedIn.headers
    .getSetCookie()
    .find((cookie) => cookie.startsWith('walletflow_console='))!
    .split(';')[0]!;
}
