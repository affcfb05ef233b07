// Free text a person writes that walletflow stores, audits and shows to people (a resolution's note, an adjustment's
// reason, a batch's name): trimmed, bounded, and well-formed text only. PostgreSQL refuses a NUL in text (a 500 where
// a 400 is due), a terminal obeys ESC, and half of a surrogate pair is no character at all (stored as U+FFFD).
import { z } from 'zod';

/** Control characters other than tab and line breaks. */
const hasControlCharacter = (text: string) =>
  [...text].some((char) => {
    const code = char.codePointAt(0) ?? 0;
    return (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f;
  });
/** Half of a surrogate pair without its other half. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether `text` is plain: no control character but tab and line breaks, no broken unicode. */
export const isPlainText = (text: string): boolean => !hasControlCharacter(text) && !loneSurrogate.test(text);

/**
 * A field of free text: `field` names it in the messages, `empty` says what it must say when it is blank, `max` bounds
 * it in characters (the column's length).
 */
export const plainTextSchema = (field: string, { empty, max }: { empty: string; max: number }) =>
  z
    .string({ error: `${field} must be a string` })
    .trim()
    .min(1, `${field} must ${empty}`)
    .max(max, `${field} must be at most ${max} characters`)
    .refine(isPlainText, `${field} must be plain text (no control characters or broken unicode)`);
