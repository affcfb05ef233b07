// HTML escaping for server-rendered pages (the API's landing and connect pages, the sandbox's
// pages): the one helper every page uses for a value it puts in text or a quoted attribute.

const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * The value with & < > " ' replaced by entities, in one pass (an & already in the value is escaped
 * too, never taken for an entity). Safe in element text and in a double- or single-quoted
 * attribute value; not in an unquoted attribute, a URL scheme, a script or a style.
 */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => escapes[char] ?? char);
}
