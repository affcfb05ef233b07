// A webhook endpoint's address as it is shown, in the console and by the ops API (every view but
// the answer to its creation, which goes to the admin who sent it): a user name, a password, query
// values and a fragment can be credentials (`https://user:pass@host/in?token=…`), so they are
// masked; the scheme, host, port, path and the query's names say which endpoint it is, and are
// kept as stored (as text: not re-serialized, so the host's case or an escape stays as registered).
// Deliveries go to the address as stored.

/**
 * The parts of an absolute URL as text: scheme and `//`, user information (up to the last `@`), authority, path, query
 * (the fragment is dropped).
 */
const urlParts = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)(?:([^/?#]*)@)?([^/?#]*)([^?#]*)(?:\?([^#]*))?(?:#.*)?$/s;

const maskedQuery = (query: string) =>
  query
    .split('&')
    .map((pair) => (pair === '' ? '' : `${pair.split('=')[0]}=…`))
    .join('&');

/**
 * `url` with its user name and password as `***`, each query value as `…` and its fragment dropped; the rest as stored.
 */
export function maskedWebhookUrl(url: string): string {
  if (!URL.canParse(url)) return '(not a URL)';
  const parts = urlParts.exec(url);
  // A backslash, a space or a control character is read otherwise by URL parsers than by the
  // pattern: such an address is shown as the parser reads it, masked the same way.
  if (!parts || /[\\\s\p{Cc}]/u.test(url)) {
    const parsed = new URL(url);
    if (parsed.username) parsed.username = '***';
    if (parsed.password) parsed.password = '***';
    const query = parsed.search.slice(1);
    parsed.search = '';
    parsed.hash = '';
    return `${parsed.toString()}${query ? `?${maskedQuery(query)}` : ''}`;
  }
  const [, scheme = '', userInfo, authority = '', path = '', query] = parts;
  const user = userInfo === undefined ? '' : `${userInfo.includes(':') ? '***:***' : '***'}@`;
  return `${scheme}${user}${authority}${path}${query === undefined ? '' : `?${maskedQuery(query)}`}`;
}
