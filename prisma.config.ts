// Prisma CLI configuration (used by `prisma generate`; migrations run through cli/migrate.ts).
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
});
