// A webhook endpoint's address as people are shown it: a user name, a password, query values and
// a fragment can be credentials (`https://user:pass@host/in?token=…`), so they are left out; the
// scheme, host, port and path say which endpoint it is.

/** `url` with any user name, password and query values masked and its fragment dropped. */
export function maskedWebhookUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username || parsed.password) {
      parsed.username = parsed.username ? '***' : '';
      parsed.password = parsed.password ? '***' : '';
    }
    for (const name of [...new Set(parsed.searchParams.keys())]) parsed.searchParams.set(name, '…');
    parsed.hash = '';
    return parsed.toString();
  } catch {
    return '(not a URL)';
  }
}
