// Every row of a read that pages by a key (keyset pagination: the next page starts after the last
// row's key), taken one at a time and read a page at a time, the next page only once the rows
// before it were taken. What a streamed report (api/http/csv-stream.ts) reads its rows from: a
// reader that stops taking (a client that stopped reading) holds one page, and one that is closed
// (return()) reads nothing more.

/** The rows `readPage` gives, page after page of `pageSize`, until a page comes back short. */
export async function* keysetRows<Row, Key>(
  readPage: (after: Key | undefined, limit: number) => Promise<readonly Row[]>,
  keyOf: (row: Row) => Key,
  pageSize: number,
): AsyncGenerator<Row> {
  let after: Key | undefined;
  for (;;) {
    const page = await readPage(after, pageSize);
    yield* page;
    if (page.length < pageSize) return;
    after = keyOf(page.at(-1)!);
  }
}
