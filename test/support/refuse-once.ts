// A table whose next insert PostgreSQL refuses, once, as it refuses a connection past its limit
// (SQLSTATE 53300, "too many clients"): a trigger raises it, counted by a sequence (outside any
// transaction, so the count stands though the refused statement's transaction rolls back). What a
// route does when a statement of its is refused under load, after an earlier one of it ran.
import { randomUUID } from 'node:crypto';
import type { Database } from '../../lib/database.ts';

/** Arms the refusal of `table`'s next insert; the function it answers takes the trigger away. */
export async function refuseNextInsert(database: Database, table: string): Promise<() => Promise<void>> {
  const name = `refuse_${randomUUID().replaceAll('-', '')}`;
  await database.$executeRawUnsafe(`CREATE SEQUENCE ${name}`);
  await database.$executeRawUnsafe(`
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF nextval('${name}') = 1 THEN
        RAISE EXCEPTION 'sorry, too many clients already' USING ERRCODE = '53300';
      END IF;
      RETURN NEW;
    END $$`);
  await database.$executeRawUnsafe(
    `CREATE TRIGGER ${name} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`,
  );
  return async () => {
    await database.$executeRawUnsafe(`DROP TRIGGER ${name} ON ${table}`);
    await database.$executeRawUnsafe(`DROP FUNCTION ${name}()`);
    await database.$executeRawUnsafe(`DROP SEQUENCE ${name}`);
  };
}
