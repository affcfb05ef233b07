// lib/html.ts: the one HTML escaper of the API's and the sandbox's pages.
import { describe, expect, it } from 'vitest';
import { escapeHtml } from '../../lib/html.ts';

describe('escapeHtml', () => {
  it.each([
    ['&', '&amp;'],
    ['<', '&lt;'],
    ['>', '&gt;'],
    ['"', '&quot;'],
    ["'", '&#39;'],
  ])('escapes %s', (char, entity) => {
    expect(escapeHtml(char)).toBe(entity);
  });

  it('escapes every occurrence, in one pass (an entity in the input is escaped, not kept)', () => {
    expect(escapeHtml(`<a href="x" title='y'>&amp;</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;',
    );
    expect(escapeHtml('<script>alert(1)</script>')).toBe('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('leaves everything else as it is', () => {
    for (const text of ['', 'Hello, Ana', 'PHP 1,000.50 · KYC1', 'Señora Dela Cruz', '日本語 🙂', 'a=b;c/d\\e`f']) {
      expect(escapeHtml(text)).toBe(text);
    }
  });

  it('takes strings only: anything else is a type error, and throws rather than being rendered', () => {
    // @ts-expect-error a number is not a string
    expect(() => escapeHtml(42)).toThrow(TypeError);
    // @ts-expect-error nor is a missing value
    expect(() => escapeHtml(undefined)).toThrow(TypeError);
  });
});
