// SANDBOX_PORT: absent or empty is the contract's default 4010, never a random port.
import { describe, expect, it } from 'vitest';
import { sandboxPortFrom } from '../../sandbox/server.ts';

describe('SANDBOX_PORT', () => {
  it('defaults to 4010 when absent or empty, and takes a port number', () => {
    expect(sandboxPortFrom({})).toBe(4010);
    expect(sandboxPortFrom({ SANDBOX_PORT: '' })).toBe(4010);
    expect(sandboxPortFrom({ SANDBOX_PORT: '  ' })).toBe(4010);
    expect(sandboxPortFrom({ SANDBOX_PORT: '4011' })).toBe(4011);
    expect(sandboxPortFrom({ SANDBOX_PORT: '0' })).toBe(0);
  });

  it('stops start-up, naming the variable, for anything else', () => {
    for (const value of ['x', '-1', '65536', '40.5', '1e3']) {
      expect(() => sandboxPortFrom({ SANDBOX_PORT: value }), value).toThrow(/SANDBOX_PORT must be a port number/);
    }
  });
});
