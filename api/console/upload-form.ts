// A console form that carries a file (multipart/form-data), read as a stream (busboy) and bounded:
// one file, a few short fields, the file at most `fileBytes`. The router's CSRF check cannot read
// such a body (console-auth.ts lets a multipart request through only to the routes that read it
// with this), so the check is made here, fail-closed: the session's token must arrive as the
// `_csrf` field BEFORE the file (the forms put it first), else the file is never handed on and the
// request is refused. The fields that came before the file are what the handler gets: a handler
// that starts acting while the file still streams in cannot wait for later ones, so forms put the
// file last; anything after it is read and dropped.
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type { Request } from 'express';
import { sameToken } from '../../access/console-sessions.ts';

export interface UploadedFile {
  /** The file's name on the person's computer (never a path). */
  filename: string;
  mimeType: string;
  /** Its bytes as they arrive; ends early, `truncated`, past the limit. */
  stream: Readable & { truncated?: boolean };
}

export interface UploadFormOptions<T> {
  /** The session's CSRF token: the form's `_csrf` field must be this, before the file. */
  csrfToken: string;
  /** The name of the file's input. */
  fileField: string;
  limits: { fileBytes: number; fields: number; fieldBytes: number };
  /**
   * Called once, when the file starts to arrive, with the fields sent before it: it must read the
   * stream to its end (or resume it), or the form never finishes.
   */
  onFile(fields: ReadonlyMap<string, string>, file: UploadedFile): Promise<T>;
}

export type UploadFormOutcome<T> =
  /** The file was handed to `onFile`: its answer. */
  | { kind: 'read'; fields: ReadonlyMap<string, string>; result: T }
  /** A valid form without a file (the file input was left empty). */
  | { kind: 'no-file'; fields: ReadonlyMap<string, string> }
  /** No valid CSRF token before the file (or at all): nothing was handed on. */
  | { kind: 'csrf' }
  /** Not a multipart form, too many parts, or broken off: nothing was handed on. */
  | { kind: 'malformed'; message: string };

/**
 * Reads the request's form; `onFile`'s own errors (a store that failed) are thrown, so the
 * console's error handler answers them. After a refusal the rest of the body is left unread and
 * the connection is closed behind the answer (`Connection: close` on `res`).
 */
export function readUploadForm<T>(req: Request, options: UploadFormOptions<T>): Promise<UploadFormOutcome<T>> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        limits: {
          files: 1,
          fields: options.limits.fields,
          parts: options.limits.fields + 1,
          fieldSize: options.limits.fieldBytes,
          fieldNameSize: 100,
          fileSize: options.limits.fileBytes,
        },
      });
    } catch {
      resolve({ kind: 'malformed', message: 'this is not a form with a file (multipart/form-data)' });
      return;
    }
    const fields = new Map<string, string>();
    let handedOn: { fields: ReadonlyMap<string, string>; work: Promise<T> } | undefined;
    let settled = false;
    let tooMany = false;

    const stopReading = () => {
      req.unpipe(parser);
      parser.removeAllListeners('file');
      parser.on('file', (_name, stream) => stream.resume());
    };
    const settle = (outcome: UploadFormOutcome<T> | Error) => {
      if (settled) return;
      settled = true;
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const refuse = (outcome: Extract<UploadFormOutcome<T>, { kind: 'csrf' | 'malformed' }>) => {
      stopReading();
      req.res?.setHeader('Connection', 'close');
      settle(outcome);
    };
    const csrfValid = () => sameToken(options.csrfToken, fields.get('_csrf'));

    parser.on('field', (name, value, info) => {
      if (handedOn || settled) return;
      if (info.nameTruncated || info.valueTruncated) {
        refuse({ kind: 'malformed', message: `the field ${name.slice(0, 40)} is longer than this form allows` });
        return;
      }
      // The first value of a name counts: a second `_csrf` cannot replace the first.
      if (!fields.has(name)) fields.set(name, value);
    });
    parser.on('file', (name, stream, info) => {
      if (settled || handedOn || name !== options.fileField) {
        stream.resume();
        return;
      }
      if (!csrfValid()) {
        stream.resume();
        refuse({ kind: 'csrf' });
        return;
      }
      if (tooMany) {
        stream.resume();
        refuse({ kind: 'malformed', message: 'the form has more fields than it should' });
        return;
      }
      // An empty file input still sends its part, with no file name.
      if (!info.filename) {
        stream.resume();
        return;
      }
      const before = new Map(fields);
      handedOn = {
        fields: before,
        work: options.onFile(before, { filename: info.filename, mimeType: info.mimeType, stream }),
      };
      // Its outcome is taken at the end of the form; a failure is not left unhandled meanwhile, and the file is read to
      // its end after it (onFile may fail before it reads: the form's end waits for the file's, which an unread stream
      // never reaches, and no answer came).
      handedOn.work.catch(() => stream.resume());
    });
    const onLimit = () => {
      if (!handedOn) tooMany = true;
    };
    parser.on('fieldsLimit', onLimit);
    parser.on('partsLimit', onLimit);
    parser.on('error', (error: Error) => {
      req.unpipe(parser);
      if (!handedOn) {
        refuse({ kind: 'malformed', message: `the form could not be read (${error.message})` });
        return;
      }
      // The file's stream ended with the error: onFile says what it made of it.
      void handedOn.work.then(
        (result) => settle({ kind: 'read', fields: handedOn!.fields, result }),
        (failure: unknown) => settle(failure instanceof Error ? failure : new Error(String(failure))),
      );
    });
    parser.on('close', () => {
      if (handedOn) {
        void handedOn.work.then(
          (result) => settle({ kind: 'read', fields: handedOn!.fields, result }),
          (failure: unknown) => settle(failure instanceof Error ? failure : new Error(String(failure))),
        );
        return;
      }
      if (!csrfValid()) settle({ kind: 'csrf' });
      else if (tooMany) settle({ kind: 'malformed', message: 'the form has more fields than it should' });
      else settle({ kind: 'no-file', fields });
    });
    // A person who goes away mid-upload: the file's stream ends with an error, and the form with it.
    req.on('close', () => {
      if (!req.complete) parser.destroy(new Error('the upload was broken off'));
    });
    req.pipe(parser);
  });
}
