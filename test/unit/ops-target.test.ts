// Which ops API the CLI talks to (cli/ops-target.ts): the ops key goes in every request's Authorization header, so
// plain http is refused unless the API is on this machine.
import { describe, expect, it } from 'vitest';
import { resolveApiBase } from '../../cli/ops-target.ts';
import { CliInputError } from '../../cli/exit-codes.ts';

describe('the CLI’s ops API address', () => {
  it('refuses plain http to another machine, naming why; https anywhere and http to this machine are taken', () => {
    // A name under .localhost too: the system's resolver may ask the network for it.
    for (const address of [
      'http://walletflow.example.com',
      'http://10.0.0.5:3000',
      'http://[2001:db8::1]:3000/',
      'http://api.localhost',
    ]) {
      // Before: taken, and an approve key crossed the network in clear text.
      expect(() => resolveApiBase(address, {}), address).toThrow(CliInputError);
      expect(() => resolveApiBase(address, {}), address).toThrow(/clear text/);
    }
    expect(() => resolveApiBase(undefined, { WALLETFLOW_API_URL: 'http://walletflow.example.com' })).toThrow(
      /WALLETFLOW_API_URL\): plain http sends the ops key in clear text/,
    );
    expect(resolveApiBase('https://walletflow.example.com/', {})).toBe('https://walletflow.example.com');
    for (const address of ['http://127.0.0.1:3000', 'http://localhost:3000', 'http://[::1]:3000'])
      expect(resolveApiBase(address, {}), address).toBe(address);
    expect(resolveApiBase(undefined, { PORT: '4100' })).toBe('http://127.0.0.1:4100');
  });
});
